#include "plan/simulator.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <queue>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/error.hpp"

namespace blink::plan {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kBytesPerGB = 1e9;
constexpr double kDefaultCopyRate = 10.0 * kBytesPerGB;  // bytes/s, a GPU without links
// A flow whose remaining bytes fall below this fraction of its size is done (absorbs
// the rounding of remaining -= rate * dt over many events).
constexpr double kDoneFraction = 1e-9;

[[noreturn]] void fail(const Plan& plan, const std::string& what) {
  throw Error(blinkInvalidInput,
              "simulate " + plan.algorithm + "/" + toString(plan.collective) + ": " + what);
}

std::string stepName(int rank, std::size_t index) {
  return "rank " + std::to_string(rank) + " step " + std::to_string(index);
}

struct HopUse {
  int hop;    // index into Simulator::hops_
  int count;  // how often the route crosses it
};

struct RouteInfo {
  bool built = false;
  std::vector<HopUse> hops;
  double latency_s = 0.0;  // sum over the route's hops
};

struct Hop {
  double capacity = 0.0;   // bytes/s, all links u -> v together
  double latency_s = 0.0;  // the slowest of those links
  double carried = 0.0;    // bytes moved over it so far
};

struct Transfer {
  int send = -1;  // global step ids
  int recv = -1;
  int route = -1;
  double bytes = 0.0;
  int ready_sides = 0;
  double remaining = 0.0;
  double rate = 0.0;
};

struct Event {
  double time;
  std::uint64_t seq;
  bool is_copy;  // copy completion of step `id`; otherwise latency expiry of transfer `id`
  int id;
  bool operator>(const Event& o) const { return std::tie(time, seq) > std::tie(o.time, o.seq); }
};

class Simulator {
 public:
  Simulator(const Plan& plan, const topo::Topology& topology, const SimOptions& options)
      : plan_(plan), topology_(topology), options_(options) {}

  SimResult run() {
    index();
    match();
    for (int g = 0; g < num_steps_; ++g) {
      if (pending_[static_cast<std::size_t>(g)] == 0) makeReady(g);
    }
    loop();
    if (completed_count_ != num_steps_) reportDeadlock();
    SimResult result;
    result.seconds = last_completion_;
    result.transfers = transfers_.size();
    if (result.seconds > 0.0) {
      for (const Hop& h : hops_) {
        result.busiest_link_utilisation =
            std::max(result.busiest_link_utilisation, h.carried / (h.capacity * result.seconds));
      }
    }
    return result;
  }

 private:
  // ---- set-up --------------------------------------------------------------

  const Step& step(int g) const {
    const std::size_t gi = static_cast<std::size_t>(g);
    return plan_.ranks[static_cast<std::size_t>(step_rank_[gi])]
        .steps[static_cast<std::size_t>(step_index_[gi])];
  }

  // Global step ids, dependency counts and the reverse dependency lists (CSR).
  void index() {
    const std::size_t num_ranks = plan_.ranks.size();
    if (plan_.rank_gpu.size() != num_ranks) {
      fail(plan_, "rank_gpu has " + std::to_string(plan_.rank_gpu.size()) + " entries for " +
                      std::to_string(num_ranks) + " ranks");
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
                                         s.peer == static_cast<int>(r))) {
          fail(plan_, stepName(static_cast<int>(r), i) + ": peer " + std::to_string(s.peer) +
                          " out of range");
        }
        if (s.kind == StepKind::Send &&
            (s.route < 0 || s.route >= static_cast<int>(plan_.routes.size()))) {
          fail(plan_, stepName(static_cast<int>(r), i) + ": send without a valid route");
        }
        for (int d : s.deps) {
          if (d < 0 || d >= static_cast<int>(steps.size()) || d == static_cast<int>(i)) {
            fail(plan_, stepName(static_cast<int>(r), i) + ": dependency " + std::to_string(d) +
                            " out of range");
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

  // FIFO matching per (sender, receiver, channel): the k-th Send with the k-th receive.
  void match() {
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
        fail(plan_, stepName(step_rank_[static_cast<std::size_t>(g)],
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
        buildRoute(t.route, t.send);
        step_transfer_[static_cast<std::size_t>(t.send)] = static_cast<int>(transfers_.size());
        step_transfer_[static_cast<std::size_t>(t.recv)] = static_cast<int>(transfers_.size());
        transfers_.push_back(t);
      }
    }
  }

  void buildRoute(int route, int send) {
    RouteInfo& info = routes_[static_cast<std::size_t>(route)];
    if (info.built) return;
    const auto& vertices = plan_.routes[static_cast<std::size_t>(route)];
    const std::string who =
        "route " + std::to_string(route) + " (used by " +
        stepName(step_rank_[static_cast<std::size_t>(send)],
                 static_cast<std::size_t>(step_index_[static_cast<std::size_t>(send)])) +
        ")";
    if (vertices.size() < 2) fail(plan_, who + " has fewer than two vertices");
    for (auto v : vertices) {
      if (v >= topology_.numDevices()) {
        fail(plan_, who + ": vertex " + std::to_string(v) + " is not in topology '" +
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

  int hopId(topo::Vertex u, topo::Vertex v, const std::string& who) {
    auto [it, inserted] = hop_ids_.try_emplace({u, v}, static_cast<int>(hops_.size()));
    if (!inserted) return it->second;
    Hop hop;
    for (const auto& e : topology_.linksBetween(u, v)) {
      const topo::Link& link = topology_.link(e);
      hop.capacity += link.capacity() * kBytesPerGB;
      hop.latency_s = std::max(hop.latency_s, link.latency_us * 1e-6);
    }
    if (hop.capacity <= 0.0) {
      hop_ids_.erase(it);
      fail(plan_, who + ": hop " + topology_.device(u).id + " -> " + topology_.device(v).id +
                      " has no link in topology '" + topology_.name() + "'");
    }
    hops_.push_back(hop);
    return it->second;
  }

  double copyRate(int rank) {
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

  // ---- the event loop ------------------------------------------------------

  void schedule(double time, bool is_copy, int id) { events_.push({time, seq_++, is_copy, id}); }

  void makeReady(int g) {
    const Step& s = step(g);
    if (s.kind == StepKind::Copy) {
      const int r = step_rank_[static_cast<std::size_t>(g)];
      schedule(now_ + static_cast<double>(s.bytes) / copyRate(r), true, g);
      return;
    }
    const int t = step_transfer_[static_cast<std::size_t>(g)];
    Transfer& tr = transfers_[static_cast<std::size_t>(t)];
    if (++tr.ready_sides == 2) {
      const double latency =
          routes_[static_cast<std::size_t>(tr.route)].latency_s + options_.step_overhead_us * 1e-6;
      schedule(now_ + latency, false, t);
    }
  }

  void completeStep(int g) {
    const auto gi = static_cast<std::size_t>(g);
    completed_[gi] = true;
    ++completed_count_;
    last_completion_ = std::max(last_completion_, now_);
    for (int k = dependents_start_[gi]; k < dependents_start_[gi + 1]; ++k) {
      const int d = dependents_[static_cast<std::size_t>(k)];
      if (--pending_[static_cast<std::size_t>(d)] == 0) makeReady(d);
    }
  }

  void completeTransfer(int t) {
    const Transfer& tr = transfers_[static_cast<std::size_t>(t)];
    for (const HopUse& u : routes_[static_cast<std::size_t>(tr.route)].hops) {
      hops_[static_cast<std::size_t>(u.hop)].carried += tr.bytes * u.count;
    }
    const int send = tr.send, recv = tr.recv;
    completeStep(send);
    completeStep(recv);
  }

  void startFlow(int t) {
    Transfer& tr = transfers_[static_cast<std::size_t>(t)];
    if (tr.bytes <= 0.0) {
      completeTransfer(t);
      return;
    }
    tr.remaining = tr.bytes;
    active_.push_back(t);
    flows_changed_ = true;
  }

  // Max-min fair rates by progressive filling over the hops the active flows use.
  void recomputeRates() {
    if (scratch_cap_.size() < hops_.size()) {
      scratch_cap_.assign(hops_.size(), 0.0);
      scratch_weight_.assign(hops_.size(), 0);
      scratch_local_.assign(hops_.size(), -1);
    }
    touched_.clear();
    for (int f : active_) {
      for (const HopUse& u :
           routes_[static_cast<std::size_t>(transfers_[static_cast<std::size_t>(f)].route)].hops) {
        const auto h = static_cast<std::size_t>(u.hop);
        if (scratch_local_[h] < 0) {
          scratch_local_[h] = static_cast<int>(touched_.size());
          touched_.push_back(u.hop);
          scratch_cap_[h] = hops_[h].capacity;
          scratch_weight_[h] = 0;
          if (hop_flows_.size() < touched_.size()) hop_flows_.emplace_back();
          hop_flows_[touched_.size() - 1].clear();
        }
        scratch_weight_[h] += u.count;
        hop_flows_[static_cast<std::size_t>(scratch_local_[h])].push_back(f);
      }
      transfers_[static_cast<std::size_t>(f)].rate = -1.0;  // not fixed yet
    }
    std::size_t unfixed = active_.size();
    while (unfixed > 0) {
      int best = -1;
      double best_share = kInf;
      for (int h : touched_) {
        const auto hi = static_cast<std::size_t>(h);
        if (scratch_weight_[hi] <= 0) continue;
        const double share = std::max(scratch_cap_[hi], 0.0) / scratch_weight_[hi];
        if (share < best_share) {
          best_share = share;
          best = h;
        }
      }
      if (best < 0) break;  // cannot happen: every unfixed flow loads some hop
      const auto& flows =
          hop_flows_[static_cast<std::size_t>(scratch_local_[static_cast<std::size_t>(best)])];
      for (int f : flows) {
        Transfer& tr = transfers_[static_cast<std::size_t>(f)];
        if (tr.rate >= 0.0) continue;
        tr.rate = best_share;
        --unfixed;
        for (const HopUse& u : routes_[static_cast<std::size_t>(tr.route)].hops) {
          const auto h = static_cast<std::size_t>(u.hop);
          scratch_cap_[h] -= best_share * u.count;
          scratch_weight_[h] -= u.count;
        }
      }
    }
    for (int h : touched_) scratch_local_[static_cast<std::size_t>(h)] = -1;
  }

  void loop() {
    while (true) {
      if (flows_changed_) {
        recomputeRates();
        flows_changed_ = false;
      }
      double next = events_.empty() ? kInf : events_.top().time;
      int first_done = -1;
      for (int f : active_) {
        const Transfer& tr = transfers_[static_cast<std::size_t>(f)];
        if (tr.rate <= 0.0) continue;
        const double at = now_ + tr.remaining / tr.rate;
        if (at < next) {
          next = at;
          first_done = f;
        }
      }
      if (next == kInf) break;
      const double dt = next - now_;
      now_ = next;
      for (int f : active_) {
        Transfer& tr = transfers_[static_cast<std::size_t>(f)];
        tr.remaining -= tr.rate * dt;
      }
      if (first_done >= 0) transfers_[static_cast<std::size_t>(first_done)].remaining = 0.0;

      // Flows whose last byte has arrived, in the (deterministic) order they started.
      done_.clear();
      std::erase_if(active_, [&](int f) {
        const Transfer& tr = transfers_[static_cast<std::size_t>(f)];
        if (tr.remaining > kDoneFraction * tr.bytes) return false;
        done_.push_back(f);
        return true;
      });
      if (!done_.empty()) flows_changed_ = true;
      for (int f : done_) completeTransfer(f);

      // Latency expiries and copy completions due now (processing may add more).
      while (!events_.empty() && events_.top().time <= now_) {
        const Event e = events_.top();
        events_.pop();
        if (e.is_copy) {
          completeStep(e.id);
        } else {
          startFlow(e.id);
        }
      }
    }
  }

  [[noreturn]] void reportDeadlock() {
    int stuck = -1;
    for (int g = 0; g < num_steps_; ++g) {
      if (!completed_[static_cast<std::size_t>(g)]) {
        stuck = g;
        break;
      }
    }
    const auto gi = static_cast<std::size_t>(stuck);
    const int r = step_rank_[gi];
    const Step& s = step(stuck);
    std::string why;
    if (pending_[gi] > 0) {
      for (int d : s.deps) {
        if (!completed_[static_cast<std::size_t>(rank_base_[static_cast<std::size_t>(r)] + d)]) {
          why = "it waits on step " + std::to_string(d) + " of its rank";
          break;
        }
      }
    } else {
      const Transfer& tr = transfers_[static_cast<std::size_t>(step_transfer_[gi])];
      const int partner = tr.send == stuck ? tr.recv : tr.send;
      why = "its matching " + toString(step(partner).kind) + " (" +
            stepName(step_rank_[static_cast<std::size_t>(partner)],
                     static_cast<std::size_t>(step_index_[static_cast<std::size_t>(partner)])) +
            ") never becomes ready";
    }
    fail(plan_, "the plan deadlocks: " + std::to_string(num_steps_ - completed_count_) + " of " +
                    std::to_string(num_steps_) + " steps never complete; the first, " +
                    stepName(r, static_cast<std::size_t>(step_index_[gi])) + " (" +
                    toString(s.kind) + "), cannot start: " + why);
  }

  const Plan& plan_;
  const topo::Topology& topology_;
  const SimOptions& options_;

  int num_steps_ = 0;
  std::vector<int> rank_base_;   // first global step id of each rank (+ the total)
  std::vector<int> step_rank_;   // per global step
  std::vector<int> step_index_;  // per global step: index in its rank's list
  std::vector<int> pending_;     // deps not yet complete
  std::vector<bool> completed_;
  std::vector<int> step_transfer_;  // Send/receive steps: their transfer; -1 for Copy
  std::vector<int> dependents_start_, dependents_;

  std::vector<Transfer> transfers_;
  std::vector<RouteInfo> routes_;
  std::map<std::pair<topo::Vertex, topo::Vertex>, int> hop_ids_;
  std::vector<Hop> hops_;
  std::vector<double> copy_rate_;

  double now_ = 0.0;
  double last_completion_ = 0.0;
  int completed_count_ = 0;
  std::uint64_t seq_ = 0;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  std::vector<int> active_;  // transfers whose bytes are flowing, in start order
  std::vector<int> done_;
  bool flows_changed_ = false;

  // recomputeRates scratch, indexed by hop (cap, weight, local) or touched index.
  std::vector<double> scratch_cap_;
  std::vector<int> scratch_weight_;
  std::vector<int> scratch_local_;
  std::vector<int> touched_;
  std::vector<std::vector<int>> hop_flows_;
};

}  // namespace

SimResult simulate(const Plan& plan, const topo::Topology& topology, const SimOptions& options) {
  if (options.step_overhead_us < 0.0) {
    throw Error(blinkInvalidInput, "simulate: step_overhead_us must not be negative");
  }
  return Simulator(plan, topology, options).run();
}

}  // namespace blink::plan
