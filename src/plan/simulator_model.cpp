#include "plan/simulator_model.hpp"

#include <algorithm>
#include <string>
#include <tuple>

#include "common/error.hpp"

namespace blink::plan::detail {

namespace {
constexpr double kDefaultCopyRate = 10.0 * kBytesPerGB;  // bytes/s, a GPU without links
}  // namespace

void failSimulation(const Plan& plan, const std::string& what) {
  throw Error(blinkInvalidInput,
              "simulate " + plan.algorithm + "/" + toString(plan.collective) + ": " + what);
}

std::string stepName(int rank, std::size_t index) {
  return "rank " + std::to_string(rank) + " step " + std::to_string(index);
}

void SimModel::index() {
  const std::size_t num_ranks = plan_.ranks.size();
  if (plan_.rank_gpu.size() != num_ranks) {
    failSimulation(plan_, "rank_gpu has " + std::to_string(plan_.rank_gpu.size()) +
                              " entries for " + std::to_string(num_ranks) + " ranks");
  }
  for (double share : plan_.channel_shares) {
    if (!std::isfinite(share) || share <= 0.0) {
      failSimulation(plan_,
                     "channel share " + std::to_string(share) + " is not positive and finite");
    }
  }
  rank_base_.assign(num_ranks + 1, 0);
  for (std::size_t r = 0; r < num_ranks; ++r) {
    rank_base_[r + 1] = rank_base_[r] + static_cast<int>(plan_.ranks[r].steps.size());
  }
  num_steps_ = rank_base_[num_ranks];
  const auto n = static_cast<std::size_t>(num_steps_);
  step_rank_.resize(n);
  step_index_.resize(n);
  pending_.assign(n, 0);
  completed_.assign(n, false);
  step_transfer_.assign(n, -1);
  std::vector<int> dependents_count(n + 1, 0);
  for (std::size_t r = 0; r < num_ranks; ++r) {
    const auto& steps = plan_.ranks[r].steps;
    for (std::size_t i = 0; i < steps.size(); ++i) {
      const auto g = static_cast<std::size_t>(rank_base_[r]) + i;
      step_rank_[g] = static_cast<int>(r);
      step_index_[g] = static_cast<int>(i);
      const Step& s = steps[i];
      if (s.kind != StepKind::Copy && (s.peer < 0 || s.peer >= static_cast<int>(num_ranks) ||
                                       (s.peer == static_cast<int>(r) && !self_messages_))) {
        failSimulation(plan_, stepName(static_cast<int>(r), i) + ": peer " +
                                  std::to_string(s.peer) + " out of range");
      }
      if (s.kind == StepKind::Send &&
          (s.route < 0 || s.route >= static_cast<int>(plan_.routes.size()))) {
        failSimulation(plan_, stepName(static_cast<int>(r), i) + ": send without a valid route");
      }
      if (s.kind != StepKind::Copy && !plan_.channel_shares.empty() &&
          (s.channel < 0 || s.channel >= static_cast<int>(plan_.channel_shares.size()))) {
        failSimulation(plan_, stepName(static_cast<int>(r), i) + ": channel " +
                                  std::to_string(s.channel) + " has no share");
      }
      for (int d : s.deps) {
        if (d < 0 || d >= static_cast<int>(steps.size()) || d == static_cast<int>(i)) {
          failSimulation(plan_, stepName(static_cast<int>(r), i) + ": dependency " +
                                    std::to_string(d) + " out of range");
        }
        ++dependents_count[static_cast<std::size_t>(rank_base_[r] + d)];
      }
      pending_[g] = static_cast<int>(s.deps.size());
    }
  }
  dependents_start_.assign(n + 1, 0);
  for (std::size_t g = 0; g < n; ++g) {
    dependents_start_[g + 1] = dependents_start_[g] + dependents_count[g];
  }
  dependents_.assign(static_cast<std::size_t>(dependents_start_[n]), 0);
  std::vector<int> fill(dependents_start_.begin(), dependents_start_.end() - 1);
  for (std::size_t g = 0; g < n; ++g) {
    const int base = rank_base_[static_cast<std::size_t>(step_rank_[g])];
    for (int d : step(static_cast<int>(g)).deps) {
      dependents_[static_cast<std::size_t>(fill[static_cast<std::size_t>(base + d)]++)] =
          static_cast<int>(g);
    }
  }
}

void SimModel::match() {
  using Key = std::tuple<int, int, int>;
  std::map<Key, std::pair<std::vector<int>, std::vector<int>>> queues;
  for (int g = 0; g < num_steps_; ++g) {
    const Step& s = step(g);
    const int r = step_rank_[static_cast<std::size_t>(g)];
    if (s.kind == StepKind::Send) {
      queues[{r, s.peer, s.channel}].first.push_back(g);
    } else if (s.kind == StepKind::Recv || s.kind == StepKind::RecvReduce) {
      queues[{s.peer, r, s.channel}].second.push_back(g);
    }
  }
  routes_.assign(plan_.routes.size(), RouteInfo{});
  for (const auto& [key, q] : queues) {
    const auto& [sends, recvs] = q;
    if (sends.size() != recvs.size()) {
      const auto& [from, to, channel] = key;
      const bool extra_send = sends.size() > recvs.size();
      const int g = extra_send ? sends[recvs.size()] : recvs[sends.size()];
      failSimulation(plan_,
                     stepName(step_rank_[static_cast<std::size_t>(g)],
                              static_cast<std::size_t>(step_index_[static_cast<std::size_t>(g)])) +
                         ": " + (extra_send ? "send" : "receive") + " #" +
                         std::to_string(extra_send ? recvs.size() : sends.size()) + " from rank " +
                         std::to_string(from) + " to rank " + std::to_string(to) + " on channel " +
                         std::to_string(channel) + " has no matching " +
                         (extra_send ? "receive" : "send") + " (" + std::to_string(sends.size()) +
                         " sends, " + std::to_string(recvs.size()) + " receives)");
    }
    for (std::size_t k = 0; k < sends.size(); ++k) {
      Transfer t;
      t.send = sends[k];
      t.recv = recvs[k];
      t.route = step(t.send).route;
      t.bytes = static_cast<double>(step(t.send).bytes);
      t.share = plan_.channelShare(step(t.send).channel);
      buildRoute(t.route, t.send);
      step_transfer_[static_cast<std::size_t>(t.send)] = static_cast<int>(transfers_.size());
      step_transfer_[static_cast<std::size_t>(t.recv)] = static_cast<int>(transfers_.size());
      transfers_.push_back(t);
    }
  }
}

void SimModel::buildRoute(int route, int send) {
  RouteInfo& info = routes_[static_cast<std::size_t>(route)];
  if (info.built) return;
  const auto& vertices = plan_.routes[static_cast<std::size_t>(route)];
  const std::string who =
      "route " + std::to_string(route) + " (used by " +
      stepName(step_rank_[static_cast<std::size_t>(send)],
               static_cast<std::size_t>(step_index_[static_cast<std::size_t>(send)])) +
      ")";
  if (vertices.size() < 2) failSimulation(plan_, who + " has fewer than two vertices");
  for (auto v : vertices) {
    if (v >= topology_.numDevices()) {
      failSimulation(plan_, who + ": vertex " + std::to_string(v) + " is not in topology '" +
                                topology_.name() + "'");
    }
  }
  for (std::size_t k = 0; k + 1 < vertices.size(); ++k) {
    const int h = hopId(vertices[k], vertices[k + 1], who);
    auto it = std::find_if(info.hops.begin(), info.hops.end(),
                           [h](const HopUse& u) { return u.hop == h; });
    if (it == info.hops.end()) {
      info.hops.push_back({h, 1});
    } else {
      ++it->count;
    }
    info.latency_s += hops_[static_cast<std::size_t>(h)].latency_s;
  }
  info.built = true;
}

bool SimModel::sharedMemoryOnly(topo::Vertex u, topo::Vertex v) const {
  const auto links = topology_.linksBetween(u, v);
  return !links.empty() && std::all_of(links.begin(), links.end(), [&](const auto& e) {
    return topology_.link(e).kind == topo::LinkKind::SharedMemory;
  });
}

int SimModel::hopId(topo::Vertex u, topo::Vertex v, const std::string& who) {
  const bool half_duplex = sharedMemoryOnly(u, v);
  const auto key =
      half_duplex ? std::make_pair(std::min(u, v), std::max(u, v)) : std::make_pair(u, v);
  auto [it, inserted] = hop_ids_.try_emplace(key, static_cast<int>(hops_.size()));
  if (!inserted) return it->second;
  Hop hop;
  for (const auto& e : topology_.linksBetween(u, v)) {
    const topo::Link& link = topology_.link(e);
    hop.capacity += link.capacity() * kBytesPerGB;
    hop.latency_s = std::max(hop.latency_s, link.latency_us * 1e-6);
  }
  if (hop.capacity <= 0.0) {
    hop_ids_.erase(it);
    failSimulation(plan_, who + ": hop " + topology_.device(u).id + " -> " +
                              topology_.device(v).id + " has no link in topology '" +
                              topology_.name() + "'");
  }
  hops_.push_back(hop);
  return it->second;
}

double SimModel::copyRate(int rank) {
  if (copy_rate_.empty()) copy_rate_.assign(plan_.ranks.size(), -1.0);
  double& rate = copy_rate_[static_cast<std::size_t>(rank)];
  if (rate > 0.0) return rate;
  rate = 0.0;
  if (auto v = topology_.findGpu(plan_.rank_gpu[static_cast<std::size_t>(rank)])) {
    const auto& g = topology_.graph();
    for (auto [e, end] = boost::out_edges(*v, g); e != end; ++e) {
      rate = std::max(rate, g[*e].capacity() * kBytesPerGB);
    }
    for (auto [e, end] = boost::in_edges(*v, g); e != end; ++e) {
      rate = std::max(rate, g[*e].capacity() * kBytesPerGB);
    }
  }
  if (rate <= 0.0) rate = kDefaultCopyRate;
  return rate;
}
}  // namespace blink::plan::detail
