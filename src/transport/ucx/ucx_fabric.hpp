// The process's UCX workers (one per NIC), their endpoints and their progress
// thread: the "fabric" of ucx_transport.hpp, shared by every communicator of the
// process that uses ucx.
#pragma once

#include <ucp/api/ucp.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "transport/ucx/nic_list.hpp"
#include "transport/ucx/ucx_progress_thread.hpp"

namespace blink::transport {

[[noreturn]] void failUcx(const std::string& what, ucs_status_t status);

// An endpoint to one peer worker on one NIC.
struct UcxLink {
  ucp_ep_h ep = nullptr;
  std::atomic<int> failure{UCS_OK};  // set by UCX's error callback during progress
  std::string host, device;
  bool greeted = false;  // a hello went each way (see UcxTransport::ensureStreams)

  std::string describe(int rank) const;
  // Throws naming the peer if UCX reported its connection broken.
  void check(int rank) const;
  [[noreturn]] void failed(int rank, const char* what, ucs_status_t status) const;
};

// A UCP context and worker restricted to one network device.
class UcxWorker {
 public:
  explicit UcxWorker(const std::string& net_device);
  // Never destroyed (see ucx_transport.hpp): the process's exit releases the contexts.
  UcxWorker(const UcxWorker&) = delete;
  UcxWorker& operator=(const UcxWorker&) = delete;

  ucp_worker_h handle() const { return worker_; }
  const std::string& address() const { return address_; }
  const std::string& device() const { return device_; }

 private:
  std::string device_;
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  std::string address_;
};

class UcxFabric {
 public:
  static UcxFabric& instance();

  // Every UCP call of the process holds this lock (the progress thread's too). A
  // caller that has to wait for it says so (lock_wanted_), and the progress thread,
  // when it holds the lock for long (data keeps arriving, so its workers cannot be
  // armed), steps aside instead of keeping a collective from its own sends.
  std::unique_lock<std::mutex> lock() {
    std::unique_lock held(ucp_mutex_, std::try_to_lock);
    if (held.owns_lock()) return held;
    lock_wanted_.fetch_add(1, std::memory_order_relaxed);
    held.lock();
    lock_wanted_.fetch_sub(1, std::memory_order_relaxed);
    return held;
  }

  // The workers, made (with the progress thread) at the first call; throws, at every
  // later call too, if they could not be made. Takes the lock.
  const std::vector<std::unique_ptr<UcxWorker>>& workers();
  const std::vector<Nic>& nics() const { return nics_; }

  // With the lock held. A collective drives the workers: the thread keeps off.
  void driving() { thread_->driving(); }
  // With the lock held. The collective is done with them (UcxTransport::settle).
  void released() { thread_->released(); }
  // With the lock held. Progresses every NIC's worker: over TCP a peer's bytes on
  // another NIC move only while this process reads and writes that NIC's sockets.
  void progressAll() const;
  // With the lock held. progressAll() once per pass of a caller that polls several
  // streams in turn (the executor over its lanes): each ucp_worker_progress of a
  // worker with connections is an epoll_wait (0.6 us here, 1.2 us for two NICs), and
  // polling k pending streams progressed every worker k times per pass. `seen` is the
  // stream's: where another stream has progressed since this one last polled, the
  // pass has progressed already and this one only checks its request. A stream
  // polled alone (seen unchanged since its last poll) progresses every time.
  void progressOncePerPass(std::uint64_t& seen);

  // The endpoint to the worker at `address` on NIC `nic`, made at the first call.
  // Takes the lock.
  UcxLink& link(int nic, const std::string& address, const std::string& host, int rank);

  // A communicator id no live communicator of this process uses.
  std::uint32_t nextCommId() const { return next_comm_id_.load(); }
  void usedCommId(std::uint32_t id);

 private:
  UcxFabric() = default;
  void make();
  static void stopAtExit();
  static void beforeFork();
  static void afterForkInParent();
  static void afterForkInChild();

  std::mutex ucp_mutex_;
  std::atomic<int> lock_wanted_{0};  // callers of lock() waiting for ucp_mutex_
  bool made_ = false;
  std::string why_not_;
  std::vector<Nic> nics_;
  std::vector<std::unique_ptr<UcxWorker>> workers_;
  std::unique_ptr<UcxProgressThread> thread_;
  std::map<std::pair<int, std::string>, std::unique_ptr<UcxLink>> links_;
  std::atomic<std::uint32_t> next_comm_id_{1};
  std::uint64_t progress_generation_ = 0;  // under ucp_mutex_: progressOncePerPass calls
};

}  // namespace blink::transport
