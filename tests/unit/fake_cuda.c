/* A stand-in for the CUDA driver, libcuda.so.1, for tests on machines without a GPU.
 * It knows no device and allocates nothing: a test marks ranges of ordinary host
 * memory as CUDA device, managed or registered memory with fake_cuda_mark, and
 * cuPointerGetAttribute reports them as such. The memory stays readable, so an MPI
 * library that falls back computes the right result on it.
 *
 * Only the entry points Blink's loader resolves (and cuGetErrorString) are provided;
 * they follow cuda.h's ABI: CUresult and enums are ints, CUdeviceptr is 64 bits.
 *
 * Environment:
 *   FAKE_CUDA_INIT_RESULT=<n>     cuInit fails with CUDA error n (e.g. 100, no device)
 *   FAKE_CUDA_POINTER_RESULT=<n>  cuPointerGetAttribute fails with CUDA error n on
 *                                 marked memory (e.g. 201, no context)
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,
  CU_POINTER_ATTRIBUTE_IS_MANAGED = 8,
  CU_MEMORYTYPE_HOST = 1,
  CU_MEMORYTYPE_DEVICE = 2
};

/* The kinds fake_cuda_mark takes. */
enum {
  FAKE_CUDA_UNMARK = 0,
  FAKE_CUDA_DEVICE = 1,
  FAKE_CUDA_MANAGED = 2,
  FAKE_CUDA_REGISTERED = 3
};

enum { kMaxRanges = 64 };
static struct {
  uintptr_t begin, end;
  int kind;
} ranges[kMaxRanges];
static int initialised;

int cuInit(unsigned int flags) {
  (void)flags;
  const char* forced = getenv("FAKE_CUDA_INIT_RESULT");
  if (forced != NULL && atoi(forced) != 0) return atoi(forced);
  initialised = 1;
  return CUDA_SUCCESS;
}

/* Older than the CUDA toolkit Blink is built with, so that the CUDA runtime in the
 * same process declares the driver insufficient instead of asking it for entry
 * points this fake lacks. */
int cuDriverGetVersion(int* version) {
  if (version == NULL) return CUDA_ERROR_INVALID_VALUE;
  *version = 12040;
  return CUDA_SUCCESS;
}

int cuGetErrorString(int error, const char** text) {
  if (text == NULL) return CUDA_ERROR_INVALID_VALUE;
  switch (error) {
    case CUDA_ERROR_INVALID_VALUE:
      *text = "invalid argument";
      return CUDA_SUCCESS;
    case CUDA_ERROR_NOT_INITIALIZED:
      *text = "initialization error";
      return CUDA_SUCCESS;
    case 100:
      *text = "no CUDA-capable device is detected";
      return CUDA_SUCCESS;
    default:
      *text = NULL;
      return CUDA_ERROR_INVALID_VALUE;
  }
}

/* Marks [p, p + n) as `kind` (FAKE_CUDA_UNMARK forgets ranges that start at p).
 * Returns 0, or -1 when the table is full. Not thread-safe: mark before use. */
int fake_cuda_mark(const void* p, size_t n, int kind) {
  const uintptr_t begin = (uintptr_t)p;
  for (int i = 0; i < kMaxRanges; ++i) {
    if (ranges[i].kind != FAKE_CUDA_UNMARK && ranges[i].begin == begin) ranges[i].kind = 0;
  }
  if (kind == FAKE_CUDA_UNMARK) return 0;
  for (int i = 0; i < kMaxRanges; ++i) {
    if (ranges[i].kind == FAKE_CUDA_UNMARK) {
      ranges[i].begin = begin;
      ranges[i].end = begin + n;
      ranges[i].kind = kind;
      return 0;
    }
  }
  return -1;
}

int cuPointerGetAttribute(void* data, int attribute, unsigned long long pointer) {
  if (!initialised) return CUDA_ERROR_NOT_INITIALIZED;
  if (data == NULL) return CUDA_ERROR_INVALID_VALUE;
  int kind = FAKE_CUDA_UNMARK;
  for (int i = 0; i < kMaxRanges && kind == FAKE_CUDA_UNMARK; ++i) {
    if (ranges[i].kind != FAKE_CUDA_UNMARK && pointer >= ranges[i].begin &&
        pointer < ranges[i].end) {
      kind = ranges[i].kind;
    }
  }
  /* What the real driver answers for pageable memory it never saw. */
  if (kind == FAKE_CUDA_UNMARK) return CUDA_ERROR_INVALID_VALUE;
  const char* forced = getenv("FAKE_CUDA_POINTER_RESULT");
  if (forced != NULL && atoi(forced) != 0) return atoi(forced);
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      *(unsigned*)data = kind == FAKE_CUDA_REGISTERED ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
      *(unsigned*)data = kind == FAKE_CUDA_MANAGED;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}
