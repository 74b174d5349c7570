// Per-call times of one collective (float32, sum, root 0; AllReduce unless
// --collective says broadcast, reduce, allgather or reducescatter) through Blink's C API
// and through its PMPI_* counterpart, each call alone: a barrier, a pause (so that a token bucket
// on the links refills, as between blink_perf's sizes), a barrier, the call; its time is the
// slowest rank's. Blink and PMPI alternate call by call (the order swapped every other
// call), so both see the same load; the minimum over many calls is what a call costs
// when the machine lets it run, the median what it costs under the load there was.
//
// Usage: multihost_call_times [--calls N] [--pause-us US] [--gap-us US] [--collective C]
//                             [--control] SIZE...
// --gap-us: each rank sleeps US after the second barrier before its timed call (0 by
// default), as a training loop computes between its MPI calls: without it, a rank still
// in the barrier progresses MPI's connections, and Open MPI's root reads a Reduce that
// the senders started before it left the barrier (perf/README.md), which Blink's
// sockets leave in the kernel until the call.
// --control: the "blink" side makes the PMPI_* call too, on a duplicate of
// MPI_COMM_WORLD: the ratio of an A/A run, what the method itself favours.
// SIZE is the whole buffer, as in blink_perf: AllGather's output, ReduceScatter's input.
// Prints CSV: impl,bytes,calls,min_us,median_us,wrong (wrong: elements of Blink's last
// result that differ from PMPI's, on every rank that has one; the inputs are small
// integers, so every order of summation gives the same floats).
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

enum Collective { kAllReduce, kBroadcast, kReduce, kAllGather, kReduceScatter };
static const char* const kNames[] = {"allreduce", "broadcast", "reduce", "allgather",
                                     "reducescatter"};

// `count`: elements of the whole buffer; `size`: ranks.
static void callBlink(enum Collective c, float* in, float* out, size_t count, int size,
                      blinkComm_t comm) {
  const size_t block = count / (size_t)size;
  blinkResult_t r = blinkSuccess;
  switch (c) {
    case kAllReduce:
      r = blinkAllReduce(in, out, count, blinkFloat32, blinkSum, comm);
      break;
    case kBroadcast:
      r = blinkBroadcast(in, out, count, blinkFloat32, 0, comm);
      break;
    case kReduce:
      r = blinkReduce(in, out, count, blinkFloat32, blinkSum, 0, comm);
      break;
    case kAllGather:
      r = blinkAllGather(in, out, block, blinkFloat32, comm);
      break;
    case kReduceScatter:
      r = blinkReduceScatter(in, out, block, blinkFloat32, blinkSum, comm);
      break;
  }
  if (r != blinkSuccess) {
    fprintf(stderr, "blink %s: %s\n", kNames[c], blinkGetLastError());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

static void callMpiOn(enum Collective c, float* in, float* out, size_t count, int size,
                      MPI_Comm on) {
  const int n = (int)count, block = (int)(count / (size_t)size);
  switch (c) {
    case kAllReduce:
      PMPI_Allreduce(in, out, n, MPI_FLOAT, MPI_SUM, on);
      break;
    case kBroadcast: {  // the root's input is `in`, as Blink's out of place
      int rank = 0;
      PMPI_Comm_rank(on, &rank);
      if (rank == 0 && out != in) memcpy(out, in, count * sizeof(float));
      PMPI_Bcast(out, n, MPI_FLOAT, 0, on);
      break;
    }
    case kReduce:
      PMPI_Reduce(in, out, n, MPI_FLOAT, MPI_SUM, 0, on);
      break;
    case kAllGather:
      PMPI_Allgather(in, block, MPI_FLOAT, out, block, MPI_FLOAT, on);
      break;
    case kReduceScatter:
      PMPI_Reduce_scatter_block(in, out, block, MPI_FLOAT, MPI_SUM, on);
      break;
  }
}

static void callMpi(enum Collective c, float* in, float* out, size_t count, int size) {
  callMpiOn(c, in, out, count, size, MPI_COMM_WORLD);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int calls = 100, pause_us = 3000, gap_us = 0, first_size = 1, known = 1, control = 0;
  enum Collective collective = kAllReduce;
  while (first_size + 1 < argc && strncmp(argv[first_size], "--", 2) == 0) {
    if (strcmp(argv[first_size], "--calls") == 0) calls = atoi(argv[first_size + 1]);
    if (strcmp(argv[first_size], "--pause-us") == 0) pause_us = atoi(argv[first_size + 1]);
    if (strcmp(argv[first_size], "--gap-us") == 0) gap_us = atoi(argv[first_size + 1]);
    if (strcmp(argv[first_size], "--control") == 0) {  // a flag: no value
      control = 1;
      first_size += 1;
      continue;
    }
    if (strcmp(argv[first_size], "--collective") == 0) {
      known = 0;
      for (int c = kAllReduce; c <= kReduceScatter; ++c) {
        if (strcmp(argv[first_size + 1], kNames[c]) == 0) {
          collective = (enum Collective)c;
          known = 1;
        }
      }
    }
    first_size += 2;
  }
  if (calls < 1 || gap_us < 0 || first_size >= argc || !known) {
    if (rank == 0)
      fprintf(stderr,
              "usage: multihost_call_times [--calls N] [--pause-us US] [--gap-us US] [--collective "
              "allreduce|broadcast|reduce|allgather|reducescatter] [--control] SIZE...\n");
    MPI_Finalize();
    return 2;
  }
  blinkComm_t comm;
  if (blinkCommInitFromMPI(&comm, MPI_COMM_WORLD) != blinkSuccess) {
    fprintf(stderr, "blinkCommInitFromMPI: %s\n", blinkGetLastError());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Comm control_comm = MPI_COMM_NULL;  // --control: PMPI on a duplicate in Blink's place
  PMPI_Comm_dup(MPI_COMM_WORLD, &control_comm);
  double* times[2] = {malloc(sizeof(double) * (size_t)calls),
                      malloc(sizeof(double) * (size_t)calls)};
  if (rank == 0) printf("impl,bytes,calls,min_us,median_us,wrong\n");
  for (int s = first_size; s < argc; ++s) {
    // Whole blocks per rank (AllGather and ReduceScatter split the buffer), one at least.
    size_t count = parseSize(argv[s]) / sizeof(float) / (size_t)size * (size_t)size;
    if (count == 0) count = (size_t)size;
    const size_t block = count / (size_t)size;
    const size_t in_count = collective == kAllGather ? block : count;
    const size_t out_count = collective == kReduceScatter ? block : count;
    float* in = malloc((in_count + 1) * sizeof(float));
    float* out[2] = {calloc(out_count + 1, sizeof(float)), calloc(out_count + 1, sizeof(float))};
    for (size_t i = 0; i < in_count; ++i) in[i] = (float)((size_t)rank + i % 7);
    for (int c = -2; c < calls; ++c) {  // two warm-up rounds (the first plans the size)
      for (int k = 0; k < 2; ++k) {
        const int impl = (c & 1) ? 1 - k : k;  // 0: Blink, 1: PMPI
        PMPI_Barrier(MPI_COMM_WORLD);
        usleep((useconds_t)pause_us);
        PMPI_Barrier(MPI_COMM_WORLD);
        if (gap_us > 0) usleep((useconds_t)gap_us);
        const double start = MPI_Wtime();
        if (impl == 0 && control) {
          callMpiOn(collective, in, out[0], count, size, control_comm);
        } else if (impl == 0) {
          callBlink(collective, in, out[0], count, size, comm);
        } else {
          callMpi(collective, in, out[1], count, size);
        }
        const double mine = MPI_Wtime() - start;
        double slowest = 0;
        PMPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (c >= 0) times[impl][c] = slowest * 1e6;
      }
    }
    long long wrong = 0, any = 0;
    if (collective != kReduce || rank == 0) {
      for (size_t i = 0; i < out_count; ++i) wrong += out[0][i] != out[1][i];
    }
    PMPI_Allreduce(&wrong, &any, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0) {
      for (int impl = 0; impl < 2; ++impl) {
        qsort(times[impl], (size_t)calls, sizeof(double), ascending);
        printf("%s,%zu,%d,%.2f,%.2f,%lld\n", impl == 0 ? "blink" : "mpi", count * sizeof(float),
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
  PMPI_Comm_free(&control_comm);
  MPI_Finalize();
  return 0;
}
