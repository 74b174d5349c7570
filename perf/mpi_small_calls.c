/* A plain MPI benchmark (only mpi.h) of the small, latency-bound calls a training
 * job's controller makes (Horovod's: bit-vector MPI_Allreduce with MPI_BAND / MPI_BOR
 * on MPI_LONG_LONG_INT, MPI_Allgatherv of short response lists, MPI_Barrier). Each
 * call is timed as the slowest rank's average over ITERS calls after ITERS/10
 * warm-ups. Run it natively and under LD_PRELOAD of libblink_mpi.so
 * (perf/run_small_calls.sh). Rank 0 prints CSV: call,bytes,time_us.
 *
 * Usage: mpi_small_calls [-n ITERS] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_iters = 20000;

/* The slowest rank's average microseconds per call of `body`. */
#define TIME_CALLS(BODY, OUT)                                               \
  do {                                                                      \
    for (int w_ = 0; w_ < g_iters / 10; ++w_) BODY;                         \
    PMPI_Barrier(MPI_COMM_WORLD);                                           \
    double t0_ = MPI_Wtime();                                               \
    for (int i_ = 0; i_ < g_iters; ++i_) BODY;                              \
    double mine_ = (MPI_Wtime() - t0_) * 1e6 / g_iters;                     \
    PMPI_Allreduce(&mine_, &(OUT), 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD); \
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
  if (g_iters < 10) {
    fprintf(stderr, "mpi_small_calls: ITERS must be at least 10\n");
    return 2;
  }
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long long in[4] = {0x0f0f0f0f0f0f0f0fLL ^ rank, -1LL - rank, rank, 1LL << rank}, out[4];
  double t = 0;
  if (rank == 0) printf("call,bytes,time_us\n");
  for (int words = 1; words <= 4; words *= 4) {
    TIME_CALLS(MPI_Allreduce(in, out, words, MPI_LONG_LONG_INT, MPI_BAND, MPI_COMM_WORLD), t);
    if (rank == 0) printf("allreduce_band,%d,%.3f\n", words * 8, t);
    TIME_CALLS(MPI_Allreduce(in, out, words, MPI_LONG_LONG_INT, MPI_BOR, MPI_COMM_WORLD), t);
    if (rank == 0) printf("allreduce_bor,%d,%.3f\n", words * 8, t);
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
      t);
  if (rank == 0) printf("allgatherv,%d,%.3f\n", total, t);
  TIME_CALLS(MPI_Barrier(MPI_COMM_WORLD), t);
  if (rank == 0) printf("barrier,0,%.3f\n", t);
  free(counts);
  free(displs);
  free(send);
  free(recv);
  MPI_Finalize();
  return 0;
}
