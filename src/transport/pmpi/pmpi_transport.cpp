#include "transport/pmpi/pmpi_transport.hpp"

#include <algorithm>
#include <vector>

#include "common/backoff.hpp"
#include "common/error.hpp"

namespace blink::transport {
namespace {

// Messages are chunks of a plan, far below INT_MAX bytes; anything larger is
// split into pieces of this size, each its own MPI message on the same tag.
constexpr std::size_t kMaxPiece = std::size_t{1} << 30;

void checkMpi(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw Error(blinkSystemError, std::string("pmpi transport: ") + what);
}

// One message piece in flight on a (peer, tag); a request still pending when the
// stream dies (after a timeout) is cancelled, not leaked.
class PendingPiece {
 public:
  PendingPiece(MPI_Comm comm, int peer, int tag) : comm_(comm), peer_(peer), tag_(tag) {}
  ~PendingPiece() {
    if (request_ != MPI_REQUEST_NULL) {
      PMPI_Cancel(&request_);
      PMPI_Request_free(&request_);
    }
  }
  PendingPiece(const PendingPiece&) = delete;
  PendingPiece& operator=(const PendingPiece&) = delete;

  bool idle() const { return request_ == MPI_REQUEST_NULL; }
  std::size_t bytes() const { return piece_; }
  void send(const std::byte* data, std::size_t bytes) {
    piece_ = bytes;
    checkMpi(PMPI_Isend(data, static_cast<int>(bytes), MPI_BYTE, peer_, tag_, comm_, &request_),
             "MPI_Isend");
  }
  void receive(std::byte* data, std::size_t bytes) {
    piece_ = bytes;
    checkMpi(PMPI_Irecv(data, static_cast<int>(bytes), MPI_BYTE, peer_, tag_, comm_, &request_),
             "MPI_Irecv");
  }
  // True once the piece has completed (the request is then released).
  bool done() {
    int flag = 0;
    checkMpi(PMPI_Test(&request_, &flag, MPI_STATUS_IGNORE), "MPI_Test");
    return flag != 0;
  }

 private:
  MPI_Comm comm_;
  int peer_, tag_;
  MPI_Request request_ = MPI_REQUEST_NULL;
  std::size_t piece_ = 0;
};

class PmpiSendStream final : public SendStream {
 public:
  PmpiSendStream(MPI_Comm comm, int peer, int tag) : piece_(comm, peer, tag) {}

  bool push(const std::byte* data, std::size_t bytes, std::size_t& sent) override {
    while (sent < bytes) {
      if (piece_.idle()) piece_.send(data + sent, std::min(kMaxPiece, bytes - sent));
      if (!piece_.done()) return false;
      sent += piece_.bytes();
    }
    return true;
  }

 private:
  PendingPiece piece_;
};

class PmpiRecvStream final : public RecvStream {
 public:
  PmpiRecvStream(MPI_Comm comm, int peer, int tag) : piece_(comm, peer, tag) {}

  bool pull(std::size_t bytes, std::size_t& received, const PieceSink& sink) override {
    while (received < bytes) {
      if (piece_.idle()) {
        const std::size_t n = std::min(kMaxPiece, bytes - received);
        if (staging_.size() < n) staging_.resize(n);
        piece_.receive(staging_.data(), n);
      }
      if (!piece_.done()) return false;
      sink(received, staging_.data(), piece_.bytes());
      received += piece_.bytes();
    }
    return true;
  }

 private:
  PendingPiece piece_;
  std::vector<std::byte> staging_;
};

}  // namespace

PmpiTransport::PmpiTransport(MPI_Comm comm) : comm_(comm) {
  int* ub = nullptr;
  int flag = 0;
  if (PMPI_Comm_get_attr(comm_, MPI_TAG_UB, &ub, &flag) == MPI_SUCCESS && flag && ub != nullptr) {
    tag_ub_ = *ub;
  }
}

PmpiTransport::~PmpiTransport() = default;

void PmpiTransport::ensureStreams(const std::vector<StreamKey>& sends,
                                  const std::vector<StreamKey>& recvs) {
  for (const StreamKey& k : sends) {
    if (k.channel < 0 || k.channel > tag_ub_) {
      throw Error(blinkUnsupported,
                  "pmpi transport: channel " + std::to_string(k.channel) + " exceeds MPI_TAG_UB");
    }
    if (!sends_.count(k)) sends_[k] = std::make_unique<PmpiSendStream>(comm_, k.peer, k.channel);
  }
  for (const StreamKey& k : recvs) {
    if (k.channel < 0 || k.channel > tag_ub_) {
      throw Error(blinkUnsupported,
                  "pmpi transport: channel " + std::to_string(k.channel) + " exceeds MPI_TAG_UB");
    }
    if (!recvs_.count(k)) recvs_[k] = std::make_unique<PmpiRecvStream>(comm_, k.peer, k.channel);
  }
}

SendStream& PmpiTransport::sendStream(StreamKey key) {
  auto it = sends_.find(key);
  if (it == sends_.end()) throw Error(blinkInternalError, "pmpi transport: no such send stream");
  return *it->second;
}

RecvStream& PmpiTransport::recvStream(StreamKey key) {
  auto it = recvs_.find(key);
  if (it == recvs_.end()) throw Error(blinkInternalError, "pmpi transport: no such receive stream");
  return *it->second;
}

bool PmpiTransport::movesAllAtOnce(std::size_t largest_bytes) const {
  return largest_bytes <= kMaxPiece;
}

int PmpiTransport::moveAllAtOnce(const WholeMessage* messages, int count, Backoff& backoff) {
  batch_.assign(static_cast<std::size_t>(count), MPI_REQUEST_NULL);
  auto cancelPending = [&] {
    for (MPI_Request& r : batch_) {
      if (r != MPI_REQUEST_NULL) {
        PMPI_Cancel(&r);
        PMPI_Request_free(&r);
      }
    }
  };
  for (int i = 0; i < count; ++i) {
    const WholeMessage& m = messages[i];
    if ((m.send != nullptr ? sends_.count(m.key) : recvs_.count(m.key)) == 0) {
      cancelPending();
      throw Error(blinkInternalError, "pmpi transport: no such stream");
    }
    const int n = static_cast<int>(m.bytes);
    MPI_Request* request = &batch_[static_cast<std::size_t>(i)];
    const int rc = m.send != nullptr
                       ? PMPI_Isend(m.send, n, MPI_BYTE, m.key.peer, m.key.channel, comm_, request)
                       : PMPI_Irecv(m.recv, n, MPI_BYTE, m.key.peer, m.key.channel, comm_, request);
    if (rc != MPI_SUCCESS) {
      cancelPending();
      checkMpi(rc, m.send != nullptr ? "MPI_Isend" : "MPI_Irecv");
    }
  }
  indices_.resize(static_cast<std::size_t>(count));
  for (int left = count; left > 0;) {
    int done = 0;
    if (const int rc =
            PMPI_Testsome(count, batch_.data(), &done, indices_.data(), MPI_STATUSES_IGNORE);
        rc != MPI_SUCCESS) {
      cancelPending();
      checkMpi(rc, "MPI_Testsome");
    }
    if (done == MPI_UNDEFINED) break;  // no active request left
    if (done > 0) {
      left -= done;
      backoff.progressed();
    } else if (!backoff.idle()) {
      int pending = 0;
      while (batch_[static_cast<std::size_t>(pending)] == MPI_REQUEST_NULL) ++pending;
      cancelPending();
      return pending;
    }
  }
  return -1;
}

}  // namespace blink::transport
