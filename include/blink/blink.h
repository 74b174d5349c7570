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

#include <mpi.h>
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
  /* Integer types only, as MPI_BAND .. MPI_LXOR. The logical ops treat nonzero as
   * true and give 1 or 0 in the element's type. */
  blinkBand = 5,
  blinkBor = 6,
  blinkBxor = 7,
  blinkLand = 8,
  blinkLor = 9,
  blinkLxor = 10,
  blinkNumOps = 11
} blinkRedOp_t;

/* The library's version as BLINK_VERSION_CODE. */
blinkResult_t blinkGetVersion(int* version);

/* A one-line, static description of what this build runs: version, git revision,
 * transports and memory types, e.g. "Blink 0.1.0 (git 1a2b3c, transports: shm, pmpi;
 * memory: host; CUDA kernels compiled (sm_80, sm_90) but no CUDA data path; UCX: not
 * used; ...)". `blink-info --version` adds what this machine has. */
const char* blinkGetBuildInfo(void);

/* A static English description of a result code; never NULL. */
const char* blinkGetErrorString(blinkResult_t result);

/* The message of the last failing Blink call on this thread ("" if none). */
const char* blinkGetLastError(void);

/* ---- Communicators ----------------------------------------------------------
 *
 * A communicator spans the ranks of an MPI communicator. It is created
 * collectively (every rank of mpi_comm calls blinkCommInitFromMPI), agrees on the
 * topology (discovered, or BLINK_TOPO / BLINK_TOPO_GPUS) and, for each collective
 * and size, on one plan, whose hash is checked across ranks. Blink duplicates
 * mpi_comm for its own traffic, so the caller may keep using it.
 *
 * Threads: one communicator must not be used by two threads at once; different
 * communicators may be used concurrently from different threads (MPI must then be
 * initialised with MPI_THREAD_MULTIPLE). */
typedef struct blinkComm* blinkComm_t;

blinkResult_t blinkCommInitFromMPI(blinkComm_t* comm, MPI_Comm mpi_comm);
/* Collective over the communicator's ranks. Using comm afterwards returns
 * blinkInvalidUsage. */
blinkResult_t blinkCommDestroy(blinkComm_t comm);
blinkResult_t blinkCommCount(blinkComm_t comm, int* count);
blinkResult_t blinkCommUserRank(blinkComm_t comm, int* rank);

/* The topology, rank layout, paths, accepted memory types and every plan chosen so
 * far, as text. Writes at most `capacity` bytes (NUL-terminated) to `text` and sets
 * *length to the full length without the NUL; text may be NULL with capacity 0 to
 * ask for the length. */
blinkResult_t blinkCommExplain(blinkComm_t comm, char* text, size_t capacity, size_t* length);

/* ---- Collectives ------------------------------------------------------------
 *
 * Buffers: host memory (pageable, or registered with CUDA), or all memory of the
 * ranks' Blink devices (blinkMemAlloc) where the communicator has a GPU data path
 * (every rank a device of one kind, one node). Where a rank has a CUDA driver or a
 * device, every call first checks with its peers what all buffers are: any other
 * device or managed buffer, or host and device buffers mixed, make the call return
 * blinkInvalidUsage on every rank, naming the rank, before any data moves, and the
 * communicator stays usable. Counts are elements. Every rank passes the same count, datatype,
 * op and root. In-place, as in NCCL: AllReduce/Broadcast/Reduce with
 * sendbuff == recvbuff; AllGather with sendbuff == recvbuff + rank * count;
 * ReduceScatter with recvbuff == sendbuff + rank * recvcount. A buffer may be NULL
 * only when the count is 0 (Broadcast: sendbuff is read on the root only; Reduce:
 * recvbuff is written on the root only). */
blinkResult_t blinkAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                             blinkDataType_t datatype, blinkRedOp_t op, blinkComm_t comm);
blinkResult_t blinkBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                             blinkDataType_t datatype, int root, blinkComm_t comm);
blinkResult_t blinkReduce(const void* sendbuff, void* recvbuff, size_t count,
                          blinkDataType_t datatype, blinkRedOp_t op, int root, blinkComm_t comm);
/* recvbuff holds nranks * sendcount elements, rank r's contribution at r * sendcount. */
blinkResult_t blinkAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                             blinkDataType_t datatype, blinkComm_t comm);
/* sendbuff holds nranks * recvcount elements; rank r receives the reduction of
 * every rank's block r. */
blinkResult_t blinkReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                 blinkDataType_t datatype, blinkRedOp_t op, blinkComm_t comm);

/* The collectives below have no algorithm of their own: each runs as the ones
 * above (planned and chosen for its size like any other call). */
/* Rank r's sendcount (= recvcounts[r]) elements land at recvbuff + displs[r] elements
 * on every rank; recvcounts are equal on every rank, displs are each rank's own. In
 * place: sendbuff == recvbuff + displs[rank]. One AllGather of blocks padded to the
 * largest count. */
blinkResult_t blinkAllGatherV(const void* sendbuff, size_t sendcount, void* recvbuff,
                              const size_t* recvcounts, const size_t* displs,
                              blinkDataType_t datatype, blinkComm_t comm);
/* As AllGather, but only the root's recvbuff (nranks * sendcount elements) is written;
 * recvbuff may be NULL elsewhere. Runs as an AllGather (every rank receives the blocks
 * and the others drop them). In place: sendbuff == recvbuff + root * sendcount. */
blinkResult_t blinkGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                          blinkDataType_t datatype, int root, blinkComm_t comm);
/* sendbuff holds sum(recvcounts) elements; rank r receives recvcounts[r] elements, the
 * reduction of every rank's elements from recvcounts[0] + .. + recvcounts[r-1]. Equal
 * counts: a ReduceScatter; else one of blocks padded to the largest, or one AllReduce of
 * the input where padding would more than double it. */
blinkResult_t blinkReduceScatterV(const void* sendbuff, void* recvbuff, const size_t* recvcounts,
                                  blinkDataType_t datatype, blinkRedOp_t op, blinkComm_t comm);

/* Returns on every rank once every rank has called it: an AllReduce of one byte,
 * so it takes whatever path that size is planned on (within a node, the one-round
 * shared-memory board). */
blinkResult_t blinkBarrier(blinkComm_t comm);

/* Memory of this process's Blink device (BLINK_DEVICE: a GPU, cudaMalloc; or the
 * emulated device's shared memory), which the collectives move on the device data
 * path. The device is the one the process's communicators use: made here if no
 * communicator has made it yet, for the launcher's local rank
 * (OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID or SLURM_LOCALID, else 0).
 * blinkInvalidUsage where the process has no device; zero-filled. */
blinkResult_t blinkMemAlloc(void** ptr, size_t bytes);
/* Frees memory from blinkMemAlloc (NULL: nothing). */
blinkResult_t blinkMemFree(void* ptr);
/* Copies `bytes` between host memory and memory of the Blink device, either way (or
 * within either), and returns once done. The emulated device's memory, like a GPU's,
 * cannot be read or written by the host directly. */
blinkResult_t blinkMemcpy(void* dst, const void* src, size_t bytes);

/* Size in bytes of one element of `datatype` (0 for an unknown type). */
size_t blinkDataTypeSize(blinkDataType_t datatype);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* BLINK_BLINK_H */
