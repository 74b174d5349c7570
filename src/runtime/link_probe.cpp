#include "runtime/link_probe.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <string>

#include "common/error.hpp"
#include "common/log.hpp"
#include "topology/host_nics.hpp"

namespace blink::runtime {
namespace {

using Clock = std::chrono::steady_clock;

// What each rank publishes: per NIC its listener's IPv4 address and port (0: none).
using Listeners = std::array<std::uint32_t, 2 * kMaxProbedNics>;

class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  Socket(Socket&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Socket& operator=(Socket&& o) noexcept {
    std::swap(fd_, o.fd_);
    return *this;
  }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
};

Socket tcpSocket() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  return Socket(fd);
}

sockaddr_in addressOf(std::uint32_t ip, std::uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = ip;  // network order, as inet_pton gave it
  a.sin_port = htons(port);
  return a;
}

// One NIC's part of the probe on a node leader.
struct Lane {
  Socket listener, sender, receiver;
  bool sending = false, sent = false, received = false;
  std::uint64_t bytes = 0;
  Clock::time_point first{}, last{};
  // Past kProbeWarmUpSeconds from the first byte (TCP's slow start and the token
  // bucket's burst are over): the bytes and time then, the rate counts from there.
  std::uint64_t warm_bytes = 0;
  Clock::time_point warm{};
};

constexpr double kProbeWarmUpSeconds = 0.05;

// A listener on `ip` (network order); its port in `port`, 0 when it failed.
Socket listenOn(std::uint32_t ip, std::uint16_t& port) {
  port = 0;
  Socket s = tcpSocket();
  sockaddr_in a = addressOf(ip, 0);
  socklen_t length = sizeof a;
  if (s.fd() < 0 || ::bind(s.fd(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::listen(s.fd(), 4) != 0 ||
      ::getsockname(s.fd(), reinterpret_cast<sockaddr*>(&a), &length) != 0) {
    return Socket();
  }
  port = ntohs(a.sin_port);
  return s;
}

// Streams on every lane for kProbeSeconds and reads what the previous leader sends.
void pump(std::vector<Lane>& lanes) {
  static std::vector<char> buffer(256 * 1024, 'b');
  const auto start = Clock::now();
  const auto stop_sending = start + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(kProbeSeconds));
  const auto give_up = stop_sending + std::chrono::duration_cast<Clock::duration>(
                                          std::chrono::duration<double>(kProbeGraceSeconds));
  for (;;) {
    const auto now = Clock::now();
    if (now > give_up) break;
    std::vector<pollfd> fds;
    std::vector<std::pair<Lane*, int>> what;  // 0 accept, 1 send, 2 receive
    for (Lane& lane : lanes) {
      if (lane.listener.fd() >= 0 && lane.receiver.fd() < 0) {
        fds.push_back({lane.listener.fd(), POLLIN, 0});
        what.emplace_back(&lane, 0);
      }
      if (lane.sending && !lane.sent) {
        if (now >= stop_sending) {
          ::shutdown(lane.sender.fd(), SHUT_WR);
          lane.sent = true;
        } else {
          fds.push_back({lane.sender.fd(), POLLOUT, 0});
          what.emplace_back(&lane, 1);
        }
      }
      if (lane.receiver.fd() >= 0 && !lane.received) {
        fds.push_back({lane.receiver.fd(), POLLIN, 0});
        what.emplace_back(&lane, 2);
      }
    }
    if (fds.empty()) break;
    ::poll(fds.data(), fds.size(), 10);
    for (std::size_t i = 0; i < fds.size(); ++i) {
      Lane& lane = *what[i].first;
      if (fds[i].revents == 0) continue;
      if (what[i].second == 0) {
        const int fd = ::accept4(lane.listener.fd(), nullptr, nullptr, SOCK_NONBLOCK);
        if (fd >= 0) lane.receiver = Socket(fd);
      } else if (what[i].second == 1) {
        while (Clock::now() < stop_sending &&
               ::send(lane.sender.fd(), buffer.data(), buffer.size(), MSG_NOSIGNAL) > 0) {
        }
        if ((fds[i].revents & (POLLERR | POLLHUP)) != 0) lane.sent = true;
      } else {
        for (;;) {
          const ssize_t got = ::recv(lane.receiver.fd(), buffer.data(), buffer.size(), 0);
          if (got > 0) {
            const auto at = Clock::now();
            if (lane.bytes == 0) lane.first = at;
            if (lane.warm_bytes == 0 &&
                std::chrono::duration<double>(at - lane.first).count() >= kProbeWarmUpSeconds) {
              lane.warm_bytes = lane.bytes;
              lane.warm = at;
            }
            lane.bytes += static_cast<std::uint64_t>(got);
            lane.last = at;
            continue;
          }
          if (got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
            lane.received = true;
          }
          break;
        }
      }
    }
  }
}

}  // namespace

std::vector<double> probeNicRates(const RankLayout& layout, MPI_Comm comm) {
  const bool leader = layout.local_rank == 0;
  std::vector<topo::HostNic> nics;
  std::vector<Lane> lanes;
  Listeners mine{};
  if (leader) {
    nics = topo::hostNics();
    if (nics.size() > static_cast<std::size_t>(kMaxProbedNics)) nics.resize(kMaxProbedNics);
    lanes.resize(nics.size());
    for (std::size_t k = 0; k < nics.size(); ++k) {
      in_addr ip{};
      if (nics[k].ipv4.empty() || inet_pton(AF_INET, nics[k].ipv4.c_str(), &ip) != 1) continue;
      std::uint16_t port = 0;
      lanes[k].listener = listenOn(ip.s_addr, port);
      if (port != 0) {
        mine[2 * k] = ip.s_addr;
        mine[2 * k + 1] = port;
      }
    }
  }
  std::vector<Listeners> all(static_cast<std::size_t>(layout.size));
  if (PMPI_Allgather(mine.data(), 2 * kMaxProbedNics, MPI_UINT32_T, all.data(), 2 * kMaxProbedNics,
                     MPI_UINT32_T, comm) != MPI_SUCCESS) {
    throw Error(blinkSystemError, "MPI_Allgather of the link probe's addresses failed");
  }
  std::vector<int> leader_of(static_cast<std::size_t>(layout.num_nodes), -1);
  for (int r = 0; r < layout.size; ++r) {
    if (layout.local_rank_of_rank[static_cast<std::size_t>(r)] == 0) {
      leader_of[static_cast<std::size_t>(layout.node_of_rank[static_cast<std::size_t>(r)])] = r;
    }
  }
  if (leader) {
    const int next = leader_of[static_cast<std::size_t>((layout.node + 1) % layout.num_nodes)];
    const Listeners& theirs = all[static_cast<std::size_t>(next)];
    for (std::size_t k = 0; k < lanes.size(); ++k) {
      if (mine[2 * k + 1] == 0 || theirs[2 * k + 1] == 0) continue;
      lanes[k].sender = tcpSocket();
      sockaddr_in from = addressOf(mine[2 * k], 0);
      sockaddr_in to = addressOf(theirs[2 * k], static_cast<std::uint16_t>(theirs[2 * k + 1]));
      if (lanes[k].sender.fd() >= 0 &&
          ::bind(lanes[k].sender.fd(), reinterpret_cast<sockaddr*>(&from), sizeof from) == 0 &&
          (::connect(lanes[k].sender.fd(), reinterpret_cast<sockaddr*>(&to), sizeof to) == 0 ||
           errno == EINPROGRESS)) {
        lanes[k].sending = true;
      }
    }
  }
  // Every leader starts streaming at once: a receiver that began late would read a
  // socket buffer's worth at memory speed.
  if (PMPI_Barrier(comm) != MPI_SUCCESS) {
    throw Error(blinkSystemError, "MPI_Barrier before the link probe failed");
  }
  std::array<double, kMaxProbedNics> rate{};
  if (leader) {
    pump(lanes);
    for (std::size_t k = 0; k < lanes.size(); ++k) {
      const Lane& lane = lanes[k];
      const double seconds = std::chrono::duration<double>(lane.last - lane.warm).count();
      // Too little to time (the peer never connected, or a NIC without address).
      if (lane.warm_bytes > 0 && lane.bytes - lane.warm_bytes >= (1u << 20) && seconds > 0.01) {
        rate[k] = static_cast<double>(lane.bytes - lane.warm_bytes) / seconds / 1e9;
      }
    }
  }
  std::vector<double> rates(static_cast<std::size_t>(layout.size) * kMaxProbedNics);
  if (PMPI_Allgather(rate.data(), kMaxProbedNics, MPI_DOUBLE, rates.data(), kMaxProbedNics,
                     MPI_DOUBLE, comm) != MPI_SUCCESS) {
    throw Error(blinkSystemError, "MPI_Allgather of the link probe's rates failed");
  }
  // The best rate any node received: what disturbs a probe (a leader not scheduled
  // on a busy machine, a late start) only ever lowers it.
  std::vector<double> best(kMaxProbedNics, 0.0);
  for (int r = 0; r < layout.size; ++r) {
    for (std::size_t k = 0; k < kMaxProbedNics; ++k) {
      best[k] = std::max(best[k], rates[static_cast<std::size_t>(r) * kMaxProbedNics + k]);
    }
  }
  while (!best.empty() && best.back() == 0.0) best.pop_back();
  return best;
}

}  // namespace blink::runtime
