/* The smallest useful weft program: every rank contributes its rank number and all of them get
 * the sum. Run it with `weftrun -n 4 ./minimal` (or torchrun, mpirun, srun). */
#include <stdio.h>

#include "weft/weft.h"

#define CHECK(call)                                                                    \
  do {                                                                                 \
    weftResult_t result = (call);                                                      \
    if (result != weftSuccess) {                                                       \
      fprintf(stderr, "%s failed: %s (%s)\n", #call, weftGetErrorString(result),       \
              weftGetLastError(NULL));                                                 \
      return 1;                                                                        \
    }                                                                                  \
  } while (0)

int main(void) {
  weftComm_t comm;
  CHECK(weftCommInitFromEnv(&comm, NULL));
  int rank, nranks;
  CHECK(weftCommUserRank(comm, &rank));
  CHECK(weftCommCount(comm, &nranks));

  double mine = rank, sum = 0;
  CHECK(weftAllReduce(&mine, &sum, 1, weftFloat64, weftSum, comm, NULL));
  printf("rank %d of %d: sum of ranks = %g (expected %d)\n", rank, nranks, sum,
         nranks * (nranks - 1) / 2);

  CHECK(weftCommDestroy(comm));
  return sum == nranks * (nranks - 1) / 2 ? 0 : 1;
}
