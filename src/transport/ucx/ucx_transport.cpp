#include "transport/ucx/ucx_transport.hpp"

#include <ucp/api/ucp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <sstream>

#include "common/error.hpp"
#include "common/log.hpp"
#include "common/mpi_wait.hpp"

namespace blink::transport {
namespace {

// A tag: channel (24 bits), sender rank (24 bits), sequence number on the stream
// (16 bits, wrapping: a stream has one message in flight at a time).
constexpr int kRankBits = 24, kSequenceBits = 16;
constexpr int kMaxChannel = (1 << 24) - 2;
constexpr int kHelloChannel = kMaxChannel + 1;
constexpr ucp_tag_t kFullMask = ~ucp_tag_t{0};

ucp_tag_t tagOf(int channel, int sender, std::uint64_t sequence) {
  return (static_cast<ucp_tag_t>(channel) << (kRankBits + kSequenceBits)) |
         (static_cast<ucp_tag_t>(sender) << kSequenceBits) |
         (sequence & ((ucp_tag_t{1} << kSequenceBits) - 1));
}

[[noreturn]] void fail(const std::string& what, ucs_status_t status) {
  throw Error(blinkSystemError, "ucx transport: " + what + ": " + ucs_status_string(status));
}

void agreeOk(MPI_Comm comm, const Error* failure, const std::string& stage, double timeout_s) {
  int ok = failure == nullptr ? 1 : 0, all_ok = 0;
  allreduceWithin(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm, timeout_s, stage);
  if (failure != nullptr) throw CollectiveError(failure->status(), failure->what());
  if (all_ok == 0) {
    throw CollectiveError(blinkSystemError,
                          stage + " failed on another rank (see its error message)");
  }
}

}  // namespace

struct UcxTransport::Worker {
  ucp_context_h context = nullptr;
  ucp_worker_h worker = nullptr;
  std::string device;

  explicit Worker(const std::string& net_device) : device(net_device) {
    ucp_config_t* config = nullptr;
    if (const ucs_status_t s = ucp_config_read(nullptr, nullptr, &config); s != UCS_OK) {
      fail("reading UCX's configuration", s);
    }
    if (!device.empty()) {
      if (const ucs_status_t s = ucp_config_modify(config, "NET_DEVICES", device.c_str());
          s != UCS_OK) {
        ucp_config_release(config);
        fail("restricting UCX to device " + device, s);
      }
    }
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features = UCP_FEATURE_TAG;
    const ucs_status_t init = ucp_init(&params, config, &context);
    ucp_config_release(config);
    if (init != UCS_OK) fail("ucp_init" + (device.empty() ? "" : " on " + device), init);
    ucp_worker_params_t worker_params{};
    worker_params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    worker_params.thread_mode = UCS_THREAD_MODE_SINGLE;
    if (const ucs_status_t s = ucp_worker_create(context, &worker_params, &worker); s != UCS_OK) {
      ucp_cleanup(context);
      fail("ucp_worker_create", s);
    }
  }
  ~Worker() {
    if (worker != nullptr) ucp_worker_destroy(worker);
    if (context != nullptr) ucp_cleanup(context);
  }
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  std::vector<char> address() const {
    ucp_address_t* address = nullptr;
    std::size_t length = 0;
    if (const ucs_status_t s = ucp_worker_get_address(worker, &address, &length); s != UCS_OK) {
      fail("ucp_worker_get_address", s);
    }
    const auto* bytes = reinterpret_cast<const char*>(address);
    std::vector<char> out(bytes, bytes + length);
    ucp_worker_release_address(worker, address);
    return out;
  }
  void progress() const {
    while (ucp_worker_progress(worker) != 0) {
    }
  }
};

// The endpoint to one peer on one NIC, and whether UCX has reported it broken.
struct UcxTransport::Link {
  ucp_ep_h ep = nullptr;
  ucs_status_t failure = UCS_OK;
  int peer = -1;
  std::string host, device;
  bool greeted = false;  // a hello went each way (see ensureStreams)
  void* hello_send = nullptr;
  void* hello_recv = nullptr;

  std::string describe() const {
    return "rank " + std::to_string(peer) + " on host '" + host + "' via " +
           (device.empty() ? std::string("UCX's devices") : device);
  }
  void check() const {
    if (failure == UCS_OK) return;
    throw Error(blinkSystemError, "ucx transport: the connection to " + describe() + " broke (" +
                                      ucs_status_string(failure) + "): did that process die?");
  }
  [[noreturn]] void failed(const char* what, ucs_status_t status) const {
    throw Error(blinkSystemError, std::string("ucx transport: ") + what + " " + describe() +
                                      " failed: " + ucs_status_string(status));
  }
};

namespace {

void onPeerError(void* arg, ucp_ep_h /*ep*/, ucs_status_t status) {
  static_cast<UcxTransport::Link*>(arg)->failure = status;
}

// Polls a request: true once it completed (and is released), throws on failure.
bool finished(void*& request, const UcxTransport::Link& link, const char* what) {
  if (request == nullptr) return true;
  if (UCS_PTR_IS_ERR(request)) {
    const ucs_status_t status = UCS_PTR_STATUS(request);
    request = nullptr;
    link.failed(what, status);
  }
  const ucs_status_t status = ucp_request_check_status(request);
  if (status == UCS_INPROGRESS) return false;
  ucp_request_free(request);
  request = nullptr;
  if (status != UCS_OK) link.failed(what, status);
  return true;
}

class UcxSendStream final : public SendStream {
 public:
  UcxSendStream(const UcxTransport::Worker& worker, UcxTransport::Link& link, int channel, int me)
      : worker_(worker), link_(link), channel_(channel), me_(me) {}
  ~UcxSendStream() override {
    if (request_ != nullptr && !UCS_PTR_IS_ERR(request_)) ucp_request_free(request_);
  }
  UcxSendStream(const UcxSendStream&) = delete;
  UcxSendStream& operator=(const UcxSendStream&) = delete;

  bool push(const std::byte* data, std::size_t bytes, std::size_t& sent) override {
    if (sent >= bytes) return true;
    link_.check();
    if (request_ == nullptr) {
      ucp_request_param_t param{};
      request_ = ucp_tag_send_nbx(link_.ep, data, bytes, tagOf(channel_, me_, sequence_++), &param);
    } else {
      worker_.progress();
    }
    if (!finished(request_, link_, "sending to")) {
      link_.check();
      return false;
    }
    sent = bytes;
    return true;
  }

 private:
  const UcxTransport::Worker& worker_;
  UcxTransport::Link& link_;
  int channel_, me_;
  std::uint64_t sequence_ = 0;
  void* request_ = nullptr;
};

class UcxRecvStream final : public RecvStream {
 public:
  UcxRecvStream(const UcxTransport::Worker& worker, UcxTransport::Link& link, int channel)
      : worker_(worker), link_(link), channel_(channel) {}
  ~UcxRecvStream() override {
    if (request_ != nullptr && !UCS_PTR_IS_ERR(request_)) {
      ucp_request_cancel(worker_.worker, request_);
      ucp_request_free(request_);
    }
  }
  UcxRecvStream(const UcxRecvStream&) = delete;
  UcxRecvStream& operator=(const UcxRecvStream&) = delete;

  bool pull(std::size_t bytes, std::size_t& received, const PieceSink& sink) override {
    if (received >= bytes) return true;
    if (request_ == nullptr && staging_.size() < bytes) staging_.resize(bytes);
    if (!arrived(staging_.data(), bytes)) return false;
    sink(0, staging_.data(), bytes);
    received = bytes;
    return true;
  }
  bool pullTo(std::size_t bytes, std::size_t& received, std::byte* dest) override {
    if (received >= bytes) return true;
    if (!arrived(dest, bytes)) return false;
    received = bytes;
    return true;
  }

 private:
  bool arrived(std::byte* into, std::size_t bytes) {
    link_.check();
    if (request_ == nullptr) {
      ucp_request_param_t param{};
      request_ = ucp_tag_recv_nbx(worker_.worker, into, bytes,
                                  tagOf(channel_, link_.peer, sequence_++), kFullMask, &param);
    }
    worker_.progress();
    if (!finished(request_, link_, "receiving from")) {
      link_.check();
      return false;
    }
    return true;
  }

  const UcxTransport::Worker& worker_;
  UcxTransport::Link& link_;
  int channel_;
  std::uint64_t sequence_ = 0;
  void* request_ = nullptr;
  std::vector<std::byte> staging_;
};

}  // namespace

UcxTransport::UcxTransport(const UcxSetUp& set_up) : set_up_(set_up) {
  const int size = static_cast<int>(set_up_.local_rank_of.size());
  std::unique_ptr<Error> failure;
  int count = 1;
  try {
    nics_ = discoverNics();
    count = static_cast<int>(nics_.size());
  } catch (const Error& e) {
    failure = std::make_unique<Error>(e);
  }
  // Stream (s, c) uses NIC (local rank of s + c) mod N on both ends: N must be the same.
  allreduceWithin(&count, &nic_count_, 1, MPI_INT, MPI_MIN, set_up_.comm, set_up_.timeout_seconds,
                  "agreeing on the number of NICs");
  std::vector<int> my_lengths(static_cast<std::size_t>(nic_count_), 0);
  std::vector<char> my_blob;
  try {
    if (failure) throw *failure;
    for (int n = 0; n < nic_count_; ++n) {
      workers_.push_back(std::make_unique<Worker>(nics_[static_cast<std::size_t>(n)].device));
      const std::vector<char> address = workers_.back()->address();
      my_lengths[static_cast<std::size_t>(n)] = static_cast<int>(address.size());
      my_blob.insert(my_blob.end(), address.begin(), address.end());
    }
  } catch (const Error& e) {
    failure = std::make_unique<Error>(e);
  }
  agreeOk(set_up_.comm, failure.get(), "setting up UCX", set_up_.timeout_seconds);

  // Every rank's worker addresses, NIC by NIC.
  std::vector<int> lengths(static_cast<std::size_t>(nic_count_ * size));
  allgatherWithin(my_lengths.data(), nic_count_, MPI_INT, lengths.data(), set_up_.comm,
                  set_up_.timeout_seconds, "exchanging UCX address lengths");
  std::vector<int> counts(static_cast<std::size_t>(size)), displs(static_cast<std::size_t>(size));
  int total = 0;
  for (int r = 0; r < size; ++r) {
    int sum = 0;
    for (int n = 0; n < nic_count_; ++n)
      sum += lengths[static_cast<std::size_t>(r * nic_count_ + n)];
    counts[static_cast<std::size_t>(r)] = sum;
    displs[static_cast<std::size_t>(r)] = total;
    total += sum;
  }
  std::vector<char> blobs(static_cast<std::size_t>(total));
  MPI_Request request = MPI_REQUEST_NULL;
  if (PMPI_Iallgatherv(my_blob.data(), static_cast<int>(my_blob.size()), MPI_CHAR, blobs.data(),
                       counts.data(), displs.data(), MPI_CHAR, set_up_.comm,
                       &request) != MPI_SUCCESS) {
    throw CollectiveError(blinkSystemError, "ucx transport: MPI_Iallgatherv failed");
  }
  waitWithin(request, set_up_.timeout_seconds, "exchanging UCX worker addresses");
  addresses_.resize(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) {
    std::size_t at = static_cast<std::size_t>(displs[static_cast<std::size_t>(r)]);
    for (int n = 0; n < nic_count_; ++n) {
      const auto length =
          static_cast<std::size_t>(lengths[static_cast<std::size_t>(r * nic_count_ + n)]);
      addresses_[static_cast<std::size_t>(r)].emplace_back(
          blobs.begin() + static_cast<std::ptrdiff_t>(at),
          blobs.begin() + static_cast<std::ptrdiff_t>(at + length));
      at += length;
    }
  }
  // Whether UCX reaches the other nodes is known now, while every rank can still
  // agree to use another transport instead.
  std::unique_ptr<Error> unreachable;
  try {
    for (int r = 0; r < size; ++r) {
      if (set_up_.host_of[static_cast<std::size_t>(r)] ==
          set_up_.host_of[static_cast<std::size_t>(set_up_.rank)]) {
        continue;
      }
      for (int n = 0; n < nic_count_; ++n) linkTo(r, n);
    }
  } catch (const Error& e) {
    unreachable = std::make_unique<Error>(e);
  }
  agreeOk(set_up_.comm, unreachable.get(), "reaching the other nodes over UCX",
          set_up_.timeout_seconds);
}

UcxTransport::~UcxTransport() {
  sends_.clear();
  recvs_.clear();
  // Close gracefully (what this rank sent eagerly must still reach its peer), but
  // never wait long for peers that are gone or no longer progress.
  std::vector<std::pair<void*, const Worker*>> closing;
  for (auto& [key, link] : links_) {
    for (void** hello : {&link->hello_send, &link->hello_recv}) {
      if (*hello != nullptr && !UCS_PTR_IS_ERR(*hello)) {
        ucp_request_cancel(workers_[static_cast<std::size_t>(key.second)]->worker, *hello);
        ucp_request_free(*hello);
      }
    }
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags = link->failure == UCS_OK ? 0 : UCP_EP_CLOSE_FLAG_FORCE;
    void* r = ucp_ep_close_nbx(link->ep, &param);
    if (r != nullptr && !UCS_PTR_IS_ERR(r)) {
      closing.emplace_back(r, workers_[static_cast<std::size_t>(key.second)].get());
    }
  }
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration<double>(std::min(set_up_.timeout_seconds, 2.0));
  while (!closing.empty() && std::chrono::steady_clock::now() < deadline) {
    for (const auto& w : workers_) w->progress();
    for (std::size_t i = 0; i < closing.size();) {
      if (ucp_request_check_status(closing[i].first) != UCS_INPROGRESS) {
        ucp_request_free(closing[i].first);
        closing.erase(closing.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        ++i;
      }
    }
  }
  for (const auto& c : closing) ucp_request_free(c.first);
  links_.clear();
  workers_.clear();
}

int UcxTransport::nicFor(int sender, int channel) const {
  const int local = set_up_.local_rank_of[static_cast<std::size_t>(sender)];
  return static_cast<int>((static_cast<long long>(local) + channel) % nic_count_);
}

UcxTransport::Link& UcxTransport::linkTo(int peer, int nic) {
  auto& slot = links_[{peer, nic}];
  if (slot) return *slot;
  auto link = std::make_unique<Link>();
  link->peer = peer;
  link->host = set_up_.host_of[static_cast<std::size_t>(peer)];
  link->device = nics_[static_cast<std::size_t>(nic)].device;
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER;
  params.address = reinterpret_cast<const ucp_address_t*>(
      addresses_[static_cast<std::size_t>(peer)][static_cast<std::size_t>(nic)].data());
  params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  params.err_handler.cb = onPeerError;
  params.err_handler.arg = link.get();
  if (const ucs_status_t s =
          ucp_ep_create(workers_[static_cast<std::size_t>(nic)]->worker, &params, &link->ep);
      s != UCS_OK) {
    links_.erase({peer, nic});
    link->failed("connecting to", s);
  }
  slot = std::move(link);
  return *slot;
}

void UcxTransport::ensureStreams(const std::vector<StreamKey>& sends,
                                 const std::vector<StreamKey>& recvs) {
  std::unique_ptr<Error> failure;
  std::vector<std::pair<int, int>> fresh;  // links first used now: they say hello
  try {
    auto link = [&](int peer, int nic) -> Link& {
      Link& l = linkTo(peer, nic);
      if (!l.greeted) {
        l.greeted = true;
        fresh.emplace_back(peer, nic);
      }
      return l;
    };
    for (const StreamKey& k : sends) {
      if (k.channel < 0 || k.channel > kMaxChannel) {
        throw Error(blinkUnsupported, "ucx transport: channel " + std::to_string(k.channel) +
                                          " does not fit in a tag");
      }
      if (sends_.count(k)) continue;
      const int nic = nicFor(set_up_.rank, k.channel);
      sends_[k] = std::make_unique<UcxSendStream>(*workers_[static_cast<std::size_t>(nic)],
                                                  link(k.peer, nic), k.channel, set_up_.rank);
    }
    for (const StreamKey& k : recvs) {
      if (k.channel < 0 || k.channel > kMaxChannel) {
        throw Error(blinkUnsupported, "ucx transport: channel " + std::to_string(k.channel) +
                                          " does not fit in a tag");
      }
      if (recvs_.count(k)) continue;
      const int nic = nicFor(k.peer, k.channel);
      recvs_[k] = std::make_unique<UcxRecvStream>(*workers_[static_cast<std::size_t>(nic)],
                                                  link(k.peer, nic), k.channel);
    }
    // Both ends of a stream first use the link in the same call (the NIC is a function
    // of the stream): a hello each way connects it, so that a receiver too hears
    // when its sender's process dies.
    for (const auto& [peer, nic] : fresh) {
      Link& l = *links_.at({peer, nic});
      ucp_request_param_t param{};
      l.hello_send =
          ucp_tag_send_nbx(l.ep, nullptr, 0, tagOf(kHelloChannel, set_up_.rank, 0), &param);
      l.hello_recv = ucp_tag_recv_nbx(workers_[static_cast<std::size_t>(nic)]->worker, nullptr, 0,
                                      tagOf(kHelloChannel, peer, 0), kFullMask, &param);
    }
    const auto start = std::chrono::steady_clock::now();
    for (bool pending = true; pending;) {
      pending = false;
      for (const auto& w : workers_) w->progress();
      for (const auto& [peer, nic] : fresh) {
        Link& l = *links_.at({peer, nic});
        l.check();
        const bool sent = finished(l.hello_send, l, "greeting");
        const bool heard = finished(l.hello_recv, l, "hearing from");
        pending = pending || !sent || !heard;
      }
      if (pending &&
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >
              set_up_.timeout_seconds) {
        throw Error(blinkTimeout,
                    "ucx transport: a peer did not answer within BLINK_TIMEOUT_S "
                    "while the streams were made");
      }
    }
  } catch (const Error& e) {
    failure = std::make_unique<Error>(e);
  }
  if (failure) throw *failure;
}

SendStream& UcxTransport::sendStream(StreamKey key) {
  auto it = sends_.find(key);
  if (it == sends_.end()) throw Error(blinkInternalError, "ucx transport: no such send stream");
  return *it->second;
}

RecvStream& UcxTransport::recvStream(StreamKey key) {
  auto it = recvs_.find(key);
  if (it == recvs_.end()) throw Error(blinkInternalError, "ucx transport: no such receive stream");
  return *it->second;
}

std::string UcxTransport::details() const {
  std::ostringstream out;
  out << "NIC" << (nic_count_ > 1 ? "s " : " ");
  for (int n = 0; n < nic_count_; ++n) {
    const Nic& nic = nics_[static_cast<std::size_t>(n)];
    out << (n ? ", " : "") << (nic.device.empty() ? std::string("UCX's choice") : nic.device);
    if (nic.gbps > 0.0) {
      out << " (" << nic.gbps << " GB/s from " << nic.speed_source << ")";
    } else {
      out << " (speed unknown)";
    }
  }
  return out.str();
}

}  // namespace blink::transport
