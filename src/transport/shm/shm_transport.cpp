#include "transport/shm/shm_transport.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <optional>

#include "common/error.hpp"
#include "common/log.hpp"
#include "common/mpi_wait.hpp"
#include "transport/shm/cross_memory.hpp"
#include "transport/shm/node_segment.hpp"

namespace blink::transport {
namespace {

constexpr std::uint64_t kMagic = 0x424c494e4b53484dULL;  // "BLINKSHM"
constexpr std::size_t kPage = 4096;

std::size_t roundUp(std::size_t n, std::size_t to) {
  return (n + to - 1) / to * to;
}

class Fifo {
 public:
  Fifo(std::byte* control, std::size_t slots, std::size_t slot_bytes)
      : control_(reinterpret_cast<FifoCounters*>(control)),
        slots_(control + sizeof(FifoCounters)),
        count_(slots),
        slot_bytes_(slot_bytes) {}

  std::atomic_ref<std::uint64_t> written() const { return std::atomic_ref(control_->written); }
  std::atomic_ref<std::uint64_t> consumed() const { return std::atomic_ref(control_->consumed); }
  std::byte* slot(std::uint64_t sequence) const {
    return slots_ + (sequence % count_) * slot_bytes_;
  }
  std::size_t count() const { return count_; }
  std::size_t slotBytes() const { return slot_bytes_; }

 private:
  FifoCounters* control_;
  std::byte* slots_;
  std::size_t count_;
  std::size_t slot_bytes_;
};

// What a single-copy message puts in its one slot.
struct SingleCopyDescriptor {
  std::uint64_t address;  // of the message in the sender's address space
  std::uint64_t bytes;
};

class ShmSendStream final : public SendStream {
 public:
  ShmSendStream(Fifo fifo, const SingleCopyState& single_copy)
      : fifo_(fifo), single_copy_(single_copy), written_(fifo.written().load()) {}

  bool push(const std::byte* data, std::size_t bytes, std::size_t& sent) override {
    if (sent >= bytes) return true;
    std::uint64_t consumed = fifo_.consumed().load(std::memory_order_acquire);
    if (single_copy_.takes(bytes)) {
      return pushDescriptor(data, bytes, sent, consumed);
    }
    while (sent < bytes && written_ - consumed < fifo_.count()) {
      const std::size_t n = std::min(fifo_.slotBytes(), bytes - sent);
      std::memcpy(fifo_.slot(written_), data + sent, n);
      sent += n;
      ++written_;
      fifo_.written().store(written_, std::memory_order_release);
    }
    return sent >= bytes;
  }

 private:
  // Posts the descriptor once a slot is free, then reports the message sent only
  // when the receiver has consumed that slot: until then it reads the source range.
  bool pushDescriptor(const std::byte* data, std::size_t bytes, std::size_t& sent,
                      std::uint64_t consumed) {
    if (!descriptor_posted_) {
      if (written_ - consumed >= fifo_.count()) return false;
      const SingleCopyDescriptor d{reinterpret_cast<std::uint64_t>(data), bytes};
      std::memcpy(fifo_.slot(written_), &d, sizeof d);
      descriptor_sequence_ = written_;
      descriptor_posted_ = true;
      ++written_;
      fifo_.written().store(written_, std::memory_order_release);
      return false;
    }
    if (consumed <= descriptor_sequence_) return false;
    descriptor_posted_ = false;
    sent = bytes;
    return true;
  }

  Fifo fifo_;
  const SingleCopyState& single_copy_;
  std::uint64_t written_;
  bool descriptor_posted_ = false;
  std::uint64_t descriptor_sequence_ = 0;
};

class ShmRecvStream final : public RecvStream {
 public:
  ShmRecvStream(Fifo fifo, SingleCopyState& single_copy, int sender)
      : fifo_(fifo),
        single_copy_(single_copy),
        sender_(sender),
        consumed_(fifo.consumed().load()) {}

  bool pull(std::size_t bytes, std::size_t& received, const PieceSink& sink) override {
    if (received >= bytes) return true;
    if (single_copy_.takes(bytes)) {
      return pullSingleCopy(bytes, received, [this, &sink](std::size_t at, std::size_t n) {
        std::byte* piece = single_copy_.piece_buffer.data();
        readFromSender(piece, at, n);
        sink(at, piece, n);
      });
    }
    std::uint64_t written = fifo_.written().load(std::memory_order_acquire);
    while (received < bytes && consumed_ < written) {
      const std::size_t n = std::min(fifo_.slotBytes(), bytes - received);
      sink(received, fifo_.slot(consumed_), n);
      received += n;
      ++consumed_;
      fifo_.consumed().store(consumed_, std::memory_order_release);
    }
    return received >= bytes;
  }

  bool pullTo(std::size_t bytes, std::size_t& received, std::byte* dest) override {
    if (received >= bytes) return true;
    if (single_copy_.takes(bytes)) {
      return pullSingleCopy(bytes, received, [this, dest](std::size_t at, std::size_t n) {
        readFromSender(dest + at, at, n);
      });
    }
    return RecvStream::pullTo(bytes, received, dest);
  }

 private:
  // One piece per call, so that the executor keeps its other streams moving.
  template <typename ReadPiece>
  bool pullSingleCopy(std::size_t bytes, std::size_t& received, ReadPiece&& read_piece) {
    if (!descriptor_) {
      std::uint64_t written = fifo_.written().load(std::memory_order_acquire);
      if (consumed_ >= written) return false;
      SingleCopyDescriptor d{};
      std::memcpy(&d, fifo_.slot(consumed_), sizeof d);
      if (d.bytes != bytes) {
        throw Error(blinkInternalError, "shared memory: rank " + std::to_string(sender_) +
                                            " sent a message of " + std::to_string(d.bytes) +
                                            " bytes where this rank expects " +
                                            std::to_string(bytes) + " (plans differ?)");
      }
      descriptor_ = d;
    }
    const std::size_t n = std::min(single_copy_.piece_buffer.size(), bytes - received);
    read_piece(received, n);
    received += n;
    if (received < bytes) return false;
    descriptor_.reset();
    ++consumed_;
    fifo_.consumed().store(consumed_, std::memory_order_release);
    return true;
  }

  void readFromSender(std::byte* to, std::size_t at, std::size_t n) const {
    readPeerMemory(single_copy_.pid_of_rank.at(static_cast<std::size_t>(sender_)),
                   descriptor_->address + at, to, n, sender_);
  }

  Fifo fifo_;
  SingleCopyState& single_copy_;
  int sender_;
  std::uint64_t consumed_;
  std::optional<SingleCopyDescriptor> descriptor_;
};

}  // namespace

ShmTransport::ShmTransport(MPI_Comm node_comm, std::vector<int> node_rank_of, int my_comm_rank,
                           ShmOptions options)
    : FifoSegmentTransport(node_comm, std::move(node_rank_of), my_comm_rank,
                           options.timeout_seconds, "shared memory", kMagic),
      options_(options),
      probe_word_(kMagic),
      single_copy_(std::make_unique<SingleCopyState>()) {
  if (options_.slot_bytes == 0 || options_.slot_bytes % 64 != 0 || options_.slots == 0) {
    throw Error(blinkInternalError, "shared memory: slots must be a positive multiple of 64 bytes");
  }
  if (options_.single_copy_min_bytes <= options_.slots * options_.slot_bytes) {
    throw Error(blinkInternalError, "shared memory: single copy must start above the FIFO size");
  }
  single_copy_->min_bytes = options_.single_copy_min_bytes;
}

void ShmTransport::probeSingleCopy() {
  int node_size = 0;
  checkSetUpCall(PMPI_Comm_size(node_comm_, &node_size), "shared-memory", "MPI_Comm_size");
  // Every rank of the node learns every other's pid and probe address, then tries
  // to read each; the path is used only if every rank wants it and every read works.
  const std::uint64_t mine[2] = {static_cast<std::uint64_t>(getpid()),
                                 reinterpret_cast<std::uint64_t>(&probe_word_)};
  std::vector<std::uint64_t> all(2 * static_cast<std::size_t>(node_size));
  allgatherWithin(mine, 2, MPI_UINT64_T, all.data(), node_comm_, options_.timeout_seconds,
                  "shared memory: exchanging process ids");
  int node_rank = 0;
  checkSetUpCall(PMPI_Comm_rank(node_comm_, &node_rank), "shared-memory", "MPI_Comm_rank");
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  const bool wanted = options_.single_copy == SingleCopyMode::On ||
                      (options_.single_copy == SingleCopyMode::Automatic && cpus >= node_size);
  int ok = wanted ? 1 : 0;
  for (int r = 0; r < node_size && ok; ++r) {
    if (r == node_rank) continue;
    const auto at = 2 * static_cast<std::size_t>(r);
    if (!canReadPeerWord(static_cast<long>(all[at]), all[at + 1], kMagic)) {
      BLINK_LOG(Info, "shm: cannot read the memory of node rank "
                          << r << " (pid " << all[at] << "): " << std::strerror(errno)
                          << "; large messages go through slots");
      ok = 0;
    }
  }
  single_copy_->enabled = everyRankOk(ok == 1, node_comm_, options_.timeout_seconds,
                                      "shared memory: agreeing on single copy") &&
                          node_size > 1;
  single_copy_->pid_of_rank.assign(node_rank_of_.size(), 0);
  for (std::size_t r = 0; r < node_rank_of_.size(); ++r) {
    if (node_rank_of_[r] >= 0)
      single_copy_->pid_of_rank[r] =
          static_cast<long>(all[2 * static_cast<std::size_t>(node_rank_of_[r])]);
  }
  if (single_copy_->enabled)
    single_copy_->piece_buffer.resize(options_.slots * options_.slot_bytes);
  if (node_rank == 0 && node_size > 1) {
    const char* why =
        single_copy_->enabled                         ? "on"
        : options_.single_copy == SingleCopyMode::Off ? "off (BLINK_SHM_SINGLE_COPY=0)"
        : !wanted ? "off: more ranks on this node than CPUs, where two copies cost less "
                    "CPU (BLINK_SHM_SINGLE_COPY=1 forces it)"
                  : "off: a rank of this node cannot read the others' memory";
    BLINK_LOG(Info, "shm: single copy (process_vm_readv) for messages of "
                        << single_copy_->min_bytes << " bytes or more, " << node_size
                        << " ranks on " << cpus << " CPUs: " << why);
  }
}

ShmTransport::~ShmTransport() {
  // The streams go first: they refer to single_copy_.
  sends_.clear();
  recvs_.clear();
}

void ShmTransport::prepareSetUp(int) {
  if (!probed_) {
    probeSingleCopy();
    probed_ = true;
  }
}

void ShmTransport::createReceiveFifos(const std::vector<StreamKey>& new_recvs,
                                      ShmSegment& segment) {
  const std::size_t fifo_bytes =
      roundUp(sizeof(FifoCounters) + options_.slots * options_.slot_bytes, kPage);
  const std::size_t header_bytes =
      roundUp(sizeof(FifoSegmentHeader) + new_recvs.size() * sizeof(FifoSegmentEntry), kPage);
  const std::size_t size = header_bytes + new_recvs.size() * fifo_bytes;
  segment = ShmSegment::create(size);
  std::byte* bytes = segment.data();
  auto* header = reinterpret_cast<FifoSegmentHeader*>(bytes);
  header->fifo_count = static_cast<std::uint32_t>(new_recvs.size());
  header->slots = static_cast<std::uint32_t>(options_.slots);
  header->slot_bytes = options_.slot_bytes;
  auto* entries = reinterpret_cast<FifoSegmentEntry*>(header + 1);
  for (std::size_t i = 0; i < new_recvs.size(); ++i) {
    // The entry's offset: the FIFO's counters, followed by its slots.
    const std::size_t offset = header_bytes + i * fifo_bytes;
    entries[i] = {new_recvs[i].peer, new_recvs[i].channel, offset};
    recvs_[new_recvs[i]] =
        std::make_unique<ShmRecvStream>(Fifo(bytes + offset, options_.slots, options_.slot_bytes),
                                        *single_copy_, new_recvs[i].peer);
  }
  bytes_owned_ += size;
}

std::byte* ShmTransport::adoptPeerSegment(int, ShmSegment segment) {
  return peer_segments_.emplace_back(std::move(segment)).data();
}

std::unique_ptr<SendStream> ShmTransport::makeSendStream(StreamKey, std::byte* base,
                                                         std::uint32_t index) {
  const auto* header = reinterpret_cast<const FifoSegmentHeader*>(base);
  const auto* entries = reinterpret_cast<const FifoSegmentEntry*>(header + 1);
  return std::make_unique<ShmSendStream>(
      Fifo(base + entries[index].offset, header->slots, header->slot_bytes), *single_copy_);
}

void ShmTransport::logNewReceiveFifos(std::size_t count) const {
  BLINK_LOG(Trace,
            "shm: " << count << " new receive FIFOs, " << own_segments_.back().size() << " bytes");
}

}  // namespace blink::transport
