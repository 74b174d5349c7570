#include "transport/cuda/device_transport.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "common/datatype_size.hpp"
#include "common/error.hpp"
#include "common/log.hpp"
#include "common/mpi_wait.hpp"
#include "transport/shm/node_segment.hpp"

namespace blink::transport {
namespace {

constexpr std::uint64_t kMagic = 0x424c494e4b435544ULL;  // "BLINKCUD"
constexpr std::size_t kPeerIdBytes = 64;
constexpr std::size_t kPageBytes = 4096;

// A receiver's control segment: the FifoSegmentHeader and its entries (an entry's
// offset: a staged FIFO's host slots, else 0), the IPC handle of the receiver's
// device allocation of slots, then the FIFOs' counters and the host slots.
std::size_t slotsHandleAt(std::size_t fifos) {
  return sizeof(FifoSegmentHeader) + fifos * sizeof(FifoSegmentEntry);
}
device::IpcHandle* slotsHandleOf(std::byte* control, std::size_t fifos) {
  return reinterpret_cast<device::IpcHandle*>(control + slotsHandleAt(fifos));
}
std::size_t countersEnd(std::size_t fifos) {
  return slotsHandleAt(fifos) + sizeof(device::IpcHandle) + 64 + fifos * sizeof(FifoCounters);
}
// The host slots of staged FIFOs start on a page of their own (they get pinned).
std::size_t hostSlotsStart(std::size_t fifos) {
  return (countersEnd(fifos) + kPageBytes - 1) / kPageBytes * kPageBytes;
}
FifoCounters* countersOf(std::byte* control, std::size_t fifos) {
  const auto at =
      reinterpret_cast<std::uintptr_t>(control + slotsHandleAt(fifos) + sizeof(device::IpcHandle));
  return reinterpret_cast<FifoCounters*>((at + 63) / 64 * 64);
}

// One FIFO as either end sees it: counters in host shared memory, slots in device
// memory, one device stream and one event per slot at this end.
class DeviceFifo {
 public:
  // `slots`: the FIFO's device slots (nullptr at the sender of a staged FIFO);
  // `host_slots`: its slots in pinned host memory where the two GPUs cannot reach
  // each other (the sender copies there, the receiver from there to its device
  // slot), else nullptr.
  DeviceFifo(device::Device& device, FifoCounters* counters, std::byte* slots,
             std::byte* host_slots, std::size_t slot_count, std::size_t slot_bytes)
      : device_(device),
        counters_(counters),
        slots_(slots),
        host_slots_(host_slots),
        slot_count_(slot_count),
        slot_bytes_(slot_bytes),
        stream_(device.createStream()),
        chunk_bytes_(slot_count, 0) {
    for (std::size_t i = 0; i < slot_count; ++i) events_.push_back(device.createEvent());
  }

  std::atomic_ref<std::uint64_t> written() const { return std::atomic_ref(counters_->written); }
  std::atomic_ref<std::uint64_t> consumed() const { return std::atomic_ref(counters_->consumed); }
  std::byte* slot(std::uint64_t sequence) const {
    return slots_ + (sequence % slot_count_) * slot_bytes_;
  }
  std::byte* hostSlot(std::uint64_t sequence) const {
    return host_slots_ + (sequence % slot_count_) * slot_bytes_;
  }
  bool staged() const { return host_slots_ != nullptr; }
  // By the stream that owns the FIFO, when it goes (a copy of it in flight is not one).
  void destroy() noexcept {
    try {
      device_.synchronize(stream_);
    } catch (const Error&) {
      // A failed device: nothing left to wait for.
    }
    device_.destroyStream(stream_);
    for (device::Device::Event e : events_) device_.destroyEvent(e);
  }

  device::Device& device_;
  FifoCounters* counters_;
  std::byte* slots_;
  std::byte* host_slots_;
  std::size_t slot_count_;
  std::size_t slot_bytes_;
  device::Device::Stream stream_;
  std::vector<device::Device::Event> events_;  // per slot
  std::vector<std::size_t> chunk_bytes_;       // per slot: the chunk in flight
};

class DeviceSendStream final : public SendStream {
 public:
  DeviceSendStream(DeviceFifo fifo, ChannelPacer& pacer, StreamKey key)
      : fifo_(std::move(fifo)),
        pacer_(pacer),
        key_(key),
        published_(fifo_.written().load()),
        issued_(published_) {}
  ~DeviceSendStream() override { fifo_.destroy(); }
  DeviceSendStream(const DeviceSendStream&) = delete;
  DeviceSendStream& operator=(const DeviceSendStream&) = delete;

  bool push(const std::byte* data, std::size_t bytes, std::size_t& sent) override {
    if (sent >= bytes) return true;
    device::Device& device = fifo_.device_;
    // Chunks whose copies have landed become visible to the receiver, in order.
    const std::uint64_t before = published_;
    while (published_ < issued_ && device.done(fifo_.events_[published_ % fifo_.slot_count_])) {
      sent += fifo_.chunk_bytes_[published_ % fifo_.slot_count_];
      ++published_;
    }
    if (published_ != before) fifo_.written().store(published_, std::memory_order_release);
    // New copies into the slots the receiver has freed, as the pacer lets this
    // channel's share of the link have them.
    const std::uint64_t consumed = fifo_.consumed().load(std::memory_order_acquire);
    bool held = false;
    while (queued_ < bytes && issued_ - consumed < fifo_.slot_count_) {
      const std::size_t n = std::min(fifo_.slot_bytes_, bytes - queued_);
      if (!pacer_.mayIssue(key_.peer, key_.channel, n)) {
        held = true;
        break;
      }
      const std::size_t slot = issued_ % fifo_.slot_count_;
      std::byte* to = fifo_.staged() ? fifo_.hostSlot(issued_) : fifo_.slot(issued_);
      device.copy(to, data + queued_, n, fifo_.stream_);
      device.record(fifo_.events_[slot], fifo_.stream_);
      fifo_.chunk_bytes_[slot] = n;
      queued_ += n;
      ++issued_;
    }
    // A lane stays in the pacer's eye while its copies are on the link and it has
    // more to queue; waiting only for the receiver to free slots, it holds nobody
    // back (the receiver may wait for another lane: never a cycle).
    if (!held && (queued_ >= bytes || issued_ == published_)) {
      pacer_.idle(key_.peer, key_.channel);
    }
    if (sent < bytes) return false;
    queued_ = 0;  // every chunk published: the source may change
    return true;
  }

 private:
  DeviceFifo fifo_;
  ChannelPacer& pacer_;
  StreamKey key_;
  std::uint64_t published_;  // chunks the receiver may read
  std::uint64_t issued_;     // chunks whose copies are queued
  std::size_t queued_ = 0;   // bytes of the current message queued
};

class DeviceRecvStreamImpl final : public DeviceRecvStream {
 public:
  DeviceRecvStreamImpl(DeviceFifo fifo, int sender)
      : fifo_(std::move(fifo)),
        sender_(sender),
        released_(fifo_.consumed().load()),
        issued_(released_) {}
  ~DeviceRecvStreamImpl() override { fifo_.destroy(); }
  DeviceRecvStreamImpl(const DeviceRecvStreamImpl&) = delete;
  DeviceRecvStreamImpl& operator=(const DeviceRecvStreamImpl&) = delete;

  bool pull(std::size_t, std::size_t&, const PieceSink&) override {
    throw Error(blinkInternalError, "device stream from rank " + std::to_string(sender_) +
                                        ": pieces cannot be handed to host code");
  }
  bool pullTo(std::size_t bytes, std::size_t& received, std::byte* dest) override {
    return advance(bytes, received, [&](std::size_t at, const std::byte* piece, std::size_t n) {
      fifo_.device_.copy(dest + at, piece, n, fifo_.stream_);
    });
  }
  bool pullReduce(std::size_t bytes, std::size_t& received, std::byte* dest, const std::byte* first,
                  Reduction reduction) override {
    const std::size_t element = datatypeSize(reduction.type);
    return advance(bytes, received, [&](std::size_t at, const std::byte* piece, std::size_t n) {
      fifo_.device_.reduce(dest + at, first + at, piece, n / element, reduction, fifo_.stream_);
    });
  }

 private:
  template <typename Queue>
  bool advance(std::size_t bytes, std::size_t& received, Queue&& queue) {
    if (received >= bytes) return true;
    device::Device& device = fifo_.device_;
    // Slots whose reductions have run go back to the sender, in order.
    const std::uint64_t before = released_;
    while (released_ < issued_ && device.done(fifo_.events_[released_ % fifo_.slot_count_])) {
      received += fifo_.chunk_bytes_[released_ % fifo_.slot_count_];
      ++released_;
    }
    if (released_ != before) fifo_.consumed().store(released_, std::memory_order_release);
    // Work for every chunk that has arrived.
    const std::uint64_t written = fifo_.written().load(std::memory_order_acquire);
    while (queued_ < bytes && issued_ < written) {
      const std::size_t n = std::min(fifo_.slot_bytes_, bytes - queued_);
      const std::size_t slot = issued_ % fifo_.slot_count_;
      // Staged: host slot -> this device's slot, then the work, in stream order.
      if (fifo_.staged())
        device.copy(fifo_.slot(issued_), fifo_.hostSlot(issued_), n, fifo_.stream_);
      queue(queued_, fifo_.slot(issued_), n);
      device.record(fifo_.events_[slot], fifo_.stream_);
      fifo_.chunk_bytes_[slot] = n;
      queued_ += n;
      ++issued_;
    }
    if (received < bytes) return false;
    queued_ = 0;
    return true;
  }

  DeviceFifo fifo_;
  int sender_;
  std::uint64_t released_;  // chunks handed back to the sender
  std::uint64_t issued_;    // chunks whose work is queued
  std::size_t queued_ = 0;  // bytes of the current message queued
};

}  // namespace

DeviceTransport::DeviceTransport(device::Device& device, MPI_Comm node_comm,
                                 std::vector<int> node_rank_of, int my_comm_rank,
                                 DeviceTransportOptions options)
    : FifoSegmentTransport(node_comm, std::move(node_rank_of), my_comm_rank,
                           options.timeout_seconds, "device transport", kMagic),
      device_(device),
      options_(options) {
  if (options_.slot_bytes == 0 || options_.slot_bytes % 64 != 0 || options_.slots == 0) {
    throw Error(blinkInternalError, "device transport: slots must be a positive multiple of 64");
  }
}

DeviceTransport::~DeviceTransport() {
  sends_.clear();
  recvs_.clear();
  for (void* p : registered_) device_.unregisterHost(p);
  for (PeerMapping& peer : peers_) {
    if (peer.slots != nullptr) device_.closeMemory(peer.slots);
  }
  for (void* p : own_slots_) device_.release(p);
}

void DeviceTransport::prepareSetUp(int node_size) {
  if (peer_reach_.empty()) learnPeerReach(node_size);
}

// Allocates the slots of the new FIFOs on this device and publishes the allocation's
// IPC handle in the control segment.
void DeviceTransport::createReceiveFifos(const std::vector<StreamKey>& new_recvs,
                                         ShmSegment& control) {
  const std::size_t fifos = new_recvs.size();
  const std::size_t fifo_bytes = options_.slots * options_.slot_bytes;
  std::size_t staged = 0;
  for (const StreamKey& k : new_recvs) staged += direct(k.peer) ? 0 : 1;
  const std::size_t host_start = hostSlotsStart(fifos);
  control = ShmSegment::create(staged == 0 ? countersEnd(fifos) : host_start + staged * fifo_bytes);
  std::byte* bytes = control.data();
  if (staged > 0) {
    device_.registerHost(bytes + host_start, staged * fifo_bytes);
    registered_.push_back(bytes + host_start);
  }
  void* slots = device_.allocate(fifos * options_.slots * options_.slot_bytes);
  own_slots_.push_back(slots);
  auto* header = reinterpret_cast<FifoSegmentHeader*>(bytes);
  header->fifo_count = static_cast<std::uint32_t>(fifos);
  header->slots = static_cast<std::uint32_t>(options_.slots);
  header->slot_bytes = options_.slot_bytes;
  *slotsHandleOf(bytes, fifos) = device_.exportMemory(slots);
  auto* entries = reinterpret_cast<FifoSegmentEntry*>(header + 1);
  FifoCounters* counters = countersOf(bytes, fifos);
  std::size_t host_at = host_start;
  for (std::size_t i = 0; i < fifos; ++i) {
    const bool stage = !direct(new_recvs[i].peer);
    entries[i] = {new_recvs[i].peer, new_recvs[i].channel, stage ? host_at : 0};
    recvs_[new_recvs[i]] = std::make_unique<DeviceRecvStreamImpl>(
        DeviceFifo(device_, &counters[i], static_cast<std::byte*>(slots) + i * fifo_bytes,
                   stage ? bytes + host_at : nullptr, options_.slots, options_.slot_bytes),
        new_recvs[i].peer);
    if (stage) host_at += fifo_bytes;
  }
}

// Opens the peer's device allocation, or where its GPU is out of reach, pins its host
// slots instead (copies go there).
std::byte* DeviceTransport::adoptPeerSegment(int peer, ShmSegment control) {
  PeerMapping& mapping = peers_.emplace_back();
  mapping.control = std::move(control);
  std::byte* base = mapping.control.data();
  const auto* header = reinterpret_cast<const FifoSegmentHeader*>(base);
  mapping.staged = !direct(peer);
  if (mapping.staged) {
    const std::size_t host_start = hostSlotsStart(header->fifo_count);
    if (mapping.control.size() <= host_start) {
      throw Error(blinkInternalError, "device transport: rank " + std::to_string(peer) +
                                          " made no staged slots (it reaches this GPU?)");
    }
    device_.registerHost(base + host_start, mapping.control.size() - host_start);
    registered_.push_back(base + host_start);
  } else {
    mapping.slots = device_.openMemory(*slotsHandleOf(base, header->fifo_count));
  }
  return base;
}

std::unique_ptr<SendStream> DeviceTransport::makeSendStream(StreamKey key, std::byte* base,
                                                            std::uint32_t index) {
  const PeerMapping& mapping = peers_.back();  // the segment at base
  const auto* header = reinterpret_cast<const FifoSegmentHeader*>(base);
  const auto* entries = reinterpret_cast<const FifoSegmentEntry*>(header + 1);
  const bool stage = mapping.staged;
  if (stage != (entries[index].offset != 0)) {
    throw Error(blinkInternalError, "device transport: rank " + std::to_string(key.peer) +
                                        " and this rank disagree on staging");
  }
  const std::size_t fifo_bytes = header->slots * header->slot_bytes;
  std::byte* device_slots =
      stage ? nullptr : static_cast<std::byte*>(mapping.slots) + index * fifo_bytes;
  std::byte* host_slots = stage ? base + entries[index].offset : nullptr;
  return std::make_unique<DeviceSendStream>(
      DeviceFifo(device_, &countersOf(base, header->fifo_count)[index], device_slots, host_slots,
                 header->slots, header->slot_bytes),
      pacer_, key);
}

void DeviceTransport::logNewReceiveFifos(std::size_t count) const {
  BLINK_LOG(Trace, "device transport: " << count << " new receive FIFOs of " << options_.slots
                                        << " x " << options_.slot_bytes << " bytes on "
                                        << device_.describe());
}

void DeviceTransport::learnPeerReach(int node_size) {
  // Each rank says which of the node's GPUs its own can reach; a pair goes peer to
  // peer only where both ends can (every rank then decides alike).
  std::vector<char> ids(static_cast<std::size_t>(node_size) * kPeerIdBytes);
  char mine[kPeerIdBytes] = {};
  const std::string id = device_.peerId();
  std::memcpy(mine, id.data(), std::min(id.size(), kPeerIdBytes - 1));
  allgatherWithin(mine, static_cast<int>(kPeerIdBytes), MPI_CHAR, ids.data(), node_comm_,
                  options_.timeout_seconds, "device transport: exchanging device ids");
  std::vector<char> row(static_cast<std::size_t>(node_size));
  for (int r = 0; r < node_size; ++r) {
    row[static_cast<std::size_t>(r)] =
        options_.peer_to_peer &&
                device_.canAccessPeer(&ids[static_cast<std::size_t>(r) * kPeerIdBytes])
            ? 1
            : 0;
  }
  peer_reach_.assign(static_cast<std::size_t>(node_size) * static_cast<std::size_t>(node_size), 0);
  allgatherWithin(row.data(), node_size, MPI_CHAR, peer_reach_.data(), node_comm_,
                  options_.timeout_seconds, "device transport: exchanging peer access");
  checkSetUpCall(PMPI_Comm_rank(node_comm_, &my_node_rank_), "device transport", "MPI_Comm_rank");
  node_size_ = node_size;
  int staged = 0;
  for (int r = 0; r < node_size; ++r) staged += reachable(my_node_rank_, r) ? 0 : 1;
  if (staged > 0) {
    BLINK_LOG(Info, "device transport: " << device_.describe() << " reaches "
                                         << node_size - 1 - staged << " of the node's "
                                         << node_size - 1
                                         << " other GPUs peer to peer; copies to and from the "
                                            "others are staged through pinned host memory");
  }
}

bool DeviceTransport::reachable(int a, int b) const {
  const auto n = static_cast<std::size_t>(node_size_);
  return peer_reach_[static_cast<std::size_t>(a) * n + static_cast<std::size_t>(b)] != 0 &&
         peer_reach_[static_cast<std::size_t>(b) * n + static_cast<std::size_t>(a)] != 0;
}

bool DeviceTransport::direct(int comm_peer) const {
  return reachable(my_node_rank_, node_rank_of_.at(static_cast<std::size_t>(comm_peer)));
}

void DeviceTransport::paceByShares(const std::vector<double>& shares) {
  pacer_.setShares(shares);
}

}  // namespace blink::transport
