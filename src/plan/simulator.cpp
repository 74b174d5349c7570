#include "plan/simulator.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <queue>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/error.hpp"
#include "plan/simulator_model.hpp"

namespace blink::plan {

namespace {

using detail::failSimulation;
using detail::Hop;
using detail::HopUse;
using detail::kBytesPerGB;
using detail::stepName;
using detail::Transfer;

constexpr double kInf = std::numeric_limits<double>::infinity();
// A flow whose remaining bytes fall below this fraction of its size is done (absorbs
// the rounding of remaining -= rate * dt over many events).
constexpr double kDoneFraction = 1e-9;

// When a flowing transfer's last byte arrives at its current rate.
struct Completion {
  double time;
  std::uint64_t started;
  int transfer;
  std::uint32_t version;
  bool operator>(const Completion& o) const {
    return std::tie(time, started) > std::tie(o.time, o.started);
  }
};

struct Event {
  double time;
  std::uint64_t seq;
  bool is_copy;  // copy completion of step `id`; otherwise latency expiry of transfer `id`
  int id;
  bool operator>(const Event& o) const { return std::tie(time, seq) > std::tie(o.time, o.seq); }
};

// The event loop over a SimModel: latencies, max-min fair rates, completions.
class Simulator : detail::SimModel {
 public:
  Simulator(const Plan& plan, const topo::Topology& topology, const SimOptions& options,
            bool self_messages)
      : SimModel(plan, topology, self_messages), options_(options) {}

  SimResult run() {
    build();
    for (int g = 0; g < num_steps_; ++g) {
      if (pending_[static_cast<std::size_t>(g)] == 0) makeReady(g);
    }
    loop();
    if (completed_count_ != num_steps_) reportDeadlock();
    SimResult result;
    result.seconds = last_completion_;
    result.transfers = transfers_.size();
    result.channel_seconds = std::move(channel_seconds_);
    if (result.seconds > 0.0) {
      for (const Hop& h : hops_) {
        result.busiest_link_utilisation =
            std::max(result.busiest_link_utilisation, h.carried / (h.capacity * result.seconds));
      }
    }
    return result;
  }

 private:
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
    if (const int channel = step(tr.send).channel; channel >= 0) {
      const auto c = static_cast<std::size_t>(channel);
      if (c >= channel_seconds_.size()) channel_seconds_.resize(c + 1, 0.0);
      channel_seconds_[c] = std::max(channel_seconds_[c], now_);
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
    tr.updated_at = now_;
    tr.rate = 0.0;
    tr.started = started_++;
    if (hop_flows_.size() < hops_.size()) hop_flows_.resize(hops_.size());
    for (const HopUse& u : routes_[static_cast<std::size_t>(tr.route)].hops) {
      hop_flows_[static_cast<std::size_t>(u.hop)].push_back(t);
      markDirty(u.hop);
    }
  }

  // The transfer's bytes have all arrived: it leaves its hops.
  void stopFlow(int t) {
    Transfer& tr = transfers_[static_cast<std::size_t>(t)];
    ++tr.version;
    tr.rate = 0.0;
    for (const HopUse& u : routes_[static_cast<std::size_t>(tr.route)].hops) {
      auto& flows = hop_flows_[static_cast<std::size_t>(u.hop)];
      flows.erase(std::find(flows.begin(), flows.end(), t));
      markDirty(u.hop);
    }
  }

  void markDirty(int hop) {
    if (dirty_flag_.size() < hops_.size()) dirty_flag_.resize(hops_.size(), 0);
    if (dirty_flag_[static_cast<std::size_t>(hop)] != 0) return;
    dirty_flag_[static_cast<std::size_t>(hop)] = 1;
    dirty_.push_back(hop);
  }

  // Weighted max-min fair rates by progressive filling: every unfixed flow's rate
  // grows in proportion to its channel's share until some hop is full; the flows
  // crossing that hop are fixed there. With equal shares this is plain max-min
  // fairness. The allocation splits into independent parts, one per connected
  // group of flows and the hops they cross, so only the groups that hold a hop whose
  // flows changed are recomputed (a flow on one NVLink pair does not move the rates
  // of flows that share nothing with it).
  void recomputeRates() {
    if (scratch_cap_.size() < hops_.size()) {
      scratch_cap_.assign(hops_.size(), 0.0);
      scratch_weight_.assign(hops_.size(), 0.0);
      scratch_crossings_.assign(hops_.size(), 0);
    }
    if (hop_seen_.size() < hops_.size()) hop_seen_.resize(hops_.size(), 0);
    ++visit_;
    // The groups around the changed hops: breadth first over hops and flows.
    group_hops_.clear();
    group_flows_.clear();
    for (int h : dirty_) {
      dirty_flag_[static_cast<std::size_t>(h)] = 0;
      if (hop_seen_[static_cast<std::size_t>(h)] == visit_) continue;
      hop_seen_[static_cast<std::size_t>(h)] = visit_;
      group_hops_.push_back(h);
    }
    dirty_.clear();
    for (std::size_t k = 0; k < group_hops_.size(); ++k) {
      const auto h = static_cast<std::size_t>(group_hops_[k]);
      scratch_cap_[h] = hops_[h].capacity;
      scratch_weight_[h] = 0.0;
      scratch_crossings_[h] = 0;
      for (int f : hop_flows_[h]) {
        Transfer& tr = transfers_[static_cast<std::size_t>(f)];
        if (tr.visited == visit_) continue;
        tr.visited = visit_;
        group_flows_.push_back(f);
        for (const HopUse& u : routes_[static_cast<std::size_t>(tr.route)].hops) {
          const auto other = static_cast<std::size_t>(u.hop);
          if (hop_seen_[other] == visit_) continue;
          hop_seen_[other] = visit_;
          group_hops_.push_back(u.hop);
        }
      }
    }
    old_rates_.clear();
    for (int f : group_flows_) {
      Transfer& tr = transfers_[static_cast<std::size_t>(f)];
      tr.remaining -= tr.rate * (now_ - tr.updated_at);  // bytes moved at the old rate
      tr.updated_at = now_;
      old_rates_.push_back(tr.rate);
      tr.rate = -1.0;  // not fixed yet
      for (const HopUse& u : routes_[static_cast<std::size_t>(tr.route)].hops) {
        const auto h = static_cast<std::size_t>(u.hop);
        scratch_weight_[h] += tr.share * u.count;
        scratch_crossings_[h] += u.count;
      }
    }
    std::size_t unfixed = group_flows_.size();
    live_ = group_hops_;  // hops some unfixed flow still crosses
    while (unfixed > 0) {
      // The hop that fills first: the least capacity left per unit of share. Hops
      // no unfixed flow crosses any more leave the list (an integer count: no
      // rounding residue), so each round scans fewer.
      int best = -1;
      double best_level = kInf;
      for (std::size_t k = 0; k < live_.size();) {
        const auto hi = static_cast<std::size_t>(live_[k]);
        if (scratch_crossings_[hi] <= 0) {
          live_[k] = live_.back();
          live_.pop_back();
          continue;
        }
        const double level = std::max(scratch_cap_[hi], 0.0) / scratch_weight_[hi];
        if (level < best_level) {
          best_level = level;
          best = live_[k];
        }
        ++k;
      }
      if (best < 0) break;  // cannot happen: every unfixed flow loads some hop
      for (int f : hop_flows_[static_cast<std::size_t>(best)]) {
        Transfer& tr = transfers_[static_cast<std::size_t>(f)];
        if (tr.rate >= 0.0) continue;
        tr.rate = best_level * tr.share;
        --unfixed;
        for (const HopUse& u : routes_[static_cast<std::size_t>(tr.route)].hops) {
          const auto h = static_cast<std::size_t>(u.hop);
          scratch_cap_[h] -= tr.rate * u.count;
          scratch_weight_[h] -= tr.share * u.count;
          scratch_crossings_[h] -= u.count;
        }
      }
    }
    for (std::size_t k = 0; k < group_flows_.size(); ++k) {
      Transfer& tr = transfers_[static_cast<std::size_t>(group_flows_[k])];
      // An unchanged rate keeps its queued completion (most of a large group's rates
      // do not move when one flow in it starts or ends).
      if (tr.rate == old_rates_[k] && tr.rate > 0.0) continue;
      ++tr.version;
      if (tr.rate > 0.0) {
        completions_.push({now_ + tr.remaining / tr.rate, tr.started, group_flows_[k], tr.version});
      }
    }
  }

  // The next completion in the queue, dropping entries a rate change has replaced.
  const Completion* nextCompletion() {
    while (!completions_.empty()) {
      const Completion& c = completions_.top();
      if (transfers_[static_cast<std::size_t>(c.transfer)].version == c.version) return &c;
      completions_.pop();
    }
    return nullptr;
  }

  void loop() {
    while (true) {
      if (!dirty_.empty()) recomputeRates();
      const Completion* first = nextCompletion();
      const double next_event = events_.empty() ? kInf : events_.top().time;
      const double next = std::min(next_event, first != nullptr ? first->time : kInf);
      if (next == kInf) break;
      now_ = next;

      // Flows whose last byte has arrived (the first in the queue when it is due, and
      // any within rounding of done), in the (deterministic) order they started.
      done_.clear();
      for (const Completion* c = first; c != nullptr; c = nextCompletion()) {
        const Transfer& tr = transfers_[static_cast<std::size_t>(c->transfer)];
        const double left = tr.remaining - tr.rate * (now_ - tr.updated_at);
        if (c->time > now_ && left > kDoneFraction * tr.bytes) break;
        done_.push_back(c->transfer);
        completions_.pop();
      }
      std::sort(done_.begin(), done_.end(), [&](int a, int b) {
        return transfers_[static_cast<std::size_t>(a)].started <
               transfers_[static_cast<std::size_t>(b)].started;
      });
      for (int f : done_) stopFlow(f);
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
    failSimulation(plan_, "the plan deadlocks: " + std::to_string(num_steps_ - completed_count_) +
                              " of " + std::to_string(num_steps_) +
                              " steps never complete; the first, " +
                              stepName(r, static_cast<std::size_t>(step_index_[gi])) + " (" +
                              toString(s.kind) + "), cannot start: " + why);
  }

  const SimOptions& options_;
  std::vector<double> channel_seconds_;

  double now_ = 0.0;
  double last_completion_ = 0.0;
  int completed_count_ = 0;
  std::uint64_t seq_ = 0;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  std::priority_queue<Completion, std::vector<Completion>, std::greater<>> completions_;
  std::uint64_t started_ = 0;
  std::vector<int> done_;

  // The flows on each hop, and the hops whose flows changed since the last rates.
  std::vector<std::vector<int>> hop_flows_;
  std::vector<int> dirty_;
  std::vector<char> dirty_flag_;

  // recomputeRates scratch: per hop (cap, weight, crossings, seen), and the group.
  std::vector<double> scratch_cap_;
  std::vector<double> scratch_weight_;  // sum of share * crossings of the unfixed flows
  std::vector<int> scratch_crossings_;  // crossings of the unfixed flows
  std::vector<std::uint32_t> hop_seen_;
  std::uint32_t visit_ = 0;
  std::vector<int> group_hops_, group_flows_, live_;
  std::vector<double> old_rates_;
};

}  // namespace

namespace detail {

SimResult simulatePlan(const Plan& plan, const topo::Topology& topology, const SimOptions& options,
                       bool self_messages) {
  if (options.step_overhead_us < 0.0) {
    throw Error(blinkInvalidInput, "simulate: step_overhead_us must not be negative");
  }
  return Simulator(plan, topology, options, self_messages).run();
}

}  // namespace detail

SimResult simulate(const Plan& plan, const topo::Topology& topology, const SimOptions& options) {
  return detail::simulatePlan(plan, topology, options, false);
}

}  // namespace blink::plan
