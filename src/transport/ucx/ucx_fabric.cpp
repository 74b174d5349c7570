#include "transport/ucx/ucx_fabric.hpp"

#include <pthread.h>

#include <cstdlib>

#include "common/error.hpp"

namespace blink::transport {

void failUcx(const std::string& what, ucs_status_t status) {
  throw Error(blinkSystemError, "ucx transport: " + what + ": " + ucs_status_string(status));
}

std::string UcxLink::describe(int rank) const {
  return "rank " + std::to_string(rank) + " on host '" + host + "' via " +
         (device.empty() ? std::string("UCX's devices") : device);
}

void UcxLink::check(int rank) const {
  const auto status = static_cast<ucs_status_t>(failure.load(std::memory_order_acquire));
  if (status == UCS_OK) return;
  throw Error(blinkSystemError, "ucx transport: the connection to " + describe(rank) + " broke (" +
                                    ucs_status_string(status) + "): did that process die?");
}

void UcxLink::failed(int rank, const char* what, ucs_status_t status) const {
  throw Error(blinkSystemError, std::string("ucx transport: ") + what + " " + describe(rank) +
                                    " failed: " + ucs_status_string(status));
}

UcxWorker::UcxWorker(const std::string& net_device) : device_(net_device) {
  ucp_config_t* config = nullptr;
  if (const ucs_status_t s = ucp_config_read(nullptr, nullptr, &config); s != UCS_OK) {
    failUcx("reading UCX's configuration", s);
  }
  auto modify = [&](const char* name, const std::string& value) {
    if (const ucs_status_t s = ucp_config_modify(config, name, value.c_str()); s != UCS_OK) {
      ucp_config_release(config);
      failUcx(std::string("setting UCX_") + name + "=" + value, s);
    }
  };
  if (!device_.empty()) modify("NET_DEVICES", device_);
  // Over TCP (an IP interface, not an InfiniBand port), UCX 1.13's rendezvous
  // sometimes stalled for good: across emulated hosts a 40 KB tagged send stayed
  // pending and its posted receive never completed, both sides progressing, in
  // about 1 of 8 runs of Reduce.EveryRootAndOp (2-3 hosts); with eager sends only,
  // 0 of 60 then, but later batches still stalled in about 1 run of 6. That later
  // stall was no UCX loss: the sender posted the piece late, held in a cycle with
  // Open MPI's own progress (common/backoff.hpp); the rendezvous stall may have been
  // the same, which was not checked. Rendezvous buys TCP no zero copy worth having
  // (the kernel copies anyway), so streams on IP interfaces send eagerly, unless
  // UCX_RNDV_THRESH says otherwise.
  if (!device_.empty() && device_.find(':') == std::string::npos &&
      std::getenv("UCX_RNDV_THRESH") == nullptr) {
    modify("RNDV_THRESH", "inf");
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  // WAKEUP: the progress thread sleeps on the worker's event fd.
  params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
  const ucs_status_t init = ucp_init(&params, config, &context_);
  ucp_config_release(config);
  if (init != UCS_OK) failUcx("ucp_init" + (device_.empty() ? "" : " on " + device_), init);
  ucp_worker_params_t worker_params{};
  worker_params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  // Two threads use the worker (a collective, the progress thread), never at once:
  // the fabric's mutex is around every UCP call. UCS_THREAD_MODE_MULTI (UCX's own
  // locks) made a small AllReduce across emulated hosts take about 3 ms instead of
  // 0.1-0.2 ms.
  worker_params.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  if (const ucs_status_t s = ucp_worker_create(context_, &worker_params, &worker_); s != UCS_OK) {
    ucp_cleanup(context_);
    failUcx("ucp_worker_create", s);
  }
  ucp_address_t* address = nullptr;
  std::size_t length = 0;
  if (const ucs_status_t s = ucp_worker_get_address(worker_, &address, &length); s != UCS_OK) {
    failUcx("ucp_worker_get_address", s);
  }
  address_.assign(reinterpret_cast<const char*>(address), length);
  ucp_worker_release_address(worker_, address);
}

UcxFabric& UcxFabric::instance() {
  static UcxFabric* fabric = new UcxFabric();  // never destroyed: the exit releases UCX
  return *fabric;
}

const std::vector<std::unique_ptr<UcxWorker>>& UcxFabric::workers() {
  std::lock_guard lock(ucp_mutex_);
  if (!made_) {
    made_ = true;
    try {
      make();
    } catch (const Error& e) {
      why_not_ = e.what();
      thread_.reset();
      workers_.clear();
    }
  }
  if (!why_not_.empty()) throw Error(blinkSystemError, why_not_);
  return workers_;
}

// With the lock held.
void UcxFabric::make() {
  nics_ = discoverNics();
  std::vector<ucp_worker_h> handles;
  for (const Nic& nic : nics_) {
    workers_.push_back(std::make_unique<UcxWorker>(nic.device));
    handles.push_back(workers_.back()->handle());
  }
  thread_ = std::make_unique<UcxProgressThread>(std::move(handles), ucp_mutex_, lock_wanted_);
  // The thread is joined at exit, after MPI_Finalize, not in it: Open MPI's
  // MPI_Finalize waits for every rank, and until then a peer still inside a
  // collective may need what this rank's worker holds or its answer.
  std::atexit(stopAtExit);
  pthread_atfork(beforeFork, afterForkInParent, afterForkInChild);
}

void UcxFabric::stopAtExit() {
  UcxFabric& fabric = instance();
  if (fabric.thread_) fabric.thread_->stop();
}

// No UCP call is half done while the process forks; a child has no progress thread
// and must not touch the parent's workers (their sockets are the parent's).
void UcxFabric::beforeFork() {
  instance().ucp_mutex_.lock();
}
void UcxFabric::afterForkInParent() {
  instance().ucp_mutex_.unlock();
}
void UcxFabric::afterForkInChild() {
  UcxFabric& fabric = instance();
  if (fabric.thread_) fabric.thread_->forgetAfterFork();
  fabric.why_not_ = "ucx transport: UCX was set up by the parent of this forked process";
  fabric.ucp_mutex_.unlock();
}

void UcxFabric::progressAll() const {
  for (const auto& w : workers_) {
    while (ucp_worker_progress(w->handle()) != 0) {
    }
  }
}

void UcxFabric::progressOncePerPass(std::uint64_t& seen) {
  if (seen == progress_generation_) {
    progressAll();
    ++progress_generation_;
  }
  seen = progress_generation_;
}

namespace {
void onPeerError(void* arg, ucp_ep_h /*ep*/, ucs_status_t status) {
  static_cast<UcxLink*>(arg)->failure.store(status, std::memory_order_release);
}
}  // namespace

UcxLink& UcxFabric::link(int nic, const std::string& address, const std::string& host, int rank) {
  std::lock_guard lock(ucp_mutex_);
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

void UcxFabric::usedCommId(std::uint32_t id) {
  std::uint32_t want = next_comm_id_.load();
  while (want <= id && !next_comm_id_.compare_exchange_weak(want, id + 1)) {
  }
}

}  // namespace blink::transport
