// The streams of the ucx transport: one tagged message per push/pull (see
// ucx_transport.hpp for why tags), and the tag layout they share with the greetings.
#pragma once

#include <ucp/api/ucp.h>

#include <cstdint>
#include <vector>

#include "transport/transport.hpp"
#include "transport/ucx/ucx_fabric.hpp"

namespace blink::transport {

// A tag: communicator (16 bits), channel (16), sender rank (20), sequence number
// on the stream (12, wrapping: UCX matches equal tags of one sender in order).
constexpr int kUcxChannelBits = 16, kUcxRankBits = 20, kUcxSequenceBits = 12;
constexpr int kUcxMaxChannel = (1 << kUcxChannelBits) - 2;
constexpr int kUcxHelloChannel = kUcxMaxChannel + 1;
constexpr int kUcxMaxRanks = 1 << kUcxRankBits;
constexpr ucp_tag_t kUcxFullMask = ~ucp_tag_t{0};

ucp_tag_t ucxTag(std::uint32_t comm, int channel, int sender, std::uint64_t sequence);

// With the fabric's lock held. Polls a request: true once it completed (and is
// released), throws on failure.
bool ucxFinished(void*& request, const UcxLink& link, int rank, const char* what);

// Sends are eager on IP interfaces (ucx_fabric.cpp): a push completes once UCX holds
// the bytes; the progress thread moves what the socket did not take yet.
class UcxSendStream final : public SendStream {
 public:
  UcxSendStream(UcxLink& link, std::uint32_t comm, int peer, int channel, int me)
      : link_(link), comm_(comm), peer_(peer), channel_(channel), me_(me) {}
  ~UcxSendStream() override;
  UcxSendStream(const UcxSendStream&) = delete;
  UcxSendStream& operator=(const UcxSendStream&) = delete;

  bool push(const std::byte* data, std::size_t bytes, std::size_t& sent) override;

 private:
  UcxLink& link_;
  std::uint32_t comm_;
  int peer_, channel_, me_;
  std::uint64_t sequence_ = 0;
  void* request_ = nullptr;
  std::uint64_t progress_seen_ = ~std::uint64_t{0};  // UcxFabric::progressOncePerPass
};

class UcxRecvStream final : public RecvStream {
 public:
  UcxRecvStream(const UcxWorker& worker, UcxLink& link, std::uint32_t comm, int peer, int channel)
      : worker_(worker), link_(link), comm_(comm), peer_(peer), channel_(channel) {}
  ~UcxRecvStream() override;
  UcxRecvStream(const UcxRecvStream&) = delete;
  UcxRecvStream& operator=(const UcxRecvStream&) = delete;

  bool pull(std::size_t bytes, std::size_t& received, const PieceSink& sink) override;
  bool pullTo(std::size_t bytes, std::size_t& received, std::byte* dest) override;

 private:
  bool arrived(std::byte* into, std::size_t bytes);

  const UcxWorker& worker_;
  UcxLink& link_;
  std::uint32_t comm_;
  int peer_, channel_;
  std::uint64_t sequence_ = 0;
  void* request_ = nullptr;
  std::uint64_t progress_seen_ = ~std::uint64_t{0};  // UcxFabric::progressOncePerPass
  std::vector<std::byte> staging_;
};

}  // namespace blink::transport
