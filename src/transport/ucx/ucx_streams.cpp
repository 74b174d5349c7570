#include "transport/ucx/ucx_streams.hpp"

namespace blink::transport {

ucp_tag_t ucxTag(std::uint32_t comm, int channel, int sender, std::uint64_t sequence) {
  return (static_cast<ucp_tag_t>(comm & 0xffffu)
          << (kUcxChannelBits + kUcxRankBits + kUcxSequenceBits)) |
         (static_cast<ucp_tag_t>(channel) << (kUcxRankBits + kUcxSequenceBits)) |
         (static_cast<ucp_tag_t>(sender) << kUcxSequenceBits) |
         (sequence & ((ucp_tag_t{1} << kUcxSequenceBits) - 1));
}

bool ucxFinished(void*& request, const UcxLink& link, int rank, const char* what) {
  if (request == nullptr) return true;
  if (UCS_PTR_IS_ERR(request)) {
    const ucs_status_t status = UCS_PTR_STATUS(request);
    request = nullptr;
    link.failed(rank, what, status);
  }
  const ucs_status_t status = ucp_request_check_status(request);
  if (status == UCS_INPROGRESS) return false;
  ucp_request_free(request);
  request = nullptr;
  if (status != UCS_OK) link.failed(rank, what, status);
  return true;
}

UcxSendStream::~UcxSendStream() {
  if (request_ != nullptr && !UCS_PTR_IS_ERR(request_)) {
    auto lock = UcxFabric::instance().lock();
    ucp_request_free(request_);
  }
}

bool UcxSendStream::push(const std::byte* data, std::size_t bytes, std::size_t& sent) {
  if (sent >= bytes) return true;
  UcxFabric& fabric = UcxFabric::instance();
  auto lock = fabric.lock();
  fabric.driving();
  if (request_ == nullptr) {
    ucp_request_param_t param{};
    request_ =
        ucp_tag_send_nbx(link_.ep, data, bytes, ucxTag(comm_, channel_, me_, sequence_++), &param);
  } else {
    fabric.progressOncePerPass(progress_seen_);
  }
  if (!ucxFinished(request_, link_, peer_, "sending to")) {
    link_.check(peer_);
    return false;
  }
  sent = bytes;
  return true;
}

UcxRecvStream::~UcxRecvStream() {
  if (request_ != nullptr && !UCS_PTR_IS_ERR(request_)) {
    auto lock = UcxFabric::instance().lock();
    ucp_request_cancel(worker_.handle(), request_);
    ucp_request_free(request_);
  }
}

bool UcxRecvStream::pull(std::size_t bytes, std::size_t& received, const PieceSink& sink) {
  if (received >= bytes) return true;
  if (request_ == nullptr && staging_.size() < bytes) staging_.resize(bytes);
  if (!arrived(staging_.data(), bytes)) return false;
  sink(0, staging_.data(), bytes);
  received = bytes;
  return true;
}

bool UcxRecvStream::pullTo(std::size_t bytes, std::size_t& received, std::byte* dest) {
  if (received >= bytes) return true;
  if (!arrived(dest, bytes)) return false;
  received = bytes;
  return true;
}

// What has arrived counts even when the sender has died since.
bool UcxRecvStream::arrived(std::byte* into, std::size_t bytes) {
  UcxFabric& fabric = UcxFabric::instance();
  auto lock = fabric.lock();
  fabric.driving();
  if (request_ == nullptr) {
    ucp_request_param_t param{};
    request_ = ucp_tag_recv_nbx(worker_.handle(), into, bytes,
                                ucxTag(comm_, channel_, peer_, sequence_++), kUcxFullMask, &param);
  }
  fabric.progressOncePerPass(progress_seen_);
  if (!ucxFinished(request_, link_, peer_, "receiving from")) {
    link_.check(peer_);
    return false;
  }
  return true;
}

}  // namespace blink::transport
