/* An MPI program that passes "device" buffers to MPI_Allreduce and MPI_Bcast, as a
 * CUDA-aware job would. Run with the fake CUDA driver (tests/unit/fake_cuda.c) first
 * on LD_LIBRARY_PATH: the buffers are host memory that the fake reports as CUDA
 * device memory, so an MPI library that gets the call computes the right result on
 * them, and a library that moved them itself would have crashed on real ones.
 *
 * Usage: mpi_device_buffers all|one|blink
 *   all: every rank passes device buffers; one: only rank 1 does; blink: every rank
 *   passes memory of its Blink device (blinkMemAlloc, under BLINK_DEVICE=EMULATED).
 * Errors return (MPI_ERRORS_RETURN): a call that fails with MPI_ERR_BUFFER on every
 * rank is counted as refused and its result not checked; a refusal on some ranks
 * only, or any other error, is wrong. Every other result is checked against values
 * computed locally; then one host call shows the interposer still takes ordinary
 * buffers. Rank 0 prints one line per check, "N wrong" and "N refused"; the exit
 * status is non-zero if any check was wrong. */
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kUnmark = 0, kDevice = 1 }; /* fake_cuda_mark kinds */
typedef int (*MarkFn)(const void*, size_t, int);
typedef int (*AllocFn)(void**, size_t); /* blinkMemAlloc / blinkMemFree, from libblink.so */
typedef int (*FreeFn)(void*);
typedef int (*CopyFn)(void*, const void*, size_t);

static int g_rank, g_size, g_failures, g_refused;
/* Host code cannot touch Blink's (emulated) device memory: blinkMemcpy then. */
static CopyFn g_copy;

static void copy(void* dst, const void* src, size_t bytes) {
  if (g_copy == NULL) {
    memcpy(dst, src, bytes);
  } else if (g_copy(dst, src, bytes) != 0) {
    fprintf(stderr, "rank %d: blinkMemcpy failed\n", g_rank);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
}

static void report(const char* what, int local_bad) {
  int bad = 0;
  PMPI_Allreduce(&local_bad, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (bad) ++g_failures;
  if (g_rank == 0) printf("%s: %s\n", what, bad ? "WRONG" : "ok");
}

/* Whether the call `rc` came from was refused with MPI_ERR_BUFFER on every rank. */
static int refused(int rc) {
  int cls = MPI_SUCCESS;
  if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
  int mine[2] = {cls == MPI_ERR_BUFFER, rc != MPI_SUCCESS && cls != MPI_ERR_BUFFER};
  int all[2] = {0, 0};
  PMPI_Allreduce(mine, all, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (all[1] != 0 || (all[0] != 0 && all[0] != g_size)) {
    if (g_rank == 0) printf("WRONG: %d ranks refused, %d failed otherwise\n", all[0], all[1]);
    ++g_failures;
  }
  if (all[0] == g_size) ++g_refused;
  return all[0] != 0;
}

static int32_t value(int rank, int i) {
  return (int32_t)((i * 7 + rank * 3) % 9 - 4);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  const char* mode = argc > 1 ? argv[1] : "all";
  const int blink_memory = strcmp(mode, "blink") == 0;
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  MarkFn mark = driver != NULL ? (MarkFn)dlsym(driver, "fake_cuda_mark") : NULL;
  if (mark == NULL && !blink_memory) { /* blink: a real driver will do (gpu-check.sh) */
    fprintf(stderr, "rank %d: the fake libcuda.so.1 is not first on LD_LIBRARY_PATH\n", g_rank);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  enum { kCount = 1 << 16 }; /* 256 KiB of int32: above every default threshold */
  const size_t bytes = sizeof(int32_t) * kCount;
  int32_t* host_in = malloc(bytes);
  int32_t* host_out = malloc(bytes);
  int32_t* values = malloc(bytes); /* what goes in and comes out, on the host */
  int32_t* in = host_in;
  int32_t* out = host_out;
  FreeFn blink_free = (FreeFn)dlsym(RTLD_DEFAULT, "blinkMemFree");
  if (blink_memory) {
    AllocFn blink_alloc = (AllocFn)dlsym(RTLD_DEFAULT, "blinkMemAlloc");
    g_copy = (CopyFn)dlsym(RTLD_DEFAULT, "blinkMemcpy");
    if (blink_alloc == NULL || g_copy == NULL || blink_free == NULL ||
        blink_alloc((void**)&in, bytes) != 0 || blink_alloc((void**)&out, bytes) != 0) {
      typedef const char* (*LastErrorFn)(void);
      LastErrorFn last = (LastErrorFn)dlsym(RTLD_DEFAULT, "blinkGetLastError");
      fprintf(stderr, "rank %d: no blinkMemAlloc memory (libblink_mpi.so, BLINK_DEVICE?): %s\n",
              g_rank, last != NULL ? last() : "");
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  } else if (strcmp(mode, "all") == 0 || g_rank == 1) {
    mark(in, bytes, kDevice);
    mark(out, bytes, kDevice);
  }

  int bad = 0;
  for (int i = 0; i < kCount; ++i) values[i] = value(g_rank, i);
  copy(in, values, bytes);
  if (!refused(MPI_Allreduce(in, out, kCount, MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD))) {
    copy(values, out, bytes);
    for (int i = 0; i < kCount; ++i) {
      int32_t want = 0;
      for (int r = 0; r < g_size; ++r) want += value(r, i);
      bad |= values[i] != want;
    }
  }
  report("allreduce sum, device buffers", bad);

  bad = 0;
  for (int i = 0; i < kCount; ++i) values[i] = value(g_rank, i);
  copy(out, values, bytes);
  if (!refused(MPI_Allreduce(MPI_IN_PLACE, out, kCount, MPI_INT32_T, MPI_MAX, MPI_COMM_WORLD))) {
    copy(values, out, bytes);
    for (int i = 0; i < kCount; ++i) {
      int32_t want = value(0, i);
      for (int r = 1; r < g_size; ++r) want = value(r, i) > want ? value(r, i) : want;
      bad |= values[i] != want;
    }
  }
  report("allreduce max in place, device buffer", bad);

  bad = 0;
  const int root = g_size - 1;
  for (int i = 0; i < kCount; ++i) values[i] = g_rank == root ? value(root, i) : -99;
  copy(out, values, bytes);
  if (!refused(MPI_Bcast(out, kCount, MPI_INT32_T, root, MPI_COMM_WORLD))) {
    copy(values, out, bytes);
    for (int i = 0; i < kCount; ++i) bad |= values[i] != value(root, i);
  }
  report("bcast, device buffers", bad);

  if (blink_memory) {
    blink_free(in);
    blink_free(out);
  } else {
    mark(host_in, 0, kUnmark);
    mark(host_out, 0, kUnmark);
  }
  in = host_in;
  out = host_out;
  g_copy = NULL;
  bad = 0;
  for (int i = 0; i < kCount; ++i) in[i] = value(g_rank, i);
  if (MPI_Allreduce(in, out, kCount, MPI_INT32_T, MPI_MIN, MPI_COMM_WORLD) != MPI_SUCCESS) bad = 1;
  for (int i = 0; i < kCount; ++i) {
    int32_t want = value(0, i);
    for (int r = 1; r < g_size; ++r) want = value(r, i) < want ? value(r, i) : want;
    bad |= out[i] != want;
  }
  report("allreduce min, host buffers", bad);

  free(host_in);
  free(host_out);
  free(values);
  if (g_rank == 0) printf("%d wrong\n%d refused\n", g_failures, g_refused);
  MPI_Finalize();
  return g_failures == 0 ? 0 : 1;
}
