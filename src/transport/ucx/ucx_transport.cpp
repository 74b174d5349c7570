#include "transport/ucx/ucx_transport.hpp"

#include <ucp/api/ucp.h>

#include <algorithm>
#include <sstream>

#include "common/backoff.hpp"
#include "common/error.hpp"
#include "common/log.hpp"
#include "common/mpi_wait.hpp"
#include "transport/ucx/nic_list.hpp"
#include "transport/ucx/ucx_fabric.hpp"
#include "transport/ucx/ucx_streams.hpp"

namespace blink::transport {

UcxTransport::UcxTransport(const UcxSetUp& set_up) : set_up_(set_up) {
  const int size = static_cast<int>(set_up_.local_rank_of.size());
  UcxFabric& fabric = UcxFabric::instance();
  std::unique_ptr<Error> failure;
  int count = 0;
  try {
    if (size > kUcxMaxRanks) {
      throw Error(blinkUnsupported, "ucx transport: more than " + std::to_string(kUcxMaxRanks) +
                                        " ranks do not fit in a tag");
    }
    count = static_cast<int>(fabric.workers().size());
  } catch (const Error& e) {
    failure = std::make_unique<Error>(e);
  }
  agreeAllOk(set_up_.comm, failure.get(), "setting up UCX", set_up_.timeout_seconds);
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
  agreeAllOk(set_up_.comm, unreachable.get(), "reaching the other nodes over UCX",
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
            << UcxFabric::instance().nics()[static_cast<std::size_t>(n)].device;
      }
    }
    BLINK_LOG(Info, "ucx: " << details() << "; streams leave by sender and channel: " << map.str());
  }
}

UcxTransport::~UcxTransport() {
  // What this rank sent and UCX still holds keeps leaving: the progress thread
  // outlives every communicator.
  sends_.clear();
  recvs_.clear();
}

void UcxTransport::settle(double /*timeout_seconds*/) {
  // A push completed locally (UCX holds the bytes); the progress thread sends the
  // rest and answers the peers from now on, so nothing here waits for a peer.
  UcxFabric& fabric = UcxFabric::instance();
  auto lock = fabric.lock();
  fabric.released();
  for (const auto& [peer, link] : used_links_) link->check(peer);  // names a dead peer
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
  return UcxFabric::instance().link(
      nic, addresses_[static_cast<std::size_t>(peer)][static_cast<std::size_t>(nic)],
      set_up_.host_of[static_cast<std::size_t>(peer)], peer);
}

void UcxTransport::ensureStreams(const std::vector<StreamKey>& sends,
                                 const std::vector<StreamKey>& recvs) {
  const auto& workers = UcxFabric::instance().workers();
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
    if (channel < 0 || channel > kUcxMaxChannel) {
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
  auto lock = UcxFabric::instance().lock();
  for (Greeting& g : greetings) {
    ucp_request_param_t param{};
    g.sent = ucp_tag_send_nbx(g.link->ep, nullptr, 0,
                              ucxTag(comm_id_, kUcxHelloChannel, set_up_.rank, 0), &param);
    g.heard = ucp_tag_recv_nbx(workers[static_cast<std::size_t>(g.nic)]->handle(), nullptr, 0,
                               ucxTag(comm_id_, kUcxHelloChannel, g.peer, 0), kUcxFullMask, &param);
  }
  // Waits as every other wait does (Backoff): it lets MPI progress too, which a peer
  // still in an MPI call may need from this rank before it comes to greet.
  Backoff backoff(set_up_.timeout_seconds);
  try {
    for (std::size_t pending = greetings.size() * 2; pending > 0;) {
      if (!lock.owns_lock()) lock.lock();
      UcxFabric::instance().progressAll();
      std::size_t still = 0;
      for (Greeting& g : greetings) {
        const bool sent = ucxFinished(g.sent, *g.link, g.peer, "greeting");
        const bool heard = ucxFinished(g.heard, *g.link, g.peer, "hearing from");
        if (!sent || !heard) g.link->check(g.peer);
        still += (sent ? 0 : 1) + (heard ? 0 : 1);
      }
      lock.unlock();  // lets the progress thread in between the polls
      if (still < pending) {
        backoff.progressed();
      } else if (!backoff.idle()) {
        throw Error(blinkTimeout,
                    "ucx transport: a peer did not answer within BLINK_TIMEOUT_S while the "
                    "streams were made");
      }
      pending = still;
    }
  } catch (const Error&) {
    if (!lock.owns_lock()) lock.lock();
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
  const std::vector<Nic>& nics = UcxFabric::instance().nics();
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
