// Plain TCP connections between nodes, one per (peer, channel) for both directions,
// for the node leaders' small rounds where measured faster than the other transports
// (runtime: set-up times an 8-byte AllReduce through the leaders over each), or for
// every stream between nodes where BLINK_TRANSPORT names `sockets`.
//
// Why a transport of its own: between hosts emulated on one machine an 8-byte round
// trip takes about 12 us through Open MPI's ob1/tcp and about 7.5 us through a plain
// non-blocking socket (perf/README.md): MPI matches, queues and polls its event loop
// per message, which a small call, a latency or two, pays in full. Each direction of a
// connection is one stream, so a message is just its bytes in order (both ends know
// every message's size: no framing, no matching) and sends never wait for a receiver
// to post; a reply carries the acknowledgement of the request's bytes.
//
// Set-up (ensureStreams, collective over the communicator): each rank listens on a port
// of its own (only until the call returns) and publishes its IPv4 addresses
// (tcp_address.hpp chooses which one a peer dials) with a token of the call; the lower
// rank of each new (peer, channel) dials its connection and writes a hello (token, rank,
// channel); every rank agrees that dialling worked before any waits for a peer; then
// each accepts the connections the lower ranks dialled, checks the hellos and answers
// with its own rank and the token, and each dialler checks the answer: a connection
// that reached another process is an error naming the rank, its host and the address,
// never a crossed stream.
//
// A connection closed or reset by the peer (it died) is an error naming its rank and
// host at once; a silent peer ends in the caller's deadline (BLINK_TIMEOUT_S).
#pragma once

#include <mpi.h>
#include <poll.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/backoff.hpp"
#include "transport/socket/tcp_address.hpp"
#include "transport/transport.hpp"

namespace blink::transport {

class SocketConnection;

struct SocketSetUp {
  MPI_Comm comm = MPI_COMM_NULL;     // not owned; every rank of it calls the constructor
  int rank = 0;                      // in comm
  std::vector<std::string> host_of;  // per rank of comm: its node's name (for messages)
  double timeout_seconds = 300.0;
  std::string preferred_address;  // the IPv4 address of this rank's NIC in the plan, or ""
};

class SocketTransport final : public Transport {
 public:
  // Throws CollectiveError on every rank where any rank has no IPv4 address.
  explicit SocketTransport(const SocketSetUp& set_up);
  ~SocketTransport() override;
  SocketTransport(const SocketTransport&) = delete;
  SocketTransport& operator=(const SocketTransport&) = delete;

  std::string name() const override { return "sockets"; }
  std::string details() const override;
  void ensureStreams(const std::vector<StreamKey>& sends,
                     const std::vector<StreamKey>& recvs) override;
  SendStream& sendStream(StreamKey key) override;
  RecvStream& recvStream(StreamKey key) override;
  bool movesAllAtOnce(std::size_t /*largest_bytes*/) const override { return true; }
  // Every message pushed or pulled in turn, without blocking, until all are done.
  int moveAllAtOnce(const WholeMessage* messages, int count, Backoff& backoff) override;

  // What each rank publishes.
  static constexpr int kMaxAddresses = 8;
  struct Published {
    std::uint64_t token = 0;  // rank 0's is the job's
    std::uint32_t address[kMaxAddresses] = {};
    std::uint32_t netmask[kMaxAddresses] = {};
    std::uint16_t port = 0;
    std::uint16_t count = 0;
  };

 private:
  std::string describe(int rank) const;
  // Opens the listener; what this rank publishes for it.
  Published listen();
  void closeListener();
  // Dials `peer` and sends the hello; returns the connection.
  int dial(StreamKey key) const;
  // Accepts connections until every key in `expected` has one (checked and answered).
  void acceptStreams(std::map<StreamKey, int>& expected) const;
  void checkAnswer(StreamKey key, int fd) const;

  MPI_Comm comm_;
  int rank_;
  std::vector<std::string> host_of_;
  double timeout_seconds_;
  int listener_ = -1;
  std::uint64_t token_ = 0;
  std::vector<Ipv4Interface> mine_;
  std::vector<Published> published_;  // by rank
  std::map<StreamKey, std::unique_ptr<SendStream>> sends_;
  std::map<StreamKey, std::unique_ptr<RecvStream>> recvs_;
  // By (peer, channel): both directions' streams use it.
  std::map<StreamKey, std::unique_ptr<SocketConnection>> connections_;
  // Sleeps until a pending message's connection can move (or a short slice passes):
  // true when one can.
  bool waitForAny(const WholeMessage* messages, int count);
  // Where only receives are pending, sleeps in the first one's receive; else waitForAny.
  bool waitToReceive(const WholeMessage* messages, int count);
  std::vector<pollfd> polled_;
  // moveAllAtOnce's per message state, kept to avoid allocating per call.
  std::vector<std::size_t> progress_;
  std::vector<char> done_;
};

}  // namespace blink::transport
