/* A plain MPI benchmark (only mpi.h) of the small, latency-bound calls a training
 * job's controller makes (Horovod's: bit-vector MPI_Allreduce with MPI_BAND / MPI_BOR
 * on MPI_LONG_LONG_INT, MPI_Allgatherv of short response lists, MPI_Barrier). Each
 * call is timed as the slowest rank's average over ITERS calls after ITERS/10
 * warm-ups, and in the best of ten chunks of ITERS/10 calls. Run it natively and
 * under LD_PRELOAD of libblink_mpi.so (perf/run_small_calls.sh). Rank 0 prints CSV:
 * call,bytes,time_us,best_us.
 *
 * Usage: mpi_small_calls [-n ITERS] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_iters = 20000;

/* Times `BODY` in CHUNKS chunks of ITERS/CHUNKS calls after ITERS/10 warm-ups, each
 * chunk starting together on every rank and counted as its slowest rank's time.
 * MEAN: microseconds per call over all chunks; BEST: in the fastest chunk, which a
 * machine shared with other work disturbs least. */
enum { CHUNKS = 10 };
#define TIME_CALLS(BODY, MEAN, BEST)                                             \
  do {                                                                           \
    for (int w_ = 0; w_ < g_iters / 10; ++w_) BODY;                              \
    const int per_ = g_iters / CHUNKS;                                           \
    double sum_ = 0, best_ = 1e30;                                               \
    for (int c_ = 0; c_ < CHUNKS; ++c_) {                                        \
      PMPI_Barrier(MPI_COMM_WORLD);                                              \
      double t0_ = MPI_Wtime();                                                  \
      for (int i_ = 0; i_ < per_; ++i_) BODY;                                    \
      double mine_ = MPI_Wtime() - t0_, slowest_ = 0;                            \
      PMPI_Allreduce(&mine_, &slowest_, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD); \
      sum_ += slowest_;                                                          \
      if (slowest_ < best_) best_ = slowest_;                                    \
    }                                                                            \
    (MEAN) = sum_ * 1e6 / ((double)per_ * CHUNKS);                               \
    (BEST) = best_ * 1e6 / per_;                                                 \
  } while (0)

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "-n") && i + 1 < argc) {
      g_iters = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      printf("Usage: mpi_small_calls [-n ITERS]   (default 20000 calls per measurement)\n");
      return 0;
    } else {
      fprintf(stderr, "mpi_small_calls: bad argument '%s' (see --help)\n", argv[i]);
      return 2;
    }
  }
  if (g_iters < 10 * CHUNKS) {
    fprintf(stderr, "mpi_small_calls: ITERS must be at least %d\n", 10 * CHUNKS);
    return 2;
  }
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long long in[4] = {0x0f0f0f0f0f0f0f0fLL ^ rank, -1LL - rank, rank, 1LL << rank}, out[4];
  double t = 0, best = 0;
  if (rank == 0) printf("call,bytes,time_us,best_us\n");
  for (int words = 1; words <= 4; words *= 4) {
    TIME_CALLS(MPI_Allreduce(in, out, words, MPI_LONG_LONG_INT, MPI_BAND, MPI_COMM_WORLD), t, best);
    if (rank == 0) printf("allreduce_band,%d,%.3f,%.3f\n", words * 8, t, best);
    TIME_CALLS(MPI_Allreduce(in, out, words, MPI_LONG_LONG_INT, MPI_BOR, MPI_COMM_WORLD), t, best);
    if (rank == 0) printf("allreduce_bor,%d,%.3f,%.3f\n", words * 8, t, best);
  }
  /* Allgatherv: rank r sends 40 + 8 r bytes. */
  int* counts = (int*)malloc(sizeof(int) * (size_t)size);
  int* displs = (int*)malloc(sizeof(int) * (size_t)size);
  int total = 0;
  for (int r = 0; r < size; ++r) {
    counts[r] = 40 + 8 * r;
    displs[r] = total;
    total += counts[r];
  }
  char* send = (char*)calloc((size_t)counts[rank], 1);
  char* recv = (char*)calloc((size_t)total, 1);
  TIME_CALLS(
      MPI_Allgatherv(send, counts[rank], MPI_BYTE, recv, counts, displs, MPI_BYTE, MPI_COMM_WORLD),
      t, best);
  if (rank == 0) printf("allgatherv,%d,%.3f,%.3f\n", total, t, best);
  TIME_CALLS(MPI_Barrier(MPI_COMM_WORLD), t, best);
  if (rank == 0) printf("barrier,0,%.3f,%.3f\n", t, best);
  free(counts);
  free(displs);
  free(send);
  free(recv);
  MPI_Finalize();
  return 0;
}
