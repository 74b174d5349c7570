// Per-call times of AllReduce (float32 sum) through Blink's C API and through
// PMPI_Allreduce, each call alone: a barrier, a pause (so that a token bucket on the
// links refills, as between blink_perf's sizes), a barrier, the call; its time is the
// slowest rank's. Blink and PMPI alternate call by call (the order swapped every other
// call), so both see the same load; the minimum over many calls is what a call costs
// when the machine lets it run, the median what it costs under the load there was.
//
// Usage: multihost_call_times [--calls N] [--pause-us US] SIZE...
// Prints CSV: impl,bytes,calls,min_us,median_us,wrong (wrong: elements of Blink's last
// result that differ from PMPI's; the inputs are small integers, so every order of
// summation gives the same floats).
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "blink/blink.h"

static int ascending(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static size_t parseSize(const char* text) {
  char* end = NULL;
  size_t n = strtoull(text, &end, 10);
  if (*end == 'K' || *end == 'k') n <<= 10;
  if (*end == 'M' || *end == 'm') n <<= 20;
  return n;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int calls = 100, pause_us = 3000, first_size = 1;
  while (first_size + 1 < argc && strncmp(argv[first_size], "--", 2) == 0) {
    if (strcmp(argv[first_size], "--calls") == 0) calls = atoi(argv[first_size + 1]);
    if (strcmp(argv[first_size], "--pause-us") == 0) pause_us = atoi(argv[first_size + 1]);
    first_size += 2;
  }
  if (calls < 1 || first_size >= argc) {
    if (rank == 0)
      fprintf(stderr, "usage: multihost_call_times [--calls N] [--pause-us US] SIZE...\n");
    MPI_Finalize();
    return 2;
  }
  blinkComm_t comm;
  if (blinkCommInitFromMPI(&comm, MPI_COMM_WORLD) != blinkSuccess) {
    fprintf(stderr, "blinkCommInitFromMPI: %s\n", blinkGetLastError());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  double* times[2] = {malloc(sizeof(double) * (size_t)calls),
                      malloc(sizeof(double) * (size_t)calls)};
  if (rank == 0) printf("impl,bytes,calls,min_us,median_us,wrong\n");
  for (int s = first_size; s < argc; ++s) {
    const size_t count = parseSize(argv[s]) / sizeof(float);
    float* in = malloc(count * sizeof(float));
    float* out[2] = {malloc(count * sizeof(float)), malloc(count * sizeof(float))};
    for (size_t i = 0; i < count; ++i) in[i] = (float)((size_t)rank + i % 7);
    for (int c = -2; c < calls; ++c) {  // two warm-up rounds (the first plans the size)
      for (int k = 0; k < 2; ++k) {
        const int impl = (c & 1) ? 1 - k : k;  // 0: Blink, 1: PMPI
        PMPI_Barrier(MPI_COMM_WORLD);
        usleep((useconds_t)pause_us);
        PMPI_Barrier(MPI_COMM_WORLD);
        const double start = MPI_Wtime();
        if (impl == 0) {
          if (blinkAllReduce(in, out[0], count, blinkFloat32, blinkSum, comm) != blinkSuccess) {
            fprintf(stderr, "blinkAllReduce: %s\n", blinkGetLastError());
            MPI_Abort(MPI_COMM_WORLD, 1);
          }
        } else {
          PMPI_Allreduce(in, out[1], (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        }
        const double mine = MPI_Wtime() - start;
        double slowest = 0;
        PMPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (c >= 0) times[impl][c] = slowest * 1e6;
      }
    }
    long long wrong = 0, any = 0;
    for (size_t i = 0; i < count; ++i) wrong += out[0][i] != out[1][i];
    PMPI_Allreduce(&wrong, &any, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0) {
      for (int impl = 0; impl < 2; ++impl) {
        qsort(times[impl], (size_t)calls, sizeof(double), ascending);
        printf("%s,%zu,%d,%.1f,%.1f,%lld\n", impl == 0 ? "blink" : "mpi", count * sizeof(float),
               calls, times[impl][0], times[impl][calls / 2], impl == 0 ? any : 0);
      }
      fflush(stdout);
    }
    free(in);
    free(out[0]);
    free(out[1]);
  }
  free(times[0]);
  free(times[1]);
  blinkCommDestroy(comm);
  MPI_Finalize();
  return 0;
}
