#include "transport/ucx/ucx_progress_thread.hpp"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "common/error.hpp"

namespace blink::transport {

UcxProgressThread::UcxProgressThread(std::vector<ucp_worker_h> workers, std::mutex& ucp_mutex,
                                     const std::atomic<int>& lock_wanted)
    : workers_(std::move(workers)), mutex_(ucp_mutex), lock_wanted_(lock_wanted) {
  auto failed = [&](const std::string& what) {
    const std::string why = what + ": " + std::strerror(errno);
    if (wake_fd_ >= 0) ::close(wake_fd_);
    if (epoll_fd_ >= 0) ::close(epoll_fd_);
    throw Error(blinkSystemError, "ucx progress thread: " + why);
  };
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) failed("epoll_create1");
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) failed("eventfd");
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.fd = wake_fd_;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &event) != 0) failed("epoll_ctl");
  for (ucp_worker_h worker : workers_) {
    int efd = -1;
    if (const ucs_status_t s = ucp_worker_get_efd(worker, &efd); s != UCS_OK) {
      errno = 0;
      failed(std::string("ucp_worker_get_efd (") + ucs_status_string(s) + ")");
    }
    event.data.fd = efd;
    if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, efd, &event) != 0) failed("epoll_ctl");
  }
  thread_ = new std::thread([this] { run(); });
}

UcxProgressThread::~UcxProgressThread() {
  stop();
  if (wake_fd_ >= 0) ::close(wake_fd_);
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
}

void UcxProgressThread::stop() {
  if (thread_ == nullptr) return;
  stopping_.store(true);
  {
    std::lock_guard lock(mutex_);
    driven_ended_.notify_all();
  }
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t written = ::write(wake_fd_, &one, sizeof one);
  thread_->join();
  delete thread_;
  thread_ = nullptr;
}

void UcxProgressThread::forgetAfterFork() {
  thread_ = nullptr;  // the std::thread object is leaked: it names the parent's thread
  driven_ = false;
}

void UcxProgressThread::progressAll() {
  for (ucp_worker_h worker : workers_) {
    while (ucp_worker_progress(worker) != 0 && lock_wanted_.load(std::memory_order_relaxed) == 0) {
    }
  }
}

void UcxProgressThread::stepAside(std::unique_lock<std::mutex>& lock) {
  if (lock_wanted_.load(std::memory_order_relaxed) == 0) return;
  lock.unlock();
  while (lock_wanted_.load(std::memory_order_relaxed) > 0 && !stopping_.load()) {
    std::this_thread::yield();
  }
  lock.lock();
}

bool UcxProgressThread::armAll() {
  for (ucp_worker_h worker : workers_) {
    if (ucp_worker_arm(worker) == UCS_ERR_BUSY) return false;
  }
  return true;
}

void UcxProgressThread::released() {
  driven_ = false;
  // Bounded: a peer streaming to this rank without pause keeps arm() busy; the
  // thread's own loop carries on from there.
  for (int tries = 0; tries < 8; ++tries) {
    progressAll();
    if (armAll()) return;
  }
}

void UcxProgressThread::run() {
  std::unique_lock lock(mutex_);
  epoll_event events[8];
  while (!stopping_.load()) {
    if (driven_) {
      // A collective drives the workers: at most one pass per kDrivenStale of its
      // silence (it waits on its node's board, or failed without settling), never
      // woken by the network, so that large transfers keep the lock and the cores.
      const auto idle = std::chrono::steady_clock::now() - last_drive_;
      if (idle < kDrivenStale) {
        driven_ended_.wait_for(lock, kDrivenStale - idle);
        continue;
      }
      for (ucp_worker_h worker : workers_) ucp_worker_progress(worker);
      driven_ended_.wait_for(lock, kDrivenStale);
      continue;
    }
    progressAll();
    if (lock_wanted_.load(std::memory_order_relaxed) > 0) {
      stepAside(lock);
      continue;
    }
    if (!armAll()) continue;
    lock.unlock();
    const int ready = ::epoll_wait(epoll_fd_, events, 8, kSafetyWakeMs);
    for (int i = 0; i < ready; ++i) {
      if (events[i].data.fd == wake_fd_) {
        std::uint64_t count = 0;
        [[maybe_unused]] const ssize_t got = ::read(wake_fd_, &count, sizeof count);
      }
    }
    lock.lock();
  }
}

}  // namespace blink::transport
