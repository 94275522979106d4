/* Baseline for perf/compare.sh: MPI_Allreduce (float32 sum) over a size sweep, timed the way
 * all_reduce_perf times weft (warm-up, then n back-to-back iterations; time averaged over ranks),
 * printing size, time in microseconds and busbw (2(n-1)/n x bytes / time). Like all_reduce_perf
 * (and nccl-tests), successive calls walk through the whole MAX_BYTES allocation, so a size that
 * fits in cache is not timed from buffers that one call leaves warm for the next.
 *   mpirun -np 2 ./mpi_allreduce_bench MIN_BYTES MAX_BYTES ITERS WARMUP [FACTOR]
 * FACTOR (default 2) is the step between sizes, like all_reduce_perf -f. MAX_BYTES 0 times
 * MPI_Barrier instead (perf/small_messages.sh, COLL=barrier; weft's side is perf/barrier_latency).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, nranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  size_t minBytes = argc > 1 ? strtoull(argv[1], NULL, 10) : 8;
  size_t maxBytes = argc > 2 ? strtoull(argv[2], NULL, 10) : 64 << 20;
  int iters = argc > 3 ? atoi(argv[3]) : 20;
  int warmup = argc > 4 ? atoi(argv[4]) : 5;
  size_t factor = argc > 5 ? strtoull(argv[5], NULL, 10) : 2;
  if (factor < 2) factor = 2;
  char* send = malloc(maxBytes);
  char* recv = malloc(maxBytes);
  /* Both buffers are written once here, so no timed call pays for first-touch page faults. */
  for (size_t i = 0; i < maxBytes / sizeof(float); ++i) {
    ((float*)send)[i] = (float)(rank + i % 7);
    ((float*)recv)[i] = 0.0f;
  }
  if (rank == 0) printf("# size_bytes time_us busbw_GBps\n");
  if (maxBytes == 0) {
    for (int i = 0; i < warmup; ++i) MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    for (int i = 0; i < iters; ++i) MPI_Barrier(MPI_COMM_WORLD);
    double mine = (MPI_Wtime() - start) / iters, sum = 0;
    MPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("0 %.3f 0\n", sum / nranks * 1e6);
  }
  for (size_t bytes = minBytes; maxBytes > 0 && bytes <= maxBytes; bytes *= factor) {
    int count = (int)(bytes / sizeof(float));
    size_t steps = maxBytes / bytes;
    for (int i = 0; i < warmup; ++i) {
      size_t shift = bytes * ((size_t)i % steps);
      MPI_Allreduce(send + shift, recv + shift, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    for (int i = 0; i < iters; ++i) {
      size_t shift = bytes * ((size_t)i % steps);
      MPI_Allreduce(send + shift, recv + shift, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
    double mine = (MPI_Wtime() - start) / iters, sum = 0;
    MPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    double seconds = sum / nranks;
    double busbw = (double)bytes / seconds / 1e9 * 2.0 * (nranks - 1) / nranks;
    if (rank == 0) printf("%zu %.2f %.3f\n", bytes, seconds * 1e6, busbw);
    fflush(stdout);
  }
  free(send);
  free(recv);
  MPI_Finalize();
  return 0;
}
