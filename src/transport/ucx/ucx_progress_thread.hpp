// Progress for the fabric's workers when no collective drives them.
//
// Why: over UCX 1.13's TCP transport, bytes a send handed to UCX but the socket did
// not take yet move only while the sender's worker is progressed, and a flush (or an
// endpoint's wire-up) completes only once the peer's worker answers. A rank that has
// returned from Blink (into PMPI or user code) progressed nothing, so its peers
// could wait for it for ever (ucx_transport.hpp). This thread makes progress
// independent of Blink being called.
//
// It must not spin (these machines run 4-8 ranks on 2 cores): it sleeps in epoll on
// the workers' event fds (ucp_worker_get_efd), armed with ucp_worker_arm, and wakes
// on network events, on stop, or after a safety timeout. Every UCP call of the
// process holds one mutex (the workers are UCS_THREAD_MODE_SERIALIZED). While a
// collective drives the workers itself (push/pull mark it; settle() ends it) the
// thread is not woken by the network and does at most one progress pass per
// kDrivenStale in which the collective made no UCP call (it waits on its node's
// board, or failed without settling): arming and progressing on every event during
// large transfers took the lock and a core from the collective and halved 2-NIC
// AllReduce bandwidth at 4-16 MiB.
// When no collective drives them and data keeps arriving (a peer already streams the
// next call's pieces), the workers cannot be armed and the thread progresses again
// and again; it used to do so without releasing the mutex, so the next collective's
// first UCP call waited (its own sends with it) until the peers paused. Now it
// drains no further, and steps aside, once another thread waits for the mutex.
#pragma once

#include <ucp/api/ucp.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace blink::transport {

class UcxProgressThread {
 public:
  // Starts the thread. `workers` outlive it; `ucp_mutex` guards every UCP call;
  // `lock_wanted` counts the other threads waiting for it (UcxFabric::lock).
  // Throws blink::Error when the event fds cannot be had.
  UcxProgressThread(std::vector<ucp_worker_h> workers, std::mutex& ucp_mutex,
                    const std::atomic<int>& lock_wanted);
  ~UcxProgressThread();  // stop()
  UcxProgressThread(const UcxProgressThread&) = delete;
  UcxProgressThread& operator=(const UcxProgressThread&) = delete;

  // The caller holds the UCP mutex in both.
  // A collective is about to drive the workers itself.
  void driving() {
    driven_ = true;
    last_drive_ = std::chrono::steady_clock::now();
  }
  // The collective is done with them: progress what it left and arm the workers, so
  // that the sleeping thread wakes on the next network event.
  void released();

  // Joins the thread (idempotent). Not with the UCP mutex held.
  void stop();
  // In a forked child: the thread does not exist there; forget it without joining.
  void forgetAfterFork();

 private:
  void run();
  void progressAll();
  bool armAll();  // false: events are pending, progress again
  // With the lock held: while another thread waits for the lock, lets it have it.
  void stepAside(std::unique_lock<std::mutex>& lock);

  static constexpr std::chrono::milliseconds kDrivenStale{2};
  static constexpr int kSafetyWakeMs = 100;

  std::vector<ucp_worker_h> workers_;
  std::mutex& mutex_;
  const std::atomic<int>& lock_wanted_;
  std::condition_variable driven_ended_;
  bool driven_ = false;  // under mutex_
  std::chrono::steady_clock::time_point last_drive_;
  std::atomic<bool> stopping_{false};
  int epoll_fd_ = -1;
  int wake_fd_ = -1;               // an eventfd in the epoll set: stop() writes it
  std::thread* thread_ = nullptr;  // leaked in a forked child (no thread to join there)
};

}  // namespace blink::transport
