#include "nccl_baseline.hpp"

#include <dlfcn.h>

#include <cstdio>
#include <cstring>

namespace blink::perf {
namespace {

using Result = int;    // ncclResult_t: 0 is ncclSuccess
using Comm = void*;    // ncclComm_t
using Stream = void*;  // cudaStream_t: nullptr is the legacy default stream
struct UniqueId {
  char internal[128];  // NCCL_UNIQUE_ID_BYTES
};

// nccl.h's ncclDataType_t and ncclRedOp_t values; -1 where NCCL has none.
int ncclType(blinkDataType_t type) {
  switch (type) {
    case blinkInt8:
      return 0;
    case blinkUint8:
      return 1;
    case blinkInt32:
      return 2;
    case blinkUint32:
      return 3;
    case blinkInt64:
      return 4;
    case blinkUint64:
      return 5;
    case blinkFloat16:
      return 6;
    case blinkFloat32:
      return 7;
    case blinkFloat64:
      return 8;
    case blinkBfloat16:
      return 9;
    default:
      return -1;  // int16, uint16
  }
}
int ncclOp(blinkRedOp_t op) {
  switch (op) {
    case blinkSum:
      return 0;
    case blinkProd:
      return 1;
    case blinkMax:
      return 2;
    case blinkMin:
      return 3;
    case blinkAvg:
      return 4;
    default:
      return -1;  // bitwise and logical ops
  }
}

}  // namespace

struct NcclBaseline::Api {
  Result (*getUniqueId)(UniqueId*);
  Result (*commInitRank)(Comm*, int, UniqueId, int);
  Result (*commDestroy)(Comm);
  const char* (*getErrorString)(Result);
  Result (*allReduce)(const void*, void*, std::size_t, int, int, Comm, Stream);
  Result (*broadcast)(const void*, void*, std::size_t, int, int, Comm, Stream);
  Result (*reduce)(const void*, void*, std::size_t, int, int, int, Comm, Stream);
  Result (*allGather)(const void*, void*, std::size_t, int, Comm, Stream);
  Result (*reduceScatter)(const void*, void*, std::size_t, int, int, Comm, Stream);
};

NcclBaseline::NcclBaseline(const std::string& library, bool emulated_device, blinkDataType_t type,
                           blinkRedOp_t op, bool reduces)
    : type_(ncclType(type)), op_(ncclOp(op)) {
  // Each rank's own reason, then one agreement: NCCL runs on every rank or none.
  std::string why;
  library_ = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library_ == nullptr) {
    why = library + " not found";
  } else if (emulated_device) {
    why = "the device is emulated (BLINK_DEVICE=EMULATED): NCCL needs GPU memory";
  } else if (reduces && op_ < 0) {
    why = "NCCL has no such op (sum, prod, min, max, avg only)";
  } else if (type_ < 0) {
    why = "NCCL has no " + std::string(type == blinkInt16 ? "int16" : "uint16") + " type";
  } else {
    api_ = new Api;
    auto resolve = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(library_, name));
      if (fn == nullptr && why.empty()) why = library + " has no " + name;
    };
    resolve(api_->getUniqueId, "ncclGetUniqueId");
    resolve(api_->commInitRank, "ncclCommInitRank");
    resolve(api_->commDestroy, "ncclCommDestroy");
    resolve(api_->getErrorString, "ncclGetErrorString");
    resolve(api_->allReduce, "ncclAllReduce");
    resolve(api_->broadcast, "ncclBroadcast");
    resolve(api_->reduce, "ncclReduce");
    resolve(api_->allGather, "ncclAllGather");
    resolve(api_->reduceScatter, "ncclReduceScatter");
  }
  int ok = why.empty() ? 1 : 0, all_ok = 0;
  PMPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (all_ok == 1) {
    int rank = 0, size = 1;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    UniqueId id{};
    Result rc = rank == 0 ? api_->getUniqueId(&id) : 0;
    PMPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rc == 0) {
      PMPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
      rc = api_->commInitRank(&comm_, size, id, rank);
    }
    if (rc != 0) why = std::string("NCCL: ") + api_->getErrorString(rc);
    ok = why.empty() ? 1 : 0;
    PMPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  }
  if (all_ok == 0) skip_ = why.empty() ? "not available on another rank (see its output)" : why;
}

NcclBaseline::~NcclBaseline() {
  if (comm_ != nullptr) api_->commDestroy(comm_);
  delete api_;
  if (library_ != nullptr) dlclose(library_);
}

void NcclBaseline::run(NcclCollective c, const void* send, void* recv, std::size_t count,
                       int root) {
  Result rc = 0;
  switch (c) {
    case NcclCollective::AllReduce:
      rc = api_->allReduce(send, recv, count, type_, op_, comm_, nullptr);
      break;
    case NcclCollective::Broadcast:
      rc = api_->broadcast(send, recv, count, type_, root, comm_, nullptr);
      break;
    case NcclCollective::Reduce:
      rc = api_->reduce(send, recv, count, type_, op_, root, comm_, nullptr);
      break;
    case NcclCollective::AllGather:
      rc = api_->allGather(send, recv, count, type_, comm_, nullptr);
      break;
    case NcclCollective::ReduceScatter:
      rc = api_->reduceScatter(send, recv, count, type_, op_, comm_, nullptr);
      break;
  }
  if (rc != 0) {
    std::fprintf(stderr, "blink_perf: NCCL failed: %s\n", api_->getErrorString(rc));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

}  // namespace blink::perf
