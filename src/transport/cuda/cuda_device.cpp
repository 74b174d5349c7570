#include "transport/cuda/cuda_device.hpp"

#include <cuda_runtime.h>

#include <cstring>
#include <mutex>
#include <vector>

#include "common/error.hpp"
#include "transport/cuda/reduce_kernels.hpp"

namespace blink::device {
namespace {

void check(cudaError_t rc, const char* call) {
  if (rc != cudaSuccess) {
    throw Error(blinkSystemError, std::string("CUDA: ") + call + ": " + cudaGetErrorString(rc));
  }
}

void checkKernel(blinkResult_t rc, const char* what) {
  if (rc != blinkSuccess)
    throw Error(rc, std::string("CUDA: ") + what + " failed: " + blinkGetLastError());
}

static_assert(sizeof(cudaIpcMemHandle_t) <= sizeof(IpcHandle::bytes));

class CudaDevice final : public Device {
 public:
  CudaDevice(int ordinal, std::string name) : ordinal_(ordinal), name_(std::move(name)) {}
  ~CudaDevice() override {
    cudaSetDevice(ordinal_);
    for (cudaStream_t s : streams_) {
      if (s != nullptr) cudaStreamDestroy(s);
    }
    for (cudaEvent_t e : events_) {
      if (e != nullptr) cudaEventDestroy(e);
    }
  }

  std::string describe() const override {
    return "CUDA device " + std::to_string(ordinal_) + " (" + name_ + ")";
  }
  bool emulated() const override { return false; }

  void* allocate(std::size_t bytes) override {
    current();
    void* p = nullptr;
    check(cudaMalloc(&p, bytes == 0 ? 1 : bytes), "cudaMalloc");
    check(cudaMemset(p, 0, bytes), "cudaMemset");
    // The memset runs on the legacy stream, which Blink's non-blocking streams do not
    // wait for.
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    return p;
  }
  void release(void* p) noexcept override {
    cudaSetDevice(ordinal_);
    cudaFree(p);
  }
  bool owns(const void* p) const override {
    cudaPointerAttributes attributes{};
    if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
      cudaGetLastError();  // clear the sticky-free error of an unknown pointer
      return false;
    }
    return attributes.type == cudaMemoryTypeDevice;
  }

  Stream createStream() override {
    current();
    cudaStream_t s = nullptr;
    // Non-blocking: Blink's streams never wait for the legacy default stream.
    check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    std::lock_guard lock(mutex_);
    return static_cast<Stream>(store(streams_, s));
  }
  Event createEvent() override {
    current();
    cudaEvent_t e = nullptr;
    check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    std::lock_guard lock(mutex_);
    return static_cast<Event>(store(events_, e));
  }
  void destroyStream(Stream stream) noexcept override {
    std::lock_guard lock(mutex_);
    if (stream < 0 || static_cast<std::size_t>(stream) >= streams_.size()) return;
    if (streams_[static_cast<std::size_t>(stream)] != nullptr) {
      cudaStreamDestroy(streams_[static_cast<std::size_t>(stream)]);
    }
    streams_[static_cast<std::size_t>(stream)] = nullptr;
  }
  void destroyEvent(Event event) noexcept override {
    std::lock_guard lock(mutex_);
    if (event < 0 || static_cast<std::size_t>(event) >= events_.size()) return;
    if (events_[static_cast<std::size_t>(event)] != nullptr) {
      cudaEventDestroy(events_[static_cast<std::size_t>(event)]);
    }
    events_[static_cast<std::size_t>(event)] = nullptr;
  }

  void copy(void* dst, const void* src, std::size_t bytes, Stream stream) override {
    if (bytes == 0 || dst == src) return;
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, streamAt(stream)), "cudaMemcpyAsync");
  }
  void reduce(void* dst, const void* a, const void* b, std::size_t count, Reduction r,
              Stream stream) override {
    const blinkRedOp_t op = r.op == blinkAvg ? blinkSum : r.op;
    current();  // a launch goes to the calling thread's current device
    checkKernel(cuda::launchReduce(r.type, op, dst, a, b, count, streamAt(stream)), "reduction");
  }
  void divide(void* data, std::size_t count, blinkDataType_t type, int divisor,
              Stream stream) override {
    current();
    checkKernel(cuda::launchDivide(type, data, divisor, count, streamAt(stream)), "division");
  }

  void record(Event event, Stream stream) override {
    check(cudaEventRecord(eventAt(event), streamAt(stream)), "cudaEventRecord");
  }
  void wait(Stream stream, Event event) override {
    check(cudaStreamWaitEvent(streamAt(stream), eventAt(event), 0), "cudaStreamWaitEvent");
  }
  bool done(Event event) override {
    const cudaError_t rc = cudaEventQuery(eventAt(event));
    if (rc == cudaErrorNotReady) return false;
    check(rc, "cudaEventQuery");
    return true;
  }
  void synchronize(Stream stream) override {
    check(cudaStreamSynchronize(streamAt(stream)), "cudaStreamSynchronize");
  }
  void synchronizeCaller() override {
    current();
    // The caller's work may be on any stream of its own: MPI semantics say the
    // buffers are ready when the call is made, so wait for the device once.
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  }

  std::string peerId() const override {
    char id[32] = {};
    if (cudaDeviceGetPCIBusId(id, sizeof id, ordinal_) != cudaSuccess) {
      cudaGetLastError();
      return "CUDA device " + std::to_string(ordinal_) + " (no PCI bus id)";
    }
    return id;
  }
  bool canAccessPeer(const std::string& peer_id) const override {
    int peer = -1;
    if (cudaDeviceGetByPCIBusId(&peer, peer_id.c_str()) != cudaSuccess) {
      cudaGetLastError();  // a GPU this process does not see (CUDA_VISIBLE_DEVICES)
      return false;
    }
    if (peer == ordinal_) return true;
    int can = 0;
    if (cudaDeviceCanAccessPeer(&can, ordinal_, peer) != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    return can != 0;
  }
  void registerHost(void* p, std::size_t bytes) override {
    current();
    check(cudaHostRegister(p, bytes, cudaHostRegisterPortable), "cudaHostRegister");
  }
  void unregisterHost(void* p) noexcept override {
    cudaSetDevice(ordinal_);
    cudaHostUnregister(p);
  }

  IpcHandle exportMemory(void* base) override {
    current();
    cudaIpcMemHandle_t h{};
    check(cudaIpcGetMemHandle(&h, base), "cudaIpcGetMemHandle");
    IpcHandle out;
    std::memcpy(out.bytes.data(), &h, sizeof h);
    return out;
  }
  void* openMemory(const IpcHandle& handle) override {
    current();
    cudaIpcMemHandle_t h{};
    std::memcpy(&h, handle.bytes.data(), sizeof h);
    void* p = nullptr;
    check(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess), "cudaIpcOpenMemHandle");
    return p;
  }
  void closeMemory(void* p) noexcept override {
    cudaSetDevice(ordinal_);
    cudaIpcCloseMemHandle(p);
  }

 private:
  // The first free number (a destroyed one) or a new one.
  template <typename Handle>
  static std::size_t store(std::vector<Handle>& table, Handle handle) {
    for (std::size_t i = 0; i < table.size(); ++i) {
      if (table[i] == nullptr) {
        table[i] = handle;
        return i;
      }
    }
    table.push_back(handle);
    return table.size() - 1;
  }
  void current() const { check(cudaSetDevice(ordinal_), "cudaSetDevice"); }
  cudaStream_t streamAt(Stream s) {
    std::lock_guard lock(mutex_);
    return streams_.at(static_cast<std::size_t>(s));
  }
  cudaEvent_t eventAt(Event e) {
    std::lock_guard lock(mutex_);
    return events_.at(static_cast<std::size_t>(e));
  }

  int ordinal_;
  std::string name_;
  std::mutex mutex_;
  std::vector<cudaStream_t> streams_;
  std::vector<cudaEvent_t> events_;
};

}  // namespace

std::unique_ptr<Device> makeCudaDevice(int local_rank, std::string& why_not) {
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess || count <= 0) {
    why_not = rc != cudaSuccess ? std::string("cudaGetDeviceCount: ") + cudaGetErrorString(rc)
                                : std::string("no GPU visible");
    cudaGetLastError();
    return nullptr;
  }
  const int ordinal = local_rank % count;
  cudaDeviceProp properties{};
  if (cudaGetDeviceProperties(&properties, ordinal) != cudaSuccess) {
    why_not = "cudaGetDeviceProperties failed";
    return nullptr;
  }
  return std::make_unique<CudaDevice>(ordinal, properties.name);
}

}  // namespace blink::device
