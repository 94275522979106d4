/* The public header from plain C: two ranks as pthreads initialise with a config, all-reduce
 * blocking and non-blocking, hit an argument error, and shut down. Exits non-zero on failure. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "weft/weft.h"

#define NRANKS 2
#define COUNT 1000

static weftUniqueId gId;
static int gFailures[NRANKS];

#define EXPECT(rank, cond)                                                        \
  do {                                                                            \
    if (!(cond)) {                                                                \
      fprintf(stderr, "rank %d: %s:%d: %s failed\n", rank, __FILE__, __LINE__, #cond); \
      gFailures[rank]++;                                                          \
    }                                                                             \
  } while (0)

static void* rankMain(void* arg) {
  int rank = (int)(size_t)arg;
  weftConfig_t config = WEFT_CONFIG_INITIALIZER;
  config.commName = "c-api-test";
  weftComm_t comm = NULL;
  EXPECT(rank, weftCommInitRankConfig(&comm, NRANKS, gId, rank, &config) == weftSuccess);
  if (comm == NULL) return NULL;

  float data[COUNT];
  for (int i = 0; i < COUNT; ++i) data[i] = (float)(rank + i);
  EXPECT(rank, weftAllReduce(data, data, COUNT, weftFloat32, weftSum, comm, NULL) == weftSuccess);
  EXPECT(rank, data[10] == (float)(0 + 10 + 1 + 10));

  weftRequest_t request = NULL;
  int out[4] = {0};
  int in[4] = {rank, rank, rank, rank};
  EXPECT(rank, weftAllReduce(in, out, 4, weftInt32, weftMax, comm, &request) == weftSuccess);
  EXPECT(rank, weftWait(&request, 10000) == weftSuccess);
  EXPECT(rank, request == NULL && out[3] == NRANKS - 1);

  EXPECT(rank, weftAllReduce(NULL, out, 4, weftInt32, weftSum, comm, NULL) == weftInvalidArgument);
  EXPECT(rank, strstr(weftGetLastError(comm), "sendbuff") != NULL);

  int count = 0, me = -1;
  EXPECT(rank, weftCommCount(comm, &count) == weftSuccess && count == NRANKS);
  EXPECT(rank, weftCommUserRank(comm, &me) == weftSuccess && me == rank);
  EXPECT(rank, weftBarrier(comm, NULL) == weftSuccess);
  EXPECT(rank, weftCommDestroy(comm) == weftSuccess);
  return NULL;
}

int main(void) {
  int version = 0;
  if (weftGetVersion(&version) != weftSuccess || version != WEFT_VERSION_CODE) return 1;
  if (weftGetUniqueId(&gId) != weftSuccess) {
    fprintf(stderr, "weftGetUniqueId: %s\n", weftGetLastError(NULL));
    return 1;
  }
  pthread_t threads[NRANKS];
  for (size_t r = 0; r < NRANKS; ++r) pthread_create(&threads[r], NULL, rankMain, (void*)r);
  for (int r = 0; r < NRANKS; ++r) pthread_join(threads[r], NULL);
  int failures = 0;
  for (int r = 0; r < NRANKS; ++r) failures += gFailures[r];
  printf("c api test: %d failures\n", failures);
  return failures == 0 ? 0 : 1;
}
