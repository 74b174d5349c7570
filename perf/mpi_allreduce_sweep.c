/* A plain MPI benchmark (only mpi.h, like OSU's osu_allreduce): MPI_Allreduce of
 * float sums over a size sweep, timed as nccl-tests does (barrier, n iterations,
 * the slowest rank's average), with five warm-up calls per size and buffers
 * allocated and touched once. Run it natively and under LD_PRELOAD of
 * libblink_mpi.so to compare the interposed path with the MPI library
 * (perf/run_interposer.sh). Rank 0 prints CSV: ranks,bytes,time_us,busbw_gbps,wrong.
 *
 * --overhead: instead, the cost of one 8-byte MPI_Allreduce on MPI_COMM_SELF
 * (time_us per call over 2e6 calls), so the difference between a native and a
 * preloaded run is the interposer's eligibility check plus its fallback.
 *
 * Usage: mpi_allreduce_sweep [-b MINBYTES] [-e MAXBYTES] [-n ITERS] [--overhead] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long parse_size(const char* s) {
  char* end = NULL;
  long v = strtol(s, &end, 10);
  if (end == s || v < 0) return -1;
  if (*end == 'K' || *end == 'k')
    v <<= 10, ++end;
  else if (*end == 'M' || *end == 'm')
    v <<= 20, ++end;
  else if (*end == 'G' || *end == 'g')
    v <<= 30, ++end;
  return *end == '\0' ? v : -1;
}

int main(int argc, char** argv) {
  long min_bytes = 1024, max_bytes = 64L << 20;
  int iters = 20, overhead = 0;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "-b") && i + 1 < argc)
      min_bytes = parse_size(argv[++i]);
    else if (!strcmp(argv[i], "-e") && i + 1 < argc)
      max_bytes = parse_size(argv[++i]);
    else if (!strcmp(argv[i], "-n") && i + 1 < argc)
      iters = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--overhead"))
      overhead = 1;
    else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      printf(
          "Usage: mpi_allreduce_sweep [-b MINBYTES] [-e MAXBYTES] [-n ITERS] [--overhead]\n"
          "  sizes take K/M/G suffixes (default 1K..64M, x2 steps, 20 iterations)\n"
          "  --overhead  time one 8-byte MPI_Allreduce on MPI_COMM_SELF (2e6 calls)\n");
      return 0;
    } else {
      fprintf(stderr, "mpi_allreduce_sweep: bad argument '%s' (see --help)\n", argv[i]);
      return 2;
    }
  }
  if (min_bytes < 4 || max_bytes < min_bytes || iters < 1) {
    fprintf(stderr, "mpi_allreduce_sweep: need 4 <= MINBYTES <= MAXBYTES and ITERS >= 1\n");
    return 2;
  }
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (overhead) {
    double in = 1.0, out = 0.0;
    const int calls = 2000000;
    for (int i = 0; i < 10000; ++i) MPI_Allreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_SELF);
    double t0 = MPI_Wtime();
    for (int i = 0; i < calls; ++i) MPI_Allreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_SELF);
    double per_call = (MPI_Wtime() - t0) / calls;
    if (rank == 0) printf("overhead_us_per_call,%.4f\n", per_call * 1e6);
    MPI_Finalize();
    return out == 1.0 ? 0 : 1;
  }
  size_t max_count = (size_t)max_bytes / sizeof(float);
  float* in = malloc(max_count * sizeof(float));
  float* out = malloc(max_count * sizeof(float));
  for (size_t i = 0; i < max_count; ++i) in[i] = (float)((i + (size_t)rank) % 7), out[i] = 0;
  if (rank == 0) printf("ranks,bytes,time_us,busbw_gbps,wrong\n");
  for (long bytes = min_bytes; bytes <= max_bytes; bytes *= 2) {
    int count = (int)(bytes / (long)sizeof(float));
    for (int w = 0; w < 5; ++w) MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int it = 0; it < iters; ++it)
      MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double t = (MPI_Wtime() - t0) / iters, slowest = 0;
    MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    long wrong = 0;
    for (int i = 0; i < count; ++i) {
      float want = 0;
      for (int r = 0; r < size; ++r) want += (float)(((size_t)i + (size_t)r) % 7);
      wrong += out[i] != want;
    }
    long all_wrong = 0;
    MPI_Allreduce(&wrong, &all_wrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    double busbw = (double)bytes / slowest / 1e9 * 2.0 * (size - 1) / size;
    if (rank == 0) printf("%d,%ld,%.2f,%.3f,%ld\n", size, bytes, slowest * 1e6, busbw, all_wrong);
  }
  free(in);
  free(out);
  MPI_Finalize();
  return 0;
}
