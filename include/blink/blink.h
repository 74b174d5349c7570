/* Blink: spanning-tree collectives for MPI jobs.
 *
 * The public C API, in the style of NCCL: every call returns a blinkResult_t and
 * blinkGetErrorString() turns it into text; blinkGetLastError() gives the message
 * of the most recent failure on the calling thread.
 *
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef BLINK_BLINK_H
#define BLINK_BLINK_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BLINK_VERSION_MAJOR 0
#define BLINK_VERSION_MINOR 1
#define BLINK_VERSION_PATCH 0
/* 100*100*major + 100*minor + patch, as NCCL_VERSION_CODE. */
#define BLINK_VERSION_CODE \
  (BLINK_VERSION_MAJOR * 10000 + BLINK_VERSION_MINOR * 100 + BLINK_VERSION_PATCH)

typedef enum {
  blinkSuccess = 0,
  blinkInvalidArgument = 1, /* a null pointer, unknown datatype or op, out-of-range root, ... */
  blinkInvalidUsage = 2,    /* e.g. a destroyed communicator, a mismatched plan across ranks */
  blinkSystemError = 3,     /* the OS or a library refused (shared memory, dlopen, ...) */
  blinkInternalError = 4,   /* a bug in Blink: please report it */
  blinkTimeout = 5,         /* a peer did not arrive before BLINK_TIMEOUT_S */
  blinkUnsupported = 6,     /* valid, but not handled by this build or on this machine */
  blinkInvalidInput = 7,    /* a malformed topology file or environment variable */
  blinkNumResults = 8
} blinkResult_t;

typedef enum {
  blinkInt8 = 0,
  blinkUint8 = 1,
  blinkInt16 = 2,
  blinkUint16 = 3,
  blinkInt32 = 4,
  blinkUint32 = 5,
  blinkInt64 = 6,
  blinkUint64 = 7,
  blinkFloat16 = 8,
  blinkBfloat16 = 9,
  blinkFloat32 = 10,
  blinkFloat64 = 11,
  blinkNumTypes = 12
} blinkDataType_t;

typedef enum {
  blinkSum = 0,
  blinkProd = 1,
  blinkMin = 2,
  blinkMax = 3,
  blinkAvg = 4, /* floating-point types only */
  blinkNumOps = 5
} blinkRedOp_t;

/* The library's version as BLINK_VERSION_CODE. */
blinkResult_t blinkGetVersion(int* version);

/* A one-line, static description of this build: version, git revision and the
 * optional components compiled in, e.g. "Blink 0.1.0 (git 1a2b3c, CUDA on, UCX on, hwloc on)". */
const char* blinkGetBuildInfo(void);

/* A static English description of a result code; never NULL. */
const char* blinkGetErrorString(blinkResult_t result);

/* The message of the last failing Blink call on this thread ("" if none). */
const char* blinkGetLastError(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* BLINK_BLINK_H */
