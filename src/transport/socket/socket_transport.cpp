#include "transport/socket/socket_transport.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <random>

#include "common/backoff.hpp"
#include "common/error.hpp"
#include "common/mpi_wait.hpp"

namespace blink::transport {
namespace {

using Clock = std::chrono::steady_clock;
// Dialling an address that drops packets would otherwise wait for TCP's SYN retries
// (minutes); a peer that listens answers within milliseconds.
constexpr double kDialSeconds = 10.0;

struct Hello {
  std::uint64_t token;
  std::int32_t rank;
  std::int32_t channel;
};

[[noreturn]] void failSocket(const std::string& what, int error) {
  throw Error(blinkSystemError, "sockets transport: " + what + ": " + std::strerror(error));
}

Clock::time_point after(double seconds) {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

// Waits until fd is ready for `events`; false once `deadline` has passed.
bool waitFor(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, events, 0};
    const int rc = poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (rc > 0) return true;
    if (rc < 0 && errno != EINTR) failSocket("poll", errno);
  }
}

// Moves all n bytes over a non-blocking fd before `deadline`; false past it. Throws
// where the connection fails or is closed.
bool transferAll(int fd, void* data, std::size_t n, bool sending, Clock::time_point deadline,
                 const std::string& what) {
  auto* bytes = static_cast<char*>(data);
  std::size_t done = 0;
  while (done < n) {
    const ssize_t got = sending ? send(fd, bytes + done, n - done, MSG_NOSIGNAL | MSG_DONTWAIT)
                                : recv(fd, bytes + done, n - done, MSG_DONTWAIT);
    if (got > 0) {
      done += static_cast<std::size_t>(got);
    } else if (got == 0) {
      throw Error(blinkSystemError, "sockets transport: " + what + ": the connection was closed");
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (!waitFor(fd, sending ? POLLOUT : POLLIN, deadline)) return false;
    } else if (errno != EINTR) {
      failSocket(what, errno);
    }
  }
  return true;
}

void noDelay(int fd) {
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// How a wait goes: kSweeps sweeps of every pending message (a system call each), then
// kYieldingSweeps more with the core yielded between them (a no-op where nothing else
// waits for it), then sleeping in the kernel until the bytes come. Measured between
// emulated hosts on two cores, 8-byte and 4 KiB calls one at a time against Open MPI's:
// sleeping after 32 plain sweeps lost to MPI on three single-rank hosts (an AllReduce
// through a leader 30 against 28 us: the sweeps keep a core from the rank that has to
// send); sleeping at once, or after 8 sweeps, lost some calls between two hosts (a
// wake-up where the bytes were a microsecond away); 4 + 28 beat MPI in both, as did
// 4 + 64 and 0 + 32 within the noise.
constexpr unsigned kSweeps = 4;
constexpr unsigned kYieldingSweeps = 28;

// How long a receive sleeps in the kernel at most before the caller's deadline and
// MPI's progress (Backoff) get their turn.
constexpr auto kWaitSlice = std::chrono::milliseconds(1);

// A connection made: its moves say MSG_DONTWAIT where they must not wait, so the
// descriptor can block, and a receive that waits sleeps in recv(2) itself (one system
// call, woken by the bytes: with three ranks on two cores an AllReduce through a
// leader took 14 us so against 17 us for recv, poll, recv and 20 us for MPI's own).
void makeWaitable(int fd) {
  const int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) failSocket("fcntl", errno);
  timeval slice{0, static_cast<suseconds_t>(
                       std::chrono::duration_cast<std::chrono::microseconds>(kWaitSlice).count())};
  if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &slice, sizeof slice) != 0) {
    failSocket("setsockopt SO_RCVTIMEO", errno);
  }
}

}  // namespace

// The connection to one peer on one channel, both directions (a reply's bytes carry
// the acknowledgement of the request's, as over Open MPI's one connection per pair).
class SocketConnection {
 public:
  SocketConnection(int fd, std::string peer_name) : fd_(fd), peer_name_(std::move(peer_name)) {}
  ~SocketConnection() { close(fd_); }
  SocketConnection(const SocketConnection&) = delete;
  SocketConnection& operator=(const SocketConnection&) = delete;
  int fd() const { return fd_; }

  // Bytes moved now (0: none could), without blocking.
  std::size_t sendSome(const std::byte* data, std::size_t n) const {
    for (;;) {
      const ssize_t sent = send(fd_, data, n, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (sent >= 0) return static_cast<std::size_t>(sent);
      if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
      if (errno != EINTR) lost("sending to", errno);
    }
  }
  // Bytes that have arrived (0: none yet); `waiting`: sleeps in the kernel until some
  // arrive or kWaitSlice passes (a signal ends the sleep too).
  std::size_t receiveSome(std::byte* data, std::size_t n, bool waiting = false) const {
    for (;;) {
      const ssize_t got = recv(fd_, data, n, waiting ? 0 : MSG_DONTWAIT);
      if (got > 0) return static_cast<std::size_t>(got);
      if (got == 0) lost("receiving from", 0);
      if (errno == EAGAIN || errno == EWOULDBLOCK || (errno == EINTR && waiting)) return 0;
      if (errno != EINTR) lost("receiving from", errno);
    }
  }

 private:
  [[noreturn]] void lost(const char* what, int error) const {
    throw Error(blinkSystemError,
                std::string("sockets transport: ") + what + " " + peer_name_ + " failed: " +
                    (error == 0 ? std::string("it closed the connection (did that process die?)")
                                : std::string(std::strerror(error))));
  }

  int fd_;
  std::string peer_name_;
};

namespace {

class SocketSendStream final : public SendStream {
 public:
  explicit SocketSendStream(const SocketConnection& connection) : connection_(connection) {}
  bool push(const std::byte* data, std::size_t bytes, std::size_t& sent) override {
    while (sent < bytes) {
      const std::size_t n = connection_.sendSome(data + sent, bytes - sent);
      if (n == 0) return false;
      sent += n;
    }
    return true;
  }

 private:
  const SocketConnection& connection_;
};

class SocketRecvStream final : public RecvStream {
 public:
  explicit SocketRecvStream(const SocketConnection& connection) : connection_(connection) {}
  bool pull(std::size_t bytes, std::size_t& received, const PieceSink& sink) override {
    constexpr std::size_t kPiece = std::size_t{256} << 10;
    while (received < bytes) {
      if (staging_.empty()) staging_.resize(kPiece);
      // Never past this message: the next one's bytes follow on the same connection.
      const std::size_t n =
          connection_.receiveSome(staging_.data(), std::min(kPiece, bytes - received));
      if (n == 0) return false;
      sink(received, staging_.data(), n);
      received += n;
    }
    return true;
  }
  // Waits (a slice at most) for the next bytes of the message; true where some came.
  bool pullWaiting(std::size_t bytes, std::size_t& received, std::byte* dest) {
    const std::size_t n = connection_.receiveSome(dest + received, bytes - received, true);
    received += n;
    return n > 0;
  }
  bool pullTo(std::size_t bytes, std::size_t& received, std::byte* dest) override {
    while (received < bytes) {
      const std::size_t n = connection_.receiveSome(dest + received, bytes - received);
      if (n == 0) return false;
      received += n;
    }
    return true;
  }

 private:
  const SocketConnection& connection_;
  std::vector<std::byte> staging_;
};

}  // namespace

SocketTransport::SocketTransport(const SocketSetUp& set_up)
    : comm_(set_up.comm),
      rank_(set_up.rank),
      host_of_(set_up.host_of),
      timeout_seconds_(set_up.timeout_seconds) {
  std::unique_ptr<Error> failure;
  mine_ = upIpv4AddressesPreferredFirst(set_up.preferred_address);
  if (mine_.empty()) {
    failure = std::make_unique<Error>(
        blinkSystemError, "sockets transport: this host has no IPv4 interface that is up");
  }
  agreeAllOk(comm_, failure.get(), "sockets transport: finding this host's addresses",
             timeout_seconds_);
}

SocketTransport::~SocketTransport() {
  sends_.clear();
  recvs_.clear();
  connections_.clear();
  closeListener();
}

void SocketTransport::closeListener() {
  if (listener_ >= 0) close(listener_);
  listener_ = -1;
}

SocketTransport::Published SocketTransport::listen() {
  Published mine;
  listener_ = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listener_ < 0) failSocket("socket", errno);
  sockaddr_in any{};
  any.sin_family = AF_INET;
  any.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t length = sizeof any;
  if (bind(listener_, reinterpret_cast<sockaddr*>(&any), sizeof any) != 0) {
    failSocket("bind", errno);
  }
  if (::listen(listener_, SOMAXCONN) != 0) failSocket("listen", errno);
  if (getsockname(listener_, reinterpret_cast<sockaddr*>(&any), &length) != 0) {
    failSocket("getsockname", errno);
  }
  mine.port = ntohs(any.sin_port);
  mine.count = static_cast<std::uint16_t>(std::min<std::size_t>(mine_.size(), kMaxAddresses));
  for (int k = 0; k < mine.count; ++k) {
    mine.address[k] = mine_[static_cast<std::size_t>(k)].address;
    mine.netmask[k] = mine_[static_cast<std::size_t>(k)].netmask;
  }
  std::random_device entropy;
  mine.token = (std::uint64_t{entropy()} << 32) ^ entropy();
  return mine;
}

std::string SocketTransport::details() const {
  return "TCP, one connection per peer and channel; this rank's addresses: " +
         dottedAddress(mine_.front().address) + " and " + std::to_string(mine_.size() - 1) +
         " other(s)";
}

std::string SocketTransport::describe(int rank) const {
  return "rank " + std::to_string(rank) + " on host '" + host_of_[static_cast<std::size_t>(rank)] +
         "'";
}

int SocketTransport::dial(StreamKey key) const {
  const Published& peer = published_[static_cast<std::size_t>(key.peer)];
  std::vector<Ipv4Interface> addresses(peer.count);
  for (int k = 0; k < peer.count; ++k) {
    addresses[static_cast<std::size_t>(k)] = {peer.address[k], peer.netmask[k], {}};
  }
  const int pick = chooseAddress(mine_, addresses);
  if (pick < 0) {
    throw Error(blinkSystemError, "sockets transport: " + describe(key.peer) +
                                      " has no IPv4 address that is not also one of this host's");
  }
  const std::string where = describe(key.peer) + " at " + dottedAddress(peer.address[pick]) + ":" +
                            std::to_string(peer.port);
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) failSocket("socket", errno);
  try {
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(peer.port);
    to.sin_addr.s_addr = htonl(peer.address[pick]);
    if (connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
      if (errno != EINPROGRESS) failSocket("connecting to " + where, errno);
      if (!waitFor(fd, POLLOUT, after(std::min(kDialSeconds, timeout_seconds_)))) {
        throw Error(blinkSystemError, "sockets transport: connecting to " + where + " timed out");
      }
      int error = 0;
      socklen_t length = sizeof error;
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
      if (error != 0) failSocket("connecting to " + where, error);
    }
    noDelay(fd);
    Hello hello{token_, rank_, key.channel};
    if (!transferAll(fd, &hello, sizeof hello, true, after(timeout_seconds_),
                     "greeting " + where)) {
      throw Error(blinkTimeout, "sockets transport: greeting " + where + " timed out");
    }
  } catch (...) {
    close(fd);
    throw;
  }
  return fd;
}

void SocketTransport::acceptStreams(std::map<StreamKey, int>& expected) const {
  std::size_t missing = expected.size();
  const Clock::time_point deadline = after(timeout_seconds_);
  while (missing > 0) {
    const int fd = accept4(listener_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) failSocket("accept", errno);
      if (!waitFor(listener_, POLLIN, deadline)) {
        throw Error(blinkTimeout, "sockets transport: " + std::to_string(missing) +
                                      " connection(s) from peers did not arrive within " +
                                      std::to_string(timeout_seconds_) + " s");
      }
      continue;
    }
    try {
      noDelay(fd);
      Hello hello{};
      if (!transferAll(fd, &hello, sizeof hello, false, deadline, "reading a peer's greeting")) {
        throw Error(blinkTimeout, "sockets transport: a peer's greeting did not arrive");
      }
      if (hello.token != token_) {  // not this call's (another job's, a stray client)
        close(fd);
        continue;
      }
      const StreamKey key{hello.rank, hello.channel};
      auto it = expected.find(key);
      if (it == expected.end() || it->second >= 0) {
        throw Error(blinkInternalError, "sockets transport: a connection that greeted as rank " +
                                            std::to_string(hello.rank) + ", channel " +
                                            std::to_string(hello.channel) + " was not expected");
      }
      Hello answer{token_, rank_, hello.channel};
      if (!transferAll(fd, &answer, sizeof answer, true, deadline,
                       "answering " + describe(key.peer))) {
        throw Error(blinkTimeout,
                    "sockets transport: answering " + describe(key.peer) + " timed out");
      }
      it->second = fd;
      --missing;
    } catch (...) {
      close(fd);
      throw;
    }
  }
}

void SocketTransport::checkAnswer(StreamKey key, int fd) const {
  Hello answer{};
  if (!transferAll(fd, &answer, sizeof answer, false, after(timeout_seconds_),
                   "reading the answer of " + describe(key.peer))) {
    throw Error(blinkTimeout,
                "sockets transport: " + describe(key.peer) + " did not answer its connection");
  }
  if (answer.token != token_ || answer.rank != key.peer || answer.channel != key.channel) {
    throw Error(blinkSystemError, "sockets transport: the connection for " + describe(key.peer) +
                                      " reached rank " + std::to_string(answer.rank) +
                                      (answer.token != token_ ? " of another job" : "") +
                                      " instead");
  }
}

void SocketTransport::ensureStreams(const std::vector<StreamKey>& sends,
                                    const std::vector<StreamKey>& recvs) {
  // A listener only while connections are made: a job with many communicators does
  // not hold a descriptor per communicator that waits for nothing.
  std::unique_ptr<Error> failure;
  Published mine;
  try {
    mine = listen();
  } catch (const Error& e) {
    failure = std::make_unique<Error>(e);
    closeListener();
  }
  agreeAllOk(comm_, failure.get(), "sockets transport: listening for connections",
             timeout_seconds_);
  int size = 0;
  PMPI_Comm_size(comm_, &size);
  published_.resize(static_cast<std::size_t>(size));
  try {
    allgatherWithin(&mine, sizeof mine, MPI_BYTE, published_.data(), comm_, timeout_seconds_,
                    "sockets transport: publishing the addresses");
  } catch (...) {
    closeListener();
    throw;
  }
  token_ = published_[0].token;
  std::map<StreamKey, int> dialled, accepted;
  auto closeAll = [&] {
    for (auto& [key, fd] : dialled) close(fd);
    for (auto& [key, fd] : accepted) {
      if (fd >= 0) close(fd);
    }
    dialled.clear();
    accepted.clear();
    closeListener();
  };
  // One connection per (peer, channel), both directions: the lower rank dials it.
  std::vector<StreamKey> wanted;
  for (const auto* keys : {&sends, &recvs}) {
    for (const StreamKey& key : *keys) {
      if (connections_.count(key) == 0) wanted.push_back(key);
    }
  }
  try {
    for (const StreamKey& key : wanted) {
      if (key.peer > rank_ && dialled.count(key) == 0) dialled[key] = dial(key);
    }
  } catch (const Error& e) {
    failure = std::make_unique<Error>(e);
  }
  if (failure) closeAll();
  // Nothing above waits for a peer (a dial completes in the peer's listen queue), so
  // every rank gets here; below, each waits for its peers' connections.
  agreeAllOk(comm_, failure.get(), "sockets transport: connecting to the peers", timeout_seconds_);
  try {
    for (const StreamKey& key : wanted) {
      if (key.peer < rank_) accepted.emplace(key, -1);
    }
    acceptStreams(accepted);
    for (const auto& [key, fd] : dialled) checkAnswer(key, fd);
    for (const auto& [key, fd] : dialled) makeWaitable(fd);
    for (const auto& [key, fd] : accepted) makeWaitable(fd);
  } catch (const Error& e) {
    failure = std::make_unique<Error>(e);
  }
  // A rank that failed closes what it made, so a peer waiting on it sees that at once.
  if (failure) closeAll();
  closeListener();
  agreeAllOk(comm_, failure.get(), "sockets transport: setting up the connections",
             timeout_seconds_);
  for (const auto* made : {&dialled, &accepted}) {
    for (const auto& [key, fd] : *made) {
      connections_[key] = std::make_unique<SocketConnection>(fd, describe(key.peer));
    }
  }
  for (const StreamKey& key : sends) {
    if (sends_.count(key) == 0)
      sends_[key] = std::make_unique<SocketSendStream>(*connections_[key]);
  }
  for (const StreamKey& key : recvs) {
    if (recvs_.count(key) == 0)
      recvs_[key] = std::make_unique<SocketRecvStream>(*connections_[key]);
  }
}

SendStream& SocketTransport::sendStream(StreamKey key) {
  auto it = sends_.find(key);
  if (it == sends_.end()) throw Error(blinkInternalError, "sockets transport: no such send stream");
  return *it->second;
}

RecvStream& SocketTransport::recvStream(StreamKey key) {
  auto it = recvs_.find(key);
  if (it == recvs_.end()) {
    throw Error(blinkInternalError, "sockets transport: no such receive stream");
  }
  return *it->second;
}

int SocketTransport::moveAllAtOnce(const WholeMessage* messages, int count, Backoff& backoff) {
  progress_.assign(static_cast<std::size_t>(count), 0);
  done_.assign(static_cast<std::size_t>(count), 0);
  for (int left = count;;) {
    bool moved = false;
    for (int i = 0; i < count; ++i) {
      const auto k = static_cast<std::size_t>(i);
      if (done_[k] != 0) continue;
      const WholeMessage& m = messages[i];
      const std::size_t before = progress_[k];
      const bool complete = m.send != nullptr
                                ? sendStream(m.key).push(m.send, m.bytes, progress_[k])
                                : recvStream(m.key).pullTo(m.bytes, progress_[k], m.recv);
      moved = moved || complete || progress_[k] != before;
      if (complete) {
        done_[k] = 1;
        --left;
      }
    }
    if (left == 0) return -1;
    if (moved) {
      backoff.progressed();
      continue;
    }
    // Past the spins, sleep in the kernel until a connection can move: a peer that
    // needs this core (several ranks on few cores) runs at once, and this rank wakes
    // when its bytes arrive, not after its turn in the yields of every other spinner.
    // Where only receives are left, in the first one's recv(2); else in ppoll(2).
    const unsigned idle = backoff.idleRounds();
    if (idle >= kSweeps && idle < kSweeps + kYieldingSweeps) {
      sched_yield();
      backoff.idle();  // counts the round (its deadline is far off here)
      continue;
    }
    if (idle >= kSweeps + kYieldingSweeps) {
      if (waitToReceive(messages, count)) continue;
    }
    if (!backoff.idle()) {
      return static_cast<int>(std::find(done_.begin(), done_.end(), 0) - done_.begin());
    }
  }
}

bool SocketTransport::waitToReceive(const WholeMessage* messages, int count) {
  int first_receive = -1;
  for (int i = 0; i < count; ++i) {
    if (done_[static_cast<std::size_t>(i)] != 0) continue;
    if (messages[i].send != nullptr) return waitForAny(messages, count);
    if (first_receive < 0) first_receive = i;
  }
  const WholeMessage& m = messages[first_receive];
  return static_cast<SocketRecvStream&>(recvStream(m.key))
      .pullWaiting(m.bytes, progress_[static_cast<std::size_t>(first_receive)], m.recv);
}

bool SocketTransport::waitForAny(const WholeMessage* messages, int count) {
  polled_.clear();
  for (int i = 0; i < count; ++i) {
    if (done_[static_cast<std::size_t>(i)] != 0) continue;
    const WholeMessage& m = messages[i];
    const bool sending = m.send != nullptr;
    polled_.push_back(
        {connections_.at(m.key)->fd(), static_cast<short>(sending ? POLLOUT : POLLIN), 0});
  }
  // Short, so that the caller's deadline and MPI's progress (Backoff) keep their pace.
  const timespec slice{0, 100'000};
  return ppoll(polled_.data(), polled_.size(), &slice, nullptr) > 0;
}

}  // namespace blink::transport
