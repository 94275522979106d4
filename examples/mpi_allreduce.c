/* An MPI program that does its collectives with weft: MPI starts the ranks and hands weft the
 * unique id (weft/weft_mpi.h); weft then sums a buffer and MPI checks the result against its own
 * MPI_Allreduce. Run it with `mpirun -np 4 ./mpi_allreduce`. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "weft/weft.h"
#include "weft/weft_mpi.h"

enum { kCount = 1 << 16 };

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, nranks = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);

  weftComm_t comm;
  weftResult_t result = weftCommInitFromMPI(MPI_COMM_WORLD, &comm);
  if (result != weftSuccess) {
    fprintf(stderr, "rank %d: weftCommInitFromMPI failed: %s (%s)\n", rank,
            weftGetErrorString(result), weftGetLastError(NULL));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }

  float* mine = malloc(kCount * sizeof(float));
  float* byWeft = malloc(kCount * sizeof(float));
  float* byMpi = malloc(kCount * sizeof(float));
  for (int i = 0; i < kCount; ++i) mine[i] = (float)((rank + 1) * (i % 7));
  result = weftAllReduce(mine, byWeft, kCount, weftFloat32, weftSum, comm, NULL);
  MPI_Allreduce(mine, byMpi, kCount, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);

  int wrong = result != weftSuccess;
  for (int i = 0; i < kCount && !wrong; ++i) wrong = byWeft[i] != byMpi[i];
  int anyWrong = 0;
  MPI_Allreduce(&wrong, &anyWrong, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("%d ranks: weft's all-reduce of %d floats %s MPI's\n", nranks, kCount,
           anyWrong ? "DIFFERS FROM" : "matches");
  }

  free(mine);
  free(byWeft);
  free(byMpi);
  weftCommDestroy(comm);
  MPI_Finalize();
  return anyWrong ? 1 : 0;
}
