/* A stand-in libcuda.so.1 that records that it was loaded: its constructor creates the file
 * named by WEFT_TEST_DRIVER_SPY. It defines no driver entry points, so a runtime that loads it
 * fails to start, which the test expects. */
#include <stdio.h>
#include <stdlib.h>

__attribute__((constructor)) static void recordLoad(void) {
  const char* path = getenv("WEFT_TEST_DRIVER_SPY");
  if (path == NULL) return;
  FILE* marker = fopen(path, "w");
  if (marker != NULL) fclose(marker);
}
