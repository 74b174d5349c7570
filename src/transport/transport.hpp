// The one small interface between the Executor and the ways bytes move between
// ranks. A stream carries the messages of one (peer, channel) in one direction, in
// order; the Executor drives it without blocking (push/pull take what is possible
// now and return), so one thread can keep every tree and link busy at once.
// Transports know nothing of trees or plans.
//
// A requirement that comes with tree plans: a plan may give its channels rate shares
// (plan::Plan::channel_shares; a tree's channels share the rate it was packed
// with), and the simulator's prediction assumes that where streams of several
// channels cross one physical link at the same time, the link is divided among them
// in proportion to their shares, not equally (equal division slows the heavier
// trees: 0.81 of the bound instead of 0.98 for a 1 GiB Broadcast on a DGX-1P). A
// transport over shared links (GPU peer copies over NVLink/PCIe, the network) must
// therefore pace its streams by share, e.g. weighted round robin of the bytes it
// puts on a link, or each stream rate-limited to its share of the link. The device
// transport does (paceByShares, channel_pacer.hpp: weighted fair queueing of
// chunks per peer). Between nodes, any transport (PMPI, UCX) can be wrapped in
// PacedTransport (paced_transport.hpp: the same queueing of 32 KiB pieces among the
// channels toward one node), which BLINK_PACE_BETWEEN_NODES=1 does; off by default,
// because the runtime gives clusters hierarchical plans (one stream per NIC and
// direction) and flat trees, paced or not, were not shown faster
// (perf/README.md). The shared memory transport does not pace: the bytes are right,
// only the timing may differ from the prediction.
#pragma once

#include <compare>
#include <cstddef>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "common/error.hpp"

namespace blink {
class Backoff;
}

namespace blink::transport {

// Called for each piece of a message as it arrives: (offset within the message,
// the piece, its length). Pieces arrive in order and are valid only during the call.
// A non-owning reference to a callable (it lives for the pull() call that gets it):
// the executor polls streams in a tight loop and must not allocate there.
class PieceSink {
 public:
  template <typename F>
  requires(!std::is_same_v<std::remove_cvref_t<F>, PieceSink>)
      PieceSink(F&& f)  // NOLINT(google-explicit-constructor): built at the call site
      : object_(static_cast<void*>(&f)),
        call_([](void* o, std::size_t at, const std::byte* piece, std::size_t n) {
          (*static_cast<std::remove_reference_t<F>*>(o))(at, piece, n);
        }) {}
  void operator()(std::size_t at, const std::byte* piece, std::size_t n) const {
    call_(object_, at, piece, n);
  }

 private:
  void* object_;
  void (*call_)(void*, std::size_t, const std::byte*, std::size_t);
};

class SendStream {
 public:
  virtual ~SendStream() = default;
  // Pushes what the stream can take now of the message [data, data + bytes),
  // continuing at `sent` (updated). True once all of it is pushed: from then on the
  // source range may be overwritten. A message of 0 bytes is complete at once.
  virtual bool push(const std::byte* data, std::size_t bytes, std::size_t& sent) = 0;
};

class RecvStream {
 public:
  virtual ~RecvStream() = default;
  // Hands what has arrived of the current message of `bytes` bytes to `sink`,
  // continuing at `received` (updated). True once the whole message is delivered.
  virtual bool pull(std::size_t bytes, std::size_t& received, const PieceSink& sink) = 0;
  // The same for a message that is only to be stored at dest: a transport that can
  // place bytes there directly (without a piece buffer) overrides it.
  virtual bool pullTo(std::size_t bytes, std::size_t& received, std::byte* dest) {
    return pull(bytes, received, [dest](std::size_t at, const std::byte* piece, std::size_t n) {
      std::memcpy(dest + at, piece, n);
    });
  }
};

// A stream's identity: the peer (a rank of the Blink communicator) and the channel.
struct StreamKey {
  int peer = -1;
  int channel = 0;
  auto operator<=>(const StreamKey&) const = default;
};

// One whole message of moveAllAtOnce: to key.peer from `send`, or from key.peer into
// `recv` (exactly one of them set).
struct WholeMessage {
  StreamKey key;
  const std::byte* send = nullptr;
  std::byte* recv = nullptr;
  std::size_t bytes = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual std::string name() const = 0;
  // More about how it carries streams (the NICs it uses), for logs and explain.
  virtual std::string details() const { return ""; }
  // Collective over every rank this transport connects (each passes its own keys):
  // makes streams for these keys ready; streams made before are kept.
  virtual void ensureStreams(const std::vector<StreamKey>& sends,
                             const std::vector<StreamKey>& recvs) = 0;
  virtual SendStream& sendStream(StreamKey key) = 0;
  virtual RecvStream& recvStream(StreamKey key) = 0;
  // The rate shares of the channels of the plan about to run (by channel; empty:
  // equal), for a transport that paces by them (see the top). Others ignore it.
  virtual void paceByShares(const std::vector<double>& /*shares*/) {}
  // Called on every rank once a run that used this transport has finished: returns
  // when what this rank pushed has left the process, so that the peers receive it
  // even if this rank stops progressing the transport now (sits in an MPI call or
  // in another transport's wait). A pushed send only lets its source be reused; a
  // transport whose bytes can still sit in its own buffers (UCX over TCP) flushes
  // here. Throws blink::Error (naming a peer where it can) on failure or after
  // `timeout_seconds`.
  virtual void settle(double /*timeout_seconds*/) {}

  // A round of whole messages at once, for a caller that waits for all of them (the
  // node leaders' rounds). A transport where polling each stream costs a system call
  // per stream (PMPI: every MPI_Test runs Open MPI's progress, a poll(2) of its
  // sockets) moves them itself, waiting on all of them in one poll. Only on streams
  // made by ensureStreams with no message part-way on them; the streams' next
  // messages follow these. False: this transport has no such path for messages of
  // `largest_bytes` (the caller drives the streams).
  virtual bool movesAllAtOnce(std::size_t /*largest_bytes*/) const { return false; }
  // Starts every message and returns -1 once all are done; waits with `backoff`,
  // and once backoff.idle() reports its deadline passed, cancels what is pending and
  // returns the index of a message that was. Only where movesAllAtOnce said so.
  virtual int moveAllAtOnce(const WholeMessage* /*messages*/, int /*count*/, Backoff& /*backoff*/) {
    throw Error(blinkInternalError, "moveAllAtOnce: not supported by transport " + name());
  }
};

}  // namespace blink::transport
