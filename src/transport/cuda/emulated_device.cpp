#include "transport/cuda/emulated_device.hpp"

#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <shared_mutex>
#include <thread>
#include <vector>

#include "common/error.hpp"
#include "transport/shm/shm_segment.hpp"

namespace blink::device {
namespace {

// Streams and events are made once and kept; a fixed capacity keeps the tables from
// moving while other threads read them.
constexpr std::size_t kMaxStreams = 4096;
constexpr std::size_t kMaxEvents = 16384;

struct EventState {
  std::atomic<std::uint64_t> recorded{0};   // records asked for (host side)
  std::atomic<std::uint64_t> completed{0};  // records the stream has passed
  std::mutex mutex;
  std::condition_variable passed;

  void complete(std::uint64_t generation) {
    {
      std::lock_guard lock(mutex);
      if (completed.load() < generation) completed.store(generation);
    }
    passed.notify_all();
  }
  void waitFor(std::uint64_t generation) {
    std::unique_lock lock(mutex);
    passed.wait(lock, [&] { return completed.load() >= generation; });
  }
};

class StreamThread {
 public:
  explicit StreamThread(int max_delay_us) : max_delay_us_(max_delay_us) {
    worker_ = std::thread([this] { run(); });
  }
  ~StreamThread() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    worker_.join();
  }
  StreamThread(const StreamThread&) = delete;
  StreamThread& operator=(const StreamThread&) = delete;

  void enqueue(std::function<void()> work) {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(work));
    }
    changed_.notify_all();
  }

  void drain() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return queue_.empty() && !running_; });
  }

 private:
  void run() {
    std::minstd_rand random(static_cast<unsigned>(
        std::hash<std::thread::id>()(std::this_thread::get_id()) ^
        static_cast<std::size_t>(std::chrono::steady_clock::now().time_since_epoch().count())));
    std::unique_lock lock(mutex_);
    for (;;) {
      changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and all work done
      std::function<void()> work = std::move(queue_.front());
      queue_.pop_front();
      running_ = true;
      lock.unlock();
      if (max_delay_us_ > 0) {
        std::this_thread::sleep_for(std::chrono::microseconds(
            std::uniform_int_distribution<int>(0, max_delay_us_)(random)));
      }
      work();
      lock.lock();
      running_ = false;
      changed_.notify_all();
    }
  }

  int max_delay_us_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::function<void()>> queue_;
  bool running_ = false;
  bool stopping_ = false;
  std::thread worker_;
};

// Where the emulated "IPC handle" points: a segment's name and its size, and the
// GPU whose memory it is.
struct EmulatedHandle {
  char name[transport::ShmSegment::kMaxNameBytes];
  std::uint64_t bytes;
  std::int32_t gpu;
};

constexpr const char* kPeerIdPrefix = "emulated GPU ";
static_assert(sizeof(EmulatedHandle) <= sizeof(IpcHandle::bytes));

class EmulatedDevice final : public Device {
 public:
  EmulatedDevice(EmulationOptions options, HostKernels kernels)
      : max_delay_us_(options.max_delay_us),
        gpu_(options.gpu),
        peer_group_(options.peer_group),
        fail_ipc_(options.fail_ipc),
        kernels_(kernels) {
    streams_.resize(kMaxStreams);
    events_.resize(kMaxEvents);
  }
  ~EmulatedDevice() override {
    for (auto& s : streams_) s.reset();  // joins the threads before the memory goes
  }

  std::string describe() const override {
    return "emulated device (threads as streams" +
           (max_delay_us_ > 0 ? ", random delays up to " + std::to_string(max_delay_us_) + " us"
                              : std::string()) +
           ")";
  }
  bool emulated() const override { return true; }

  std::string peerId() const override { return kPeerIdPrefix + std::to_string(gpu_); }
  bool canAccessPeer(const std::string& peer_id) const override {
    const std::string prefix = kPeerIdPrefix;
    if (peer_id.rfind(prefix, 0) != 0) return false;
    return reaches(std::atoi(peer_id.c_str() + prefix.size()));
  }
  void registerHost(void*, std::size_t) override {}
  void unregisterHost(void*) noexcept override {}

  void* allocate(std::size_t bytes) override {
    Mapping mapping = Mapping::make(transport::ShmSegment::create(bytes == 0 ? 1 : bytes));
    void* p = mapping.user.data();
    std::unique_lock lock(memory_mutex_);
    own_.emplace(p, std::move(mapping));
    return p;
  }
  void release(void* p) noexcept override {
    std::unique_lock lock(memory_mutex_);
    own_.erase(p);
  }
  bool owns(const void* p) const override {
    std::shared_lock lock(memory_mutex_);
    return find(own_, p) != nullptr || find(opened_, p) != nullptr;
  }

  Stream createStream() override {
    std::lock_guard lock(create_mutex_);
    std::size_t id = stream_count_.load();
    if (!free_streams_.empty()) {
      id = free_streams_.back();
      free_streams_.pop_back();
    } else if (id >= kMaxStreams) {
      throw Error(blinkSystemError, "emulated device: too many streams");
    }
    streams_[id] = std::make_unique<StreamThread>(max_delay_us_);
    if (id == stream_count_.load()) stream_count_.store(id + 1);
    return static_cast<Stream>(id);
  }
  Event createEvent() override {
    std::lock_guard lock(create_mutex_);
    std::size_t id = event_count_.load();
    if (!free_events_.empty()) {
      id = free_events_.back();
      free_events_.pop_back();
    } else if (id >= kMaxEvents) {
      throw Error(blinkSystemError, "emulated device: too many events");
    }
    events_[id] = std::make_unique<EventState>();
    if (id == event_count_.load()) event_count_.store(id + 1);
    return static_cast<Event>(id);
  }
  void destroyStream(Stream stream) noexcept override {
    std::lock_guard lock(create_mutex_);
    if (stream < 0 || static_cast<std::size_t>(stream) >= stream_count_.load()) return;
    if (!streams_[static_cast<std::size_t>(stream)]) return;
    streams_[static_cast<std::size_t>(stream)].reset();  // runs what is queued, then ends
    free_streams_.push_back(static_cast<std::size_t>(stream));
  }
  void destroyEvent(Event event) noexcept override {
    std::lock_guard lock(create_mutex_);
    if (event < 0 || static_cast<std::size_t>(event) >= event_count_.load()) return;
    if (!events_[static_cast<std::size_t>(event)]) return;
    events_[static_cast<std::size_t>(event)].reset();
    free_events_.push_back(static_cast<std::size_t>(event));
  }

  void copy(void* dst, const void* src, std::size_t bytes, Stream stream) override {
    if (bytes == 0 || dst == src) return;
    dst = worker(dst);
    src = worker(src);
    at(stream).enqueue([dst, src, bytes] { std::memcpy(dst, src, bytes); });
  }
  void reduce(void* dst, const void* a, const void* b, std::size_t count, Reduction r,
              Stream stream) override {
    if (count == 0) return;
    dst = worker(dst);
    a = worker(a);
    b = worker(b);
    const std::size_t bytes = count * kernels_.element_size(r.type);
    const HostKernels k = kernels_;
    at(stream).enqueue([=] {
      const blinkRedOp_t op = r.op == blinkAvg ? blinkSum : r.op;
      if (dst == b && dst != a) {
        // dst = op(a, dst): the host kernel takes the accumulated operand in place.
        std::vector<std::byte> incoming(bytes);
        std::memcpy(incoming.data(), b, bytes);
        std::memcpy(dst, a, bytes);
        k.reduce_into(dst, incoming.data(), count, r.type, op);
        return;
      }
      if (dst != a) std::memcpy(dst, a, bytes);
      k.reduce_into(dst, b, count, r.type, op);
    });
  }
  void divide(void* data, std::size_t count, blinkDataType_t type, int divisor,
              Stream stream) override {
    if (count == 0) return;
    data = worker(data);
    const HostKernels k = kernels_;
    at(stream).enqueue([=] { k.divide_by(data, count, type, divisor); });
  }

  void record(Event event, Stream stream) override {
    EventState& e = eventAt(event);
    const std::uint64_t generation = e.recorded.fetch_add(1) + 1;
    at(stream).enqueue([&e, generation] { e.complete(generation); });
  }
  void wait(Stream stream, Event event) override {
    EventState& e = eventAt(event);
    const std::uint64_t generation = e.recorded.load();
    if (generation == 0) return;
    at(stream).enqueue([&e, generation] { e.waitFor(generation); });
  }
  bool done(Event event) override {
    EventState& e = eventAt(event);
    return e.completed.load() >= e.recorded.load();
  }
  void synchronize(Stream stream) override { at(stream).drain(); }
  void synchronizeCaller() override {}  // the caller's writes are host writes, done

  IpcHandle exportMemory(void* base) override {
    std::shared_lock lock(memory_mutex_);
    auto it = own_.find(base);
    if (it == own_.end()) {
      throw Error(blinkInternalError, "emulated device: exporting memory it did not allocate");
    }
    EmulatedHandle h{};
    std::memcpy(h.name, it->second.user.name().c_str(), it->second.user.name().size() + 1);
    h.bytes = it->second.user.size();
    h.gpu = gpu_;
    IpcHandle out;
    std::memcpy(out.bytes.data(), &h, sizeof h);
    return out;
  }
  void* openMemory(const IpcHandle& handle) override {
    EmulatedHandle h{};
    std::memcpy(&h, handle.bytes.data(), sizeof h);
    h.name[sizeof h.name - 1] = '\0';
    if (fail_ipc_) {
      throw Error(blinkSystemError,
                  "emulated device: opening a peer's memory failed "
                  "(BLINK_DEVICE_EMULATION_FAIL_IPC=1)");
    }
    if (!reaches(h.gpu)) {
      throw Error(blinkSystemError,
                  "emulated device: GPU " + std::to_string(gpu_) + " has no peer access to GPU " +
                      std::to_string(h.gpu) +
                      " (BLINK_DEVICE_EMULATION_PEER_GROUP=" + std::to_string(peer_group_) + ")");
    }
    Mapping mapping = Mapping::make(transport::ShmSegment::open(h.name));
    void* p = mapping.user.data();
    std::unique_lock lock(memory_mutex_);
    opened_.emplace(p, std::move(mapping));
    return p;
  }
  void closeMemory(void* p) noexcept override {
    std::unique_lock lock(memory_mutex_);
    opened_.erase(p);
  }

 private:
  // Device memory is mapped twice: the address handed out (user) has no access at
  // all, so host code that touches device memory instead of queuing work on a
  // stream crashes here as it would on a GPU; the streams work on a second mapping
  // of the same pages (worker).
  struct Mapping {
    transport::ShmSegment user;
    transport::ShmSegment worker;

    static Mapping make(transport::ShmSegment segment) {
      Mapping m;
      m.worker = transport::ShmSegment::open(segment.name());
      if (mprotect(segment.data(), segment.size(), PROT_NONE) != 0) {
        throw Error(blinkSystemError, "emulated device: mprotect failed");
      }
      m.user = std::move(segment);
      return m;
    }
  };
  using Segments = std::map<const void*, Mapping, std::less<>>;

  static const Mapping* find(const Segments& segments, const void* p) {
    auto it = segments.upper_bound(p);
    if (it == segments.begin()) return nullptr;
    --it;
    const auto* base = static_cast<const std::byte*>(it->first);
    if (static_cast<const std::byte*>(p) >= base + it->second.user.size()) return nullptr;
    return &it->second;
  }

  // The stream threads' address of p (p itself when it is host memory).
  template <typename T>
  T* worker(T* p) const {
    std::shared_lock lock(memory_mutex_);
    const Mapping* m = find(own_, p);
    if (m == nullptr) m = find(opened_, p);
    if (m == nullptr) return p;
    const auto offset =
        static_cast<std::size_t>(reinterpret_cast<const std::byte*>(p) - m->user.data());
    return reinterpret_cast<T*>(m->worker.data() + offset);
  }

  StreamThread& at(Stream s) {
    if (s < 0 || static_cast<std::size_t>(s) >= stream_count_.load() ||
        !streams_[static_cast<std::size_t>(s)]) {
      throw Error(blinkInternalError, "emulated device: no stream " + std::to_string(s));
    }
    return *streams_[static_cast<std::size_t>(s)];
  }
  EventState& eventAt(Event e) {
    if (e < 0 || static_cast<std::size_t>(e) >= event_count_.load() ||
        !events_[static_cast<std::size_t>(e)]) {
      throw Error(blinkInternalError, "emulated device: no event " + std::to_string(e));
    }
    return *events_[static_cast<std::size_t>(e)];
  }

  bool reaches(int gpu) const {
    return peer_group_ <= 0 || gpu == gpu_ || gpu / peer_group_ == gpu_ / peer_group_;
  }

  int max_delay_us_;
  int gpu_;
  int peer_group_;
  bool fail_ipc_;
  HostKernels kernels_;
  mutable std::shared_mutex memory_mutex_;
  Segments own_;     // allocations (named: a peer may open them until released)
  Segments opened_;  // peers' allocations mapped here
  std::mutex create_mutex_;
  std::vector<std::unique_ptr<StreamThread>> streams_;
  std::vector<std::unique_ptr<EventState>> events_;
  std::vector<std::size_t> free_streams_, free_events_;  // numbers to reuse
  std::atomic<std::size_t> stream_count_{0};
  std::atomic<std::size_t> event_count_{0};
};

}  // namespace

std::unique_ptr<Device> makeEmulatedDevice(EmulationOptions options, HostKernels kernels) {
  return std::make_unique<EmulatedDevice>(options, kernels);
}

}  // namespace blink::device
