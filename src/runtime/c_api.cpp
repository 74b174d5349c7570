// The C API's communicators and collectives: argument checks, handle bookkeeping
// and the translation of exceptions into blinkResult_t (guardCApi).
//
// Handles are opaque numbers, never pointers to memory: a destroyed handle is
// simply absent from the registry, so using it returns blinkInvalidUsage instead
// of touching freed memory.
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include "blink/blink.h"
#include "common/env.hpp"
#include "common/error.hpp"
#include "runtime/communicator.hpp"
#include "runtime/process_device.hpp"
#include "runtime/reduce_cpu.hpp"

namespace blink::runtime {
namespace {

class Registry {
 public:
  blinkComm_t add(std::shared_ptr<Communicator> comm) {
    std::lock_guard lock(mutex_);
    const std::uintptr_t id = next_id_++;
    comms_[id] = std::move(comm);
    return reinterpret_cast<blinkComm_t>(id);
  }
  std::shared_ptr<Communicator> find(blinkComm_t handle) {
    if (handle == nullptr) throw Error(blinkInvalidArgument, "the communicator is NULL");
    std::lock_guard lock(mutex_);
    auto it = comms_.find(reinterpret_cast<std::uintptr_t>(handle));
    if (it == comms_.end()) {
      throw Error(blinkInvalidUsage, "not a live Blink communicator (destroyed already?)");
    }
    return it->second;
  }
  // The collectives' lookup: a thread's calls on the communicator it used last skip
  // the lock, the map and the reference count (blink.h forbids destroying a
  // communicator while another thread uses it, so a plain pointer is safe; a
  // destroyed handle fails as in find, since every removal starts a new generation).
  Communicator& use(blinkComm_t handle) {
    // Constant-initialised and initial-exec: reaching it costs no call. Its few bytes
    // fit the static TLS glibc keeps for libraries dlopened late.
    [[gnu::tls_model("initial-exec")]] thread_local constinit LastUse last;
    const auto id = reinterpret_cast<std::uintptr_t>(handle);
    const std::uint64_t generation = generation_.load(std::memory_order_acquire);
    if (last.comm != nullptr && last.id == id && last.generation == generation) return *last.comm;
    Communicator& comm = *find(handle);
    last = {id, generation, &comm};
    return comm;
  }
  std::shared_ptr<Communicator> remove(blinkComm_t handle) {
    std::shared_ptr<Communicator> comm = find(handle);
    std::lock_guard lock(mutex_);
    generation_.fetch_add(1, std::memory_order_acq_rel);
    comms_.erase(reinterpret_cast<std::uintptr_t>(handle));
    return comm;
  }

 private:
  struct LastUse {
    std::uintptr_t id = 0;
    std::uint64_t generation = 0;
    Communicator* comm = nullptr;
  };
  std::atomic<std::uint64_t> generation_{1};
  std::mutex mutex_;
  // Ids start high and odd so that they never look like small integers or aligned pointers.
  std::uintptr_t next_id_ = 0x5b1a0001;
  std::map<std::uintptr_t, std::shared_ptr<Communicator>> comms_;
};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: usable from atexit handlers
  return *r;
}

// The launcher's local rank, for a device made before any communicator.
int launcherLocalRank() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}) {
    if (const char* value = std::getenv(name); value != nullptr && *value != '\0') {
      return std::atoi(value);
    }
  }
  return 0;
}

device::Device& deviceForAllocations() {
  device::Device* device = processDevice(launcherLocalRank());
  if (device == nullptr) {
    throw Error(blinkInvalidUsage,
                "blinkMemAlloc: this process has no Blink device: " + processDeviceNote());
  }
  return *device;
}

void checkType(blinkDataType_t type) {
  static_cast<void>(elementSize(type));
}

}  // namespace
}  // namespace blink::runtime

using blink::Error;
using blink::guardCApi;
using blink::runtime::deviceForAllocations;
using blink::runtime::registry;

extern "C" {

size_t blinkDataTypeSize(blinkDataType_t datatype) {
  try {
    return blink::runtime::elementSize(datatype);
  } catch (...) {
    return 0;
  }
}

blinkResult_t blinkCommInitFromMPI(blinkComm_t* comm, MPI_Comm mpi_comm) {
  return guardCApi([&] {
    if (comm == nullptr) throw Error(blinkInvalidArgument, "comm (the output) is NULL");
    *comm = nullptr;
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (!initialized || finalized) {
      throw Error(blinkInvalidUsage,
                  "blinkCommInitFromMPI needs MPI initialised (and not finalised)");
    }
    if (mpi_comm == MPI_COMM_NULL) throw Error(blinkInvalidArgument, "mpi_comm is MPI_COMM_NULL");
    blink::env::validateAll();
    *comm = registry().add(std::make_shared<blink::runtime::Communicator>(mpi_comm));
  });
}

blinkResult_t blinkCommDestroy(blinkComm_t comm) {
  return guardCApi([&] { registry().remove(comm).reset(); });
}

blinkResult_t blinkCommCount(blinkComm_t comm, int* count) {
  return guardCApi([&] {
    if (count == nullptr) throw Error(blinkInvalidArgument, "count is NULL");
    *count = registry().find(comm)->size();
  });
}

blinkResult_t blinkCommUserRank(blinkComm_t comm, int* rank) {
  return guardCApi([&] {
    if (rank == nullptr) throw Error(blinkInvalidArgument, "rank is NULL");
    *rank = registry().find(comm)->rank();
  });
}

blinkResult_t blinkCommExplain(blinkComm_t comm, char* text, size_t capacity, size_t* length) {
  return guardCApi([&] {
    if (text == nullptr && capacity > 0) {
      throw Error(blinkInvalidArgument, "text is NULL with a capacity > 0");
    }
    const std::string s = registry().find(comm)->explain();
    if (length != nullptr) *length = s.size();
    if (capacity > 0) {
      const std::size_t n = std::min(capacity - 1, s.size());
      std::memcpy(text, s.data(), n);
      text[n] = '\0';
    }
  });
}

blinkResult_t blinkAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                             blinkDataType_t datatype, blinkRedOp_t op, blinkComm_t comm) {
  return guardCApi(
      [&] { registry().use(comm).allReduce(sendbuff, recvbuff, count, datatype, op); });
}

blinkResult_t blinkBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                             blinkDataType_t datatype, int root, blinkComm_t comm) {
  return guardCApi([&] {
    blink::runtime::checkType(datatype);
    registry().use(comm).broadcast(sendbuff, recvbuff, count, datatype, root);
  });
}

blinkResult_t blinkReduce(const void* sendbuff, void* recvbuff, size_t count,
                          blinkDataType_t datatype, blinkRedOp_t op, int root, blinkComm_t comm) {
  return guardCApi(
      [&] { registry().use(comm).reduce(sendbuff, recvbuff, count, datatype, op, root); });
}

blinkResult_t blinkAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                             blinkDataType_t datatype, blinkComm_t comm) {
  return guardCApi([&] {
    blink::runtime::checkType(datatype);
    registry().use(comm).allGather(sendbuff, recvbuff, sendcount, datatype);
  });
}

blinkResult_t blinkReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                 blinkDataType_t datatype, blinkRedOp_t op, blinkComm_t comm) {
  return guardCApi(
      [&] { registry().use(comm).reduceScatter(sendbuff, recvbuff, recvcount, datatype, op); });
}

blinkResult_t blinkAllGatherV(const void* sendbuff, size_t sendcount, void* recvbuff,
                              const size_t* recvcounts, const size_t* displs,
                              blinkDataType_t datatype, blinkComm_t comm) {
  return guardCApi([&] {
    blink::runtime::checkType(datatype);
    registry().use(comm).allGatherV(sendbuff, sendcount, recvbuff, recvcounts, displs, datatype);
  });
}

blinkResult_t blinkGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                          blinkDataType_t datatype, int root, blinkComm_t comm) {
  return guardCApi([&] {
    blink::runtime::checkType(datatype);
    registry().use(comm).gather(sendbuff, recvbuff, sendcount, datatype, root);
  });
}

blinkResult_t blinkReduceScatterV(const void* sendbuff, void* recvbuff, const size_t* recvcounts,
                                  blinkDataType_t datatype, blinkRedOp_t op, blinkComm_t comm) {
  return guardCApi(
      [&] { registry().use(comm).reduceScatterV(sendbuff, recvbuff, recvcounts, datatype, op); });
}

blinkResult_t blinkBarrier(blinkComm_t comm) {
  return guardCApi([&] { registry().use(comm).barrier(); });
}

blinkResult_t blinkMemAlloc(void** ptr, size_t bytes) {
  return guardCApi([&] {
    if (ptr == nullptr) throw Error(blinkInvalidArgument, "blinkMemAlloc: ptr is NULL");
    if (bytes == 0) throw Error(blinkInvalidArgument, "blinkMemAlloc: 0 bytes");
    *ptr = deviceForAllocations().allocate(bytes);
  });
}

blinkResult_t blinkMemFree(void* ptr) {
  return guardCApi([&] {
    if (ptr == nullptr) return;
    blink::device::Device& device = deviceForAllocations();
    if (!device.owns(ptr)) {
      throw Error(blinkInvalidArgument, "blinkMemFree: not memory from blinkMemAlloc");
    }
    device.release(ptr);
  });
}

blinkResult_t blinkMemcpy(void* dst, const void* src, size_t bytes) {
  return guardCApi([&] {
    if (bytes == 0) return;
    if (dst == nullptr || src == nullptr) {
      throw Error(blinkInvalidArgument, "blinkMemcpy: NULL pointer");
    }
    blink::device::Device& device = deviceForAllocations();
    const blink::device::Device::Stream stream = device.createStream();
    try {
      device.copy(dst, src, bytes, stream);
      device.synchronize(stream);
    } catch (...) {
      device.destroyStream(stream);
      throw;
    }
    device.destroyStream(stream);
  });
}

}  // extern "C"
