/* An MPI program that passes "device" buffers to MPI_Allreduce and MPI_Bcast, as a
 * CUDA-aware job would. Run with the fake CUDA driver (tests/unit/fake_cuda.c) first
 * on LD_LIBRARY_PATH: the buffers are host memory that the fake reports as CUDA
 * device memory, so an MPI library that gets the call computes the right result on
 * them, and a library that moved them itself would have crashed on real ones.
 *
 * Usage: mpi_device_buffers all|one
 *   all: every rank passes device buffers; one: only rank 1 does.
 * Every result is checked against values computed locally; then one host call
 * shows the interposer still takes ordinary buffers. Rank 0 prints one line per
 * check; the exit status is non-zero if any rank saw a wrong element. */
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kUnmark = 0, kDevice = 1 }; /* fake_cuda_mark kinds */
typedef int (*MarkFn)(const void*, size_t, int);

static int g_rank, g_size, g_failures;

static void report(const char* what, int local_bad) {
  int bad = 0;
  PMPI_Allreduce(&local_bad, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (bad) ++g_failures;
  if (g_rank == 0) printf("%s: %s\n", what, bad ? "WRONG" : "ok");
}

static int32_t value(int rank, int i) {
  return (int32_t)((i * 7 + rank * 3) % 9 - 4);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  const int all = argc > 1 && strcmp(argv[1], "all") == 0;
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  MarkFn mark = driver != NULL ? (MarkFn)dlsym(driver, "fake_cuda_mark") : NULL;
  if (mark == NULL) {
    fprintf(stderr, "rank %d: the fake libcuda.so.1 is not first on LD_LIBRARY_PATH\n", g_rank);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const int device = all || g_rank == 1;
  enum { kCount = 1 << 16 }; /* 256 KiB of int32: above every default threshold */
  int32_t* in = malloc(sizeof(int32_t) * kCount);
  int32_t* out = malloc(sizeof(int32_t) * kCount);
  if (device) {
    mark(in, sizeof(int32_t) * kCount, kDevice);
    mark(out, sizeof(int32_t) * kCount, kDevice);
  }

  int bad = 0;
  for (int i = 0; i < kCount; ++i) in[i] = value(g_rank, i);
  MPI_Allreduce(in, out, kCount, MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD);
  for (int i = 0; i < kCount; ++i) {
    int32_t want = 0;
    for (int r = 0; r < g_size; ++r) want += value(r, i);
    bad |= out[i] != want;
  }
  report("allreduce sum, device buffers", bad);

  bad = 0;
  for (int i = 0; i < kCount; ++i) out[i] = value(g_rank, i);
  MPI_Allreduce(MPI_IN_PLACE, out, kCount, MPI_INT32_T, MPI_MAX, MPI_COMM_WORLD);
  for (int i = 0; i < kCount; ++i) {
    int32_t want = value(0, i);
    for (int r = 1; r < g_size; ++r) want = value(r, i) > want ? value(r, i) : want;
    bad |= out[i] != want;
  }
  report("allreduce max in place, device buffer", bad);

  bad = 0;
  const int root = g_size - 1;
  for (int i = 0; i < kCount; ++i) out[i] = g_rank == root ? value(root, i) : -99;
  MPI_Bcast(out, kCount, MPI_INT32_T, root, MPI_COMM_WORLD);
  for (int i = 0; i < kCount; ++i) bad |= out[i] != value(root, i);
  report("bcast, device buffers", bad);

  mark(in, 0, kUnmark);
  mark(out, 0, kUnmark);
  bad = 0;
  for (int i = 0; i < kCount; ++i) in[i] = value(g_rank, i);
  MPI_Allreduce(in, out, kCount, MPI_INT32_T, MPI_MIN, MPI_COMM_WORLD);
  for (int i = 0; i < kCount; ++i) {
    int32_t want = value(0, i);
    for (int r = 1; r < g_size; ++r) want = value(r, i) < want ? value(r, i) : want;
    bad |= out[i] != want;
  }
  report("allreduce min, host buffers", bad);

  free(in);
  free(out);
  if (g_rank == 0) printf("%d wrong\n", g_failures);
  MPI_Finalize();
  return g_failures == 0 ? 0 : 1;
}
