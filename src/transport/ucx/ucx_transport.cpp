#include "transport/ucx/ucx_transport.hpp"

#include <ucp/api/ucp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <sstream>

#include "common/error.hpp"
#include "common/log.hpp"
#include "common/mpi_wait.hpp"
#include "transport/ucx/nic_list.hpp"

namespace blink::transport {
namespace {

// A tag: communicator (16 bits), channel (16), sender rank (20), sequence number
// on the stream (12, wrapping: UCX matches equal tags of one sender in order).
constexpr int kChannelBits = 16, kRankBits = 20, kSequenceBits = 12;
constexpr int kMaxChannel = (1 << kChannelBits) - 2;
constexpr int kHelloChannel = kMaxChannel + 1;
constexpr int kMaxRanks = 1 << kRankBits;
constexpr ucp_tag_t kFullMask = ~ucp_tag_t{0};

ucp_tag_t tagOf(std::uint32_t comm, int channel, int sender, std::uint64_t sequence) {
  return (static_cast<ucp_tag_t>(comm & 0xffffu) << (kChannelBits + kRankBits + kSequenceBits)) |
         (static_cast<ucp_tag_t>(channel) << (kRankBits + kSequenceBits)) |
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

class Worker {
 public:
  explicit Worker(const std::string& net_device) : device_(net_device) {
    ucp_config_t* config = nullptr;
    if (const ucs_status_t s = ucp_config_read(nullptr, nullptr, &config); s != UCS_OK) {
      fail("reading UCX's configuration", s);
    }
    auto modify = [&](const char* name, const std::string& value) {
      if (const ucs_status_t s = ucp_config_modify(config, name, value.c_str()); s != UCS_OK) {
        ucp_config_release(config);
        fail(std::string("setting UCX_") + name + "=" + value, s);
      }
    };
    if (!device_.empty()) modify("NET_DEVICES", device_);
    // Over TCP (an IP interface, not an InfiniBand port), UCX 1.13's rendezvous
    // sometimes stalls for good: across emulated hosts a 40 KB tagged send stayed
    // pending and its posted receive never completed, both sides progressing, in
    // about 1 of 8 runs of Reduce.EveryRootAndOp (2-3 hosts); with eager sends only,
    // 0 of 60. Rendezvous buys TCP no zero copy worth having (the kernel copies
    // anyway), so streams on IP interfaces send eagerly, unless UCX_RNDV_THRESH says
    // otherwise.
    if (!device_.empty() && device_.find(':') == std::string::npos &&
        std::getenv("UCX_RNDV_THRESH") == nullptr) {
      modify("RNDV_THRESH", "inf");
    }
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features = UCP_FEATURE_TAG;
    const ucs_status_t init = ucp_init(&params, config, &context_);
    ucp_config_release(config);
    if (init != UCS_OK) fail("ucp_init" + (device_.empty() ? "" : " on " + device_), init);
    ucp_worker_params_t worker_params{};
    worker_params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    // Single-threaded (see the header): UCS_THREAD_MODE_MULTI made a small
    // AllReduce across emulated hosts take about 3 ms instead of 0.1-0.2 ms.
    worker_params.thread_mode = UCS_THREAD_MODE_SINGLE;
    if (const ucs_status_t s = ucp_worker_create(context_, &worker_params, &worker_); s != UCS_OK) {
      ucp_cleanup(context_);
      fail("ucp_worker_create", s);
    }
    ucp_address_t* address = nullptr;
    std::size_t length = 0;
    if (const ucs_status_t s = ucp_worker_get_address(worker_, &address, &length); s != UCS_OK) {
      fail("ucp_worker_get_address", s);
    }
    address_.assign(reinterpret_cast<const char*>(address), length);
    ucp_worker_release_address(worker_, address);
  }
  // Never destroyed (see the header): the process's exit releases the contexts.
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  ucp_worker_h handle() const { return worker_; }
  const std::string& address() const { return address_; }
  const std::string& device() const { return device_; }
  void progress() const {
    while (ucp_worker_progress(worker_) != 0) {
    }
  }

 private:
  std::string device_;
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  std::string address_;
};

}  // namespace

struct UcxLink {
  ucp_ep_h ep = nullptr;
  std::atomic<int> failure{UCS_OK};  // set by UCX's error callback during progress
  std::string host, device;
  bool greeted = false;  // a hello went each way (see ensureStreams)

  std::string describe(int rank) const {
    return "rank " + std::to_string(rank) + " on host '" + host + "' via " +
           (device.empty() ? std::string("UCX's devices") : device);
  }
  void check(int rank) const {
    const auto status = static_cast<ucs_status_t>(failure.load(std::memory_order_acquire));
    if (status == UCS_OK) return;
    throw Error(blinkSystemError, "ucx transport: the connection to " + describe(rank) +
                                      " broke (" + ucs_status_string(status) +
                                      "): did that process die?");
  }
  [[noreturn]] void failed(int rank, const char* what, ucs_status_t status) const {
    throw Error(blinkSystemError, std::string("ucx transport: ") + what + " " + describe(rank) +
                                      " failed: " + ucs_status_string(status));
  }
};

namespace {

void onPeerError(void* arg, ucp_ep_h /*ep*/, ucs_status_t status) {
  static_cast<UcxLink*>(arg)->failure.store(status, std::memory_order_release);
}

// The process's workers (one per NIC) and endpoints; see the header.
class Fabric {
 public:
  static Fabric& instance() {
    static Fabric* fabric = new Fabric();  // never destroyed: the exit releases UCX
    return *fabric;
  }
  // The workers, made at the first call; throws (every later call too) if they
  // could not be made.
  const std::vector<std::unique_ptr<Worker>>& workers() {
    std::lock_guard lock(mutex_);
    if (!made_) {
      made_ = true;
      try {
        nics_ = discoverNics();
        for (const Nic& nic : nics_) workers_.push_back(std::make_unique<Worker>(nic.device));
      } catch (const Error& e) {
        why_not_ = e.what();
        workers_.clear();
      }
    }
    if (!why_not_.empty()) throw Error(blinkSystemError, why_not_);
    return workers_;
  }
  const std::vector<Nic>& nics() const { return nics_; }

  // Every wait progresses every NIC's worker, not only the one it waits on: over
  // TCP a peer's bytes on another NIC move only while this process reads and
  // writes that NIC's sockets too. (The workers are fixed once made.)
  void progressAll() const {
    for (const auto& w : workers_) w->progress();
  }

  // Until every worker has handed what it was given to the network (UCX over TCP
  // keeps what the socket did not take in its own buffers). UCS_OK, the first
  // failure, or UCS_ERR_TIMED_OUT after `timeout_seconds`.
  ucs_status_t flushAll(double timeout_seconds) const {
    std::vector<void*> flushes;
    ucs_status_t result = UCS_OK;
    for (const auto& w : workers_) {
      ucp_request_param_t param{};
      void* flush = ucp_worker_flush_nbx(w->handle(), &param);
      if (UCS_PTR_IS_ERR(flush)) {
        result = UCS_PTR_STATUS(flush);
      } else if (flush != nullptr) {
        flushes.push_back(flush);
      }
    }
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                              std::chrono::duration<double>(timeout_seconds));
    for (void*& flush : flushes) {
      while (ucp_request_check_status(flush) == UCS_INPROGRESS) {
        if (std::chrono::steady_clock::now() > deadline) {
          if (result == UCS_OK) result = UCS_ERR_TIMED_OUT;
          break;
        }
        progressAll();
      }
      const ucs_status_t status = ucp_request_check_status(flush);
      if (status != UCS_INPROGRESS && status != UCS_OK && result == UCS_OK) result = status;
      ucp_request_free(flush);  // released by UCX when it completes, if it has not
    }
    return result;
  }

  UcxLink& link(int nic, const std::string& address, const std::string& host, int rank) {
    std::lock_guard lock(mutex_);
    auto& slot = links_[{nic, address}];
    if (slot) return *slot;
    auto link = std::make_unique<UcxLink>();
    link->host = host;
    link->device = nics_[static_cast<std::size_t>(nic)].device;
    ucp_ep_params_t params{};
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                        UCP_EP_PARAM_FIELD_ERR_HANDLER;
    params.address = reinterpret_cast<const ucp_address_t*>(address.data());
    params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    params.err_handler.cb = onPeerError;
    params.err_handler.arg = link.get();
    if (const ucs_status_t s =
            ucp_ep_create(workers_[static_cast<std::size_t>(nic)]->handle(), &params, &link->ep);
        s != UCS_OK) {
      links_.erase({nic, address});
      link->failed(rank, "connecting to", s);
    }
    slot = std::move(link);
    return *slot;
  }

  // A communicator id no live communicator of this process uses, at least `floor`.
  std::uint32_t nextCommId() const { return next_comm_id_.load(); }
  void usedCommId(std::uint32_t id) {
    std::uint32_t want = next_comm_id_.load();
    while (want <= id && !next_comm_id_.compare_exchange_weak(want, id + 1)) {
    }
  }

 private:
  Fabric() = default;
  std::mutex mutex_;
  bool made_ = false;
  std::string why_not_;
  std::vector<Nic> nics_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::map<std::pair<int, std::string>, std::unique_ptr<UcxLink>> links_;
  std::atomic<std::uint32_t> next_comm_id_{1};
};

// Polls a request: true once it completed (and is released), throws on failure.
bool finished(void*& request, const UcxLink& link, int rank, const char* what) {
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

class UcxSendStream final : public SendStream {
 public:
  UcxSendStream(UcxLink& link, std::uint32_t comm, int peer, int channel, int me)
      : link_(link), comm_(comm), peer_(peer), channel_(channel), me_(me) {}
  ~UcxSendStream() override {
    if (request_ != nullptr && !UCS_PTR_IS_ERR(request_)) ucp_request_free(request_);
  }
  UcxSendStream(const UcxSendStream&) = delete;
  UcxSendStream& operator=(const UcxSendStream&) = delete;

  bool push(const std::byte* data, std::size_t bytes, std::size_t& sent) override {
    if (sent >= bytes) return true;
    if (request_ == nullptr) {
      ucp_request_param_t param{};
      request_ =
          ucp_tag_send_nbx(link_.ep, data, bytes, tagOf(comm_, channel_, me_, sequence_++), &param);
    } else {
      Fabric::instance().progressAll();
    }
    if (!finished(request_, link_, peer_, "sending to")) {
      link_.check(peer_);
      return false;
    }
    sent = bytes;
    return true;
  }

 private:
  UcxLink& link_;
  std::uint32_t comm_;
  int peer_, channel_, me_;
  std::uint64_t sequence_ = 0;
  void* request_ = nullptr;
};

class UcxRecvStream final : public RecvStream {
 public:
  UcxRecvStream(const Worker& worker, UcxLink& link, std::uint32_t comm, int peer, int channel)
      : worker_(worker), link_(link), comm_(comm), peer_(peer), channel_(channel) {}
  ~UcxRecvStream() override {
    if (request_ != nullptr && !UCS_PTR_IS_ERR(request_)) {
      ucp_request_cancel(worker_.handle(), request_);
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
  // What has arrived counts even when the sender has died since.
  bool arrived(std::byte* into, std::size_t bytes) {
    if (request_ == nullptr) {
      ucp_request_param_t param{};
      request_ = ucp_tag_recv_nbx(worker_.handle(), into, bytes,
                                  tagOf(comm_, channel_, peer_, sequence_++), kFullMask, &param);
    }
    Fabric::instance().progressAll();
    if (!finished(request_, link_, peer_, "receiving from")) {
      link_.check(peer_);
      return false;
    }
    return true;
  }

  const Worker& worker_;
  UcxLink& link_;
  std::uint32_t comm_;
  int peer_, channel_;
  std::uint64_t sequence_ = 0;
  void* request_ = nullptr;
  std::vector<std::byte> staging_;
};

}  // namespace

UcxTransport::UcxTransport(const UcxSetUp& set_up) : set_up_(set_up) {
  const int size = static_cast<int>(set_up_.local_rank_of.size());
  Fabric& fabric = Fabric::instance();
  std::unique_ptr<Error> failure;
  int count = 0;
  try {
    if (size > kMaxRanks) {
      throw Error(blinkUnsupported, "ucx transport: more than " + std::to_string(kMaxRanks) +
                                        " ranks do not fit in a tag");
    }
    count = static_cast<int>(fabric.workers().size());
  } catch (const Error& e) {
    failure = std::make_unique<Error>(e);
  }
  agreeOk(set_up_.comm, failure.get(), "setting up UCX", set_up_.timeout_seconds);
  // Stream (s, c) uses NIC (local rank of s + c) mod N on both ends: N must agree.
  // The communicator's id, in every tag, is free on every rank.
  unsigned mine[2] = {static_cast<unsigned>(count), ~fabric.nextCommId()}, agreed[2] = {0, 0};
  allreduceWithin(mine, agreed, 2, MPI_UNSIGNED, MPI_MIN, set_up_.comm, set_up_.timeout_seconds,
                  "agreeing on the NICs and the communicator's tag");
  nic_count_ = static_cast<int>(agreed[0]);
  comm_id_ = ~agreed[1];
  fabric.usedCommId(comm_id_);

  // Every rank's worker addresses, NIC by NIC.
  const auto& workers = fabric.workers();
  std::vector<int> my_lengths;
  std::string my_blob;
  for (int n = 0; n < nic_count_; ++n) {
    my_lengths.push_back(static_cast<int>(workers[static_cast<std::size_t>(n)]->address().size()));
    my_blob += workers[static_cast<std::size_t>(n)]->address();
  }
  std::vector<int> lengths(static_cast<std::size_t>(nic_count_ * size));
  allgatherWithin(my_lengths.data(), nic_count_, MPI_INT, lengths.data(), set_up_.comm,
                  set_up_.timeout_seconds, "exchanging UCX address lengths");
  std::vector<int> counts(static_cast<std::size_t>(size)), displs(static_cast<std::size_t>(size));
  int total = 0;
  for (int r = 0; r < size; ++r) {
    int sum = 0;
    for (int n = 0; n < nic_count_; ++n) {
      sum += lengths[static_cast<std::size_t>(r * nic_count_ + n)];
    }
    counts[static_cast<std::size_t>(r)] = sum;
    displs[static_cast<std::size_t>(r)] = total;
    total += sum;
  }
  std::string blobs(static_cast<std::size_t>(total), '\0');
  MPI_Request request = MPI_REQUEST_NULL;
  if (PMPI_Iallgatherv(my_blob.data(), static_cast<int>(my_blob.size()), MPI_CHAR, blobs.data(),
                       counts.data(), displs.data(), MPI_CHAR, set_up_.comm,
                       &request) != MPI_SUCCESS) {
    throw CollectiveError(blinkSystemError, "ucx transport: MPI_Iallgatherv failed");
  }
  waitWithin(request, set_up_.timeout_seconds, "exchanging UCX worker addresses");
  addresses_.resize(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) {
    auto at = static_cast<std::size_t>(displs[static_cast<std::size_t>(r)]);
    for (int n = 0; n < nic_count_; ++n) {
      const auto length =
          static_cast<std::size_t>(lengths[static_cast<std::size_t>(r * nic_count_ + n)]);
      addresses_[static_cast<std::size_t>(r)].push_back(blobs.substr(at, length));
      at += length;
    }
  }
  // Whether UCX reaches the other nodes is known now, while every rank can still
  // agree to use another transport instead.
  std::unique_ptr<Error> unreachable;
  try {
    const std::string& my_host = set_up_.host_of[static_cast<std::size_t>(set_up_.rank)];
    for (int r = 0; r < size; ++r) {
      if (set_up_.host_of[static_cast<std::size_t>(r)] == my_host) continue;
      for (int n = 0; n < nic_count_; ++n) linkTo(r, n);
    }
  } catch (const Error& e) {
    unreachable = std::make_unique<Error>(e);
  }
  agreeOk(set_up_.comm, unreachable.get(), "reaching the other nodes over UCX",
          set_up_.timeout_seconds);
  if (set_up_.rank == 0) {
    std::ostringstream map;
    for (int r = 0; r < size; ++r) {
      map << (r ? ", " : "") << "rank " << r << " -> NIC ";
      const auto& ports = set_up_.nics_of_rank.size() > static_cast<std::size_t>(r)
                              ? set_up_.nics_of_rank[static_cast<std::size_t>(r)]
                              : std::vector<int>{};
      if (ports.empty()) {
        map << "(" << set_up_.local_rank_of[static_cast<std::size_t>(r)] << " + channel) mod "
            << nic_count_;
      }
      for (std::size_t j = 0; j < ports.size(); ++j) {
        const int n = ports[j] % nic_count_;
        map << (j ? "/" : "") << n << " "
            << Fabric::instance().nics()[static_cast<std::size_t>(n)].device;
      }
    }
    BLINK_LOG(Info, "ucx: " << details() << "; streams leave by sender and channel: " << map.str());
  }
}

UcxTransport::~UcxTransport() {
  sends_.clear();
  recvs_.clear();
  // Greetings and anything a failed run left must leave the process even if it
  // stops progressing now (e.g. sits in MPI_Finalize): flush, briefly.
  Fabric::instance().flushAll(1.0);
}

void UcxTransport::settle(double timeout_seconds) {
  const ucs_status_t status = Fabric::instance().flushAll(timeout_seconds);
  if (status == UCS_OK) return;
  for (const auto& [peer, link] : used_links_) link->check(peer);  // names a dead peer
  if (status == UCS_ERR_TIMED_OUT) {
    throw Error(blinkTimeout,
                "ucx transport: what this rank sent did not leave it within BLINK_TIMEOUT_S");
  }
  fail("flushing what this rank sent", status);
}

int UcxTransport::nicFor(int sender, int channel) const {
  const auto s = static_cast<std::size_t>(sender);
  if (s < set_up_.nics_of_rank.size() && !set_up_.nics_of_rank[s].empty()) {
    const std::vector<int>& ports = set_up_.nics_of_rank[s];
    return ports[static_cast<std::size_t>(channel) % ports.size()] % nic_count_;
  }
  const int local = set_up_.local_rank_of[s];
  return static_cast<int>((static_cast<long long>(local) + channel) % nic_count_);
}

UcxLink& UcxTransport::linkTo(int peer, int nic) {
  return Fabric::instance().link(
      nic, addresses_[static_cast<std::size_t>(peer)][static_cast<std::size_t>(nic)],
      set_up_.host_of[static_cast<std::size_t>(peer)], peer);
}

void UcxTransport::ensureStreams(const std::vector<StreamKey>& sends,
                                 const std::vector<StreamKey>& recvs) {
  const auto& workers = Fabric::instance().workers();
  struct Greeting {
    UcxLink* link;
    int peer, nic;
    void* sent;
    void* heard;
  };
  std::vector<Greeting> greetings;  // links first used now
  auto link = [&](int peer, int nic) -> UcxLink& {
    UcxLink& l = linkTo(peer, nic);
    if (std::find(used_links_.begin(), used_links_.end(), std::make_pair(peer, &l)) ==
        used_links_.end()) {
      used_links_.emplace_back(peer, &l);
    }
    if (!l.greeted) {
      l.greeted = true;
      greetings.push_back({&l, peer, nic, nullptr, nullptr});
    }
    return l;
  };
  auto checkChannel = [](int channel) {
    if (channel < 0 || channel > kMaxChannel) {
      throw Error(blinkUnsupported,
                  "ucx transport: channel " + std::to_string(channel) + " does not fit in a tag");
    }
  };
  for (const StreamKey& k : sends) {
    checkChannel(k.channel);
    if (sends_.count(k)) continue;
    const int nic = nicFor(set_up_.rank, k.channel);
    sends_[k] = std::make_unique<UcxSendStream>(link(k.peer, nic), comm_id_, k.peer, k.channel,
                                                set_up_.rank);
  }
  for (const StreamKey& k : recvs) {
    checkChannel(k.channel);
    if (recvs_.count(k)) continue;
    const int nic = nicFor(k.peer, k.channel);
    recvs_[k] = std::make_unique<UcxRecvStream>(*workers[static_cast<std::size_t>(nic)],
                                                link(k.peer, nic), comm_id_, k.peer, k.channel);
  }
  // Both ends of a stream first use its link in the same call (the NIC is a function
  // of the stream): a hello each way connects it, so that a receiver too hears when
  // its sender's process dies.
  for (Greeting& g : greetings) {
    ucp_request_param_t param{};
    g.sent = ucp_tag_send_nbx(g.link->ep, nullptr, 0,
                              tagOf(comm_id_, kHelloChannel, set_up_.rank, 0), &param);
    g.heard = ucp_tag_recv_nbx(workers[static_cast<std::size_t>(g.nic)]->handle(), nullptr, 0,
                               tagOf(comm_id_, kHelloChannel, g.peer, 0), kFullMask, &param);
  }
  const auto start = std::chrono::steady_clock::now();
  try {
    for (bool pending = true; pending;) {
      pending = false;
      for (const auto& w : workers) w->progress();
      for (Greeting& g : greetings) {
        const bool sent = finished(g.sent, *g.link, g.peer, "greeting");
        const bool heard = finished(g.heard, *g.link, g.peer, "hearing from");
        if (!sent || !heard) g.link->check(g.peer);
        pending = pending || !sent || !heard;
      }
      if (pending &&
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >
              set_up_.timeout_seconds) {
        throw Error(blinkTimeout,
                    "ucx transport: a peer did not answer within BLINK_TIMEOUT_S while the "
                    "streams were made");
      }
    }
  } catch (const Error&) {
    for (Greeting& g : greetings) {
      for (void* r : {g.sent, g.heard}) {
        if (r != nullptr && !UCS_PTR_IS_ERR(r)) {
          ucp_request_cancel(workers[static_cast<std::size_t>(g.nic)]->handle(), r);
          ucp_request_free(r);
        }
      }
    }
    throw;
  }
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
  const std::vector<Nic>& nics = Fabric::instance().nics();
  for (int n = 0; n < nic_count_; ++n) {
    const Nic& nic = nics[static_cast<std::size_t>(n)];
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
