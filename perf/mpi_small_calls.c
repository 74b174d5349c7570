/* A plain MPI benchmark (only mpi.h) of the small, latency-bound calls a training
 * job's controller makes (Horovod's: bit-vector MPI_Allreduce with MPI_BAND / MPI_BOR
 * on MPI_LONG_LONG_INT, MPI_Allgatherv of short response lists, MPI_Barrier). Each
 * call is timed as the slowest rank's average over ITERS calls after ITERS/10
 * warm-ups, and in the best of ten chunks of ITERS/10 calls. Run it natively and
 * under LD_PRELOAD of libblink_mpi.so (perf/run_small_calls.sh). Rank 0 prints CSV:
 * call,bytes,time_us,best_us.
 * With --both, each call is also made through its PMPI_* entry (the MPI library's
 * own, under the preload too), chunk by chunk alternated with the MPI_* one in the
 * same job (the order swapped every other chunk), so both see the same machine and
 * the same set-up; rank 0 then prints impl,call,bytes,time_us,best_us with impl
 * "blink" (MPI_*, interposed under the preload) and "mpi" (PMPI_*).
 *
 * Usage: mpi_small_calls [-n ITERS] [--both] */
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

/* --both: A (MPI_*) and B (PMPI_*) in alternated chunks, each as TIME_CALLS times. */
#define TIME_BOTH(A, B, MEAN, BEST)                                                \
  do {                                                                             \
    for (int w_ = 0; w_ < g_iters / 10; ++w_) {                                    \
      A;                                                                           \
      B;                                                                           \
    }                                                                              \
    const int per_ = g_iters / CHUNKS;                                             \
    double sum_[2] = {0, 0}, best_[2] = {1e30, 1e30};                              \
    for (int c_ = 0; c_ < CHUNKS; ++c_) {                                          \
      for (int k_ = 0; k_ < 2; ++k_) {                                             \
        const int impl_ = (c_ & 1) ? 1 - k_ : k_;                                  \
        PMPI_Barrier(MPI_COMM_WORLD);                                              \
        double t0_ = MPI_Wtime();                                                  \
        if (impl_ == 0) {                                                          \
          for (int i_ = 0; i_ < per_; ++i_) A;                                     \
        } else {                                                                   \
          for (int i_ = 0; i_ < per_; ++i_) B;                                     \
        }                                                                          \
        double mine_ = MPI_Wtime() - t0_, slowest_ = 0;                            \
        PMPI_Allreduce(&mine_, &slowest_, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD); \
        sum_[impl_] += slowest_;                                                   \
        if (slowest_ < best_[impl_]) best_[impl_] = slowest_;                      \
      }                                                                            \
    }                                                                              \
    for (int i_ = 0; i_ < 2; ++i_) {                                               \
      (MEAN)[i_] = sum_[i_] * 1e6 / ((double)per_ * CHUNKS);                       \
      (BEST)[i_] = best_[i_] * 1e6 / per_;                                         \
    }                                                                              \
  } while (0)

/* Rank 0 prints one measurement (both of them with --both). */
static void report(int rank, int both, const char* call, int bytes, const double* mean,
                   const double* best) {
  if (rank != 0) return;
  if (!both) {
    printf("%s,%d,%.3f,%.3f\n", call, bytes, mean[0], best[0]);
    return;
  }
  printf("blink,%s,%d,%.3f,%.3f\n", call, bytes, mean[0], best[0]);
  printf("mpi,%s,%d,%.3f,%.3f\n", call, bytes, mean[1], best[1]);
}

/* Times MPI_CALL alone, or with --both against PMPI_CALL. */
#define MEASURE(MPI_CALL, PMPI_CALL, NAME, BYTES) \
  do {                                            \
    double m_[2] = {0, 0}, b_[2] = {0, 0};        \
    if (both) {                                   \
      TIME_BOTH(MPI_CALL, PMPI_CALL, m_, b_);     \
    } else {                                      \
      TIME_CALLS(MPI_CALL, m_[0], b_[0]);         \
    }                                             \
    report(rank, both, NAME, BYTES, m_, b_);      \
  } while (0)

int main(int argc, char** argv) {
  int both = 0;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "-n") && i + 1 < argc) {
      g_iters = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--both")) {
      both = 1;
    } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      printf(
          "Usage: mpi_small_calls [-n ITERS] [--both]   (default 20000 calls per measurement;\n"
          "  --both: MPI_* and PMPI_* alternated chunk by chunk in this job)\n");
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
  if (rank == 0)
    printf(both ? "impl,call,bytes,time_us,best_us\n" : "call,bytes,time_us,best_us\n");
  for (int words = 1; words <= 4; words *= 4) {
    MEASURE(MPI_Allreduce(in, out, words, MPI_LONG_LONG_INT, MPI_BAND, MPI_COMM_WORLD),
            PMPI_Allreduce(in, out, words, MPI_LONG_LONG_INT, MPI_BAND, MPI_COMM_WORLD),
            "allreduce_band", words * 8);
    MEASURE(MPI_Allreduce(in, out, words, MPI_LONG_LONG_INT, MPI_BOR, MPI_COMM_WORLD),
            PMPI_Allreduce(in, out, words, MPI_LONG_LONG_INT, MPI_BOR, MPI_COMM_WORLD),
            "allreduce_bor", words * 8);
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
  MEASURE(
      MPI_Allgatherv(send, counts[rank], MPI_BYTE, recv, counts, displs, MPI_BYTE, MPI_COMM_WORLD),
      PMPI_Allgatherv(send, counts[rank], MPI_BYTE, recv, counts, displs, MPI_BYTE, MPI_COMM_WORLD),
      "allgatherv", total);
  MEASURE(MPI_Barrier(MPI_COMM_WORLD), PMPI_Barrier(MPI_COMM_WORLD), "barrier", 0);
  free(counts);
  free(displs);
  free(send);
  free(recv);
  MPI_Finalize();
  return 0;
}
