#include "plan/symbolic_executor.hpp"

#include <algorithm>
#include <cstdint>
#include <exception>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "plan/symbolic_contributions.hpp"

namespace blink::plan {

namespace {

using symbolic::Contributions;
using symbolic::Id;
using symbolic::kUndefined;
constexpr std::size_t kMaxAtoms = std::size_t{1} << 24;

std::string range(std::uint64_t begin, std::uint64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + ")";
}

std::string describeStep(int rank, std::size_t index, const Step& s) {
  std::string d =
      "rank " + std::to_string(rank) + " step " + std::to_string(index) + " (" + toString(s.kind);
  switch (s.kind) {
    case StepKind::Send:
      d += " to rank " + std::to_string(s.peer) + ", channel " + std::to_string(s.channel);
      break;
    case StepKind::Recv:
    case StepKind::RecvReduce:
      d += " from rank " + std::to_string(s.peer) + ", channel " + std::to_string(s.channel);
      break;
    case StepKind::Copy:
      d += " from bytes " + range(s.source_offset, s.source_offset + s.bytes);
      break;
  }
  return d + ", bytes " + range(s.offset, s.offset + s.bytes) + ")";
}

struct Message {
  bool sent = false;
  bool consumed = false;
  std::uint64_t offset = 0, bytes = 0;
  std::vector<Id> atoms;
};

struct ChannelState {
  int sender = 0, receiver = 0, channel = 0;
  std::vector<int> send_steps;  // step index on the sender, by ordinal
  std::vector<int> recv_steps;  // step index on the receiver, by ordinal
  std::vector<Message> messages;
  std::vector<int> waiting;  // global id of a ready Recv waiting for the message, or -1
};

class Executor {
 public:
  explicit Executor(const Plan& plan) : plan_(plan), contrib_(plan.num_ranks) {}

  SymbolicResult run() {
    SymbolicResult result;
    try {
      validateStructure(plan_);
    } catch (const std::exception& e) {
      result.error = e.what();
      return result;
    }
    // (An empty buffer promises nothing, whatever the root.)
    if ((plan_.collective == Collective::Broadcast || plan_.collective == Collective::Reduce) &&
        plan_.bytes > 0 && (plan_.root < 0 || plan_.root >= plan_.num_ranks)) {
      result.error = "plan " + plan_.algorithm + "/" + toString(plan_.collective) + ": root " +
                     std::to_string(plan_.root) + " out of range";
      return result;
    }
    std::string error = buildAtoms();
    if (error.empty()) error = buildChannels();
    if (error.empty()) {
      initState();
      error = execute();
    }
    if (error.empty()) error = checkLeftovers();
    if (error.empty()) error = checkFinal();
    result.steps_run = steps_run_;
    result.ok = error.empty();
    if (!result.ok) {
      result.error = "plan " + plan_.algorithm + "/" + toString(plan_.collective) + ": " + error;
    }
    return result;
  }

 private:
  // ---- atoms -----------------------------------------------------------------
  std::string buildAtoms() {
    std::vector<std::uint64_t> b{0, plan_.bytes};
    for (int r = 0; r < plan_.num_ranks; ++r) {
      b.push_back(plan_.segmentOffset(r));
      b.push_back(plan_.segmentOffset(r) + plan_.segmentBytes(r));
      for (const Step& s : plan_.ranks[static_cast<std::size_t>(r)].steps) {
        b.push_back(s.offset);
        b.push_back(s.offset + s.bytes);
        if (s.kind == StepKind::Copy) {
          b.push_back(s.source_offset);
          b.push_back(s.source_offset + s.bytes);
          if (s.bytes > 0 && s.source_offset != s.offset) copies_.push_back(&s);
        }
      }
    }
    sortUnique(b);
    // A Copy maps atoms of its source onto its destination: close the boundaries
    // under every copy's shift (both ways) so that they line up.
    for (bool changed = !copies_.empty(); changed;) {
      changed = false;
      std::vector<std::uint64_t> extra;
      for (const Step* s : copies_) {
        shiftInto(b, s->source_offset, s->offset, s->bytes, extra);
        shiftInto(b, s->offset, s->source_offset, s->bytes, extra);
      }
      if (!extra.empty()) {
        const std::size_t before = b.size();
        b.insert(b.end(), extra.begin(), extra.end());
        sortUnique(b);
        changed = b.size() != before;
        if (b.size() > kMaxAtoms) return "too many atoms (copies with incommensurate shifts)";
      }
    }
    bounds_ = std::move(b);
    return {};
  }

  static void sortUnique(std::vector<std::uint64_t>& v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  }

  // Boundaries strictly inside [from, from + bytes), shifted to start at `to`.
  static void shiftInto(const std::vector<std::uint64_t>& b, std::uint64_t from, std::uint64_t to,
                        std::uint64_t bytes, std::vector<std::uint64_t>& out) {
    auto it = std::upper_bound(b.begin(), b.end(), from);
    for (; it != b.end() && *it < from + bytes; ++it) {
      const std::uint64_t shifted = *it - from + to;
      if (!std::binary_search(b.begin(), b.end(), shifted)) out.push_back(shifted);
    }
  }

  std::size_t atom(std::uint64_t offset) const {
    return static_cast<std::size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), offset) -
                                    bounds_.begin());
  }
  std::size_t numAtoms() const { return bounds_.empty() ? 0 : bounds_.size() - 1; }

  // ---- channels --------------------------------------------------------------
  std::string buildChannels() {
    std::map<std::tuple<int, int, int>, int> ids;
    auto channelOf = [&](int sender, int receiver, int channel) {
      auto [it, inserted] = ids.emplace(std::make_tuple(sender, receiver, channel),
                                        static_cast<int>(channels_.size()));
      if (inserted) {
        ChannelState c;
        c.sender = sender;
        c.receiver = receiver;
        c.channel = channel;
        channels_.push_back(std::move(c));
      }
      return it->second;
    };
    base_.assign(static_cast<std::size_t>(plan_.num_ranks) + 1, 0);
    for (int r = 0; r < plan_.num_ranks; ++r) {
      base_[static_cast<std::size_t>(r) + 1] =
          base_[static_cast<std::size_t>(r)] +
          plan_.ranks[static_cast<std::size_t>(r)].steps.size();
    }
    const std::size_t total = base_.back();
    step_channel_.assign(total, -1);
    step_ordinal_.assign(total, -1);
    for (int r = 0; r < plan_.num_ranks; ++r) {
      const auto& steps = plan_.ranks[static_cast<std::size_t>(r)].steps;
      for (std::size_t i = 0; i < steps.size(); ++i) {
        const Step& s = steps[i];
        if (s.kind == StepKind::Copy) continue;
        const bool send = s.kind == StepKind::Send;
        const int c = send ? channelOf(r, s.peer, s.channel) : channelOf(s.peer, r, s.channel);
        auto& list = send ? channels_[static_cast<std::size_t>(c)].send_steps
                          : channels_[static_cast<std::size_t>(c)].recv_steps;
        const std::size_t g = base_[static_cast<std::size_t>(r)] + i;
        step_channel_[g] = c;
        step_ordinal_[g] = static_cast<int>(list.size());
        list.push_back(static_cast<int>(i));
      }
    }
    // Both ends of every (sender, receiver, channel) must agree on the count.
    int mismatched = 0;
    std::string first, others;
    for (const auto& [key, c] : ids) {
      const ChannelState& ch = channels_[static_cast<std::size_t>(c)];
      if (ch.send_steps.size() == ch.recv_steps.size()) continue;
      if (mismatched++ > 0) {
        if (mismatched <= 4) {
          others += "; rank " + std::to_string(ch.sender) + " -> rank " +
                    std::to_string(ch.receiver) + " channel " + std::to_string(ch.channel) + ": " +
                    std::to_string(ch.send_steps.size()) + " sent, " +
                    std::to_string(ch.recv_steps.size()) + " received";
        }
        continue;
      }
      first = "rank " + std::to_string(ch.sender) + " sends " +
              std::to_string(ch.send_steps.size()) + " message(s) to rank " +
              std::to_string(ch.receiver) + " on channel " + std::to_string(ch.channel) +
              " but rank " + std::to_string(ch.receiver) + " receives " +
              std::to_string(ch.recv_steps.size()) + " from rank " + std::to_string(ch.sender) +
              " on channel " + std::to_string(ch.channel) + "; first unmatched: ";
      if (ch.send_steps.size() > ch.recv_steps.size()) {
        const int i = ch.send_steps[ch.recv_steps.size()];
        first += describeStep(ch.sender, static_cast<std::size_t>(i),
                              stepAt(ch.sender, static_cast<std::size_t>(i))) +
                 ", never received (leftover message)";
      } else {
        const int i = ch.recv_steps[ch.send_steps.size()];
        first += describeStep(ch.receiver, static_cast<std::size_t>(i),
                              stepAt(ch.receiver, static_cast<std::size_t>(i))) +
                 ", never sent (deadlock)";
      }
    }
    if (mismatched > 0) {
      return first + others +
             (mismatched > 1 ? " (" + std::to_string(mismatched) +
                                   " mismatched (sender, receiver, channel) in all)"
                             : std::string());
    }
    for (auto& ch : channels_) {
      ch.messages.resize(ch.send_steps.size());
      ch.waiting.assign(ch.send_steps.size(), -1);
    }
    return {};
  }

  const Step& stepAt(int rank, std::size_t index) const {
    return plan_.ranks[static_cast<std::size_t>(rank)].steps[index];
  }

  // ---- state -----------------------------------------------------------------
  void initState() {
    const std::size_t atoms = numAtoms();
    const int n = plan_.num_ranks;
    state_.assign(static_cast<std::size_t>(n), std::vector<Id>(atoms, kUndefined));
    for (int r = 0; r < n; ++r) {
      auto& st = state_[static_cast<std::size_t>(r)];
      switch (plan_.collective) {
        case Collective::Broadcast:
          if (r == plan_.root && atoms > 0) std::fill(st.begin(), st.end(), contrib_.single(r));
          break;
        case Collective::Reduce:
        case Collective::ReduceScatter:
        case Collective::AllReduce:
          std::fill(st.begin(), st.end(), contrib_.single(r));
          break;
        case Collective::AllGather: {
          const std::uint64_t off = plan_.segmentOffset(r);
          const std::size_t lo = atom(off), hi = atom(off + plan_.segmentBytes(r));
          std::fill(st.begin() + static_cast<std::ptrdiff_t>(lo),
                    st.begin() + static_cast<std::ptrdiff_t>(hi), contrib_.single(r));
          break;
        }
      }
    }
  }

  // The byte range of the run of atoms from `first` (within [first, limit)) that
  // satisfy `pred`.
  template <typename Pred>
  std::string runOf(std::size_t first, std::size_t limit, Pred pred) const {
    std::size_t last = first + 1;
    while (last < limit && pred(last)) ++last;
    return range(bounds_[first], bounds_[last]);
  }

  // ---- execution -------------------------------------------------------------
  std::string execute() {
    const std::size_t total = base_.back();
    pending_.assign(total, 0);
    done_.assign(total, 0);
    // Dependents in CSR form.
    std::vector<std::size_t> count(total + 1, 0);
    for (int r = 0; r < plan_.num_ranks; ++r) {
      const auto& steps = plan_.ranks[static_cast<std::size_t>(r)].steps;
      for (std::size_t i = 0; i < steps.size(); ++i) {
        const std::size_t g = base_[static_cast<std::size_t>(r)] + i;
        pending_[g] = static_cast<int>(steps[i].deps.size());
        for (int d : steps[i].deps)
          ++count[base_[static_cast<std::size_t>(r)] + static_cast<std::size_t>(d) + 1];
      }
    }
    for (std::size_t g = 0; g < total; ++g) count[g + 1] += count[g];
    dep_start_ = count;
    dependents_.assign(count.back(), 0);
    for (int r = 0; r < plan_.num_ranks; ++r) {
      const auto& steps = plan_.ranks[static_cast<std::size_t>(r)].steps;
      for (std::size_t i = 0; i < steps.size(); ++i) {
        const std::size_t g = base_[static_cast<std::size_t>(r)] + i;
        for (int d : steps[i].deps) {
          dependents_[count[base_[static_cast<std::size_t>(r)] + static_cast<std::size_t>(d)]++] =
              g;
        }
      }
    }
    rank_of_.assign(total, 0);
    for (int r = 0; r < plan_.num_ranks; ++r) {
      for (std::size_t g = base_[static_cast<std::size_t>(r)];
           g < base_[static_cast<std::size_t>(r) + 1]; ++g) {
        rank_of_[g] = r;
      }
    }
    queue_.reserve(total);
    for (std::size_t g = 0; g < total; ++g) {
      if (pending_[g] == 0) makeReady(g);
    }
    for (std::size_t head = 0; head < queue_.size(); ++head) {
      const std::size_t g = queue_[head];
      std::string error = runStep(g);
      if (!error.empty()) return error;
      done_[g] = 1;
      ++steps_run_;
      for (std::size_t k = dep_start_[g]; k < dep_start_[g + 1]; ++k) {
        if (--pending_[dependents_[k]] == 0) makeReady(dependents_[k]);
      }
    }
    if (steps_run_ < total) return describeDeadlock();
    return {};
  }

  void makeReady(std::size_t g) {
    const int r = rank_of_[g];
    const Step& s = stepAt(r, g - base_[static_cast<std::size_t>(r)]);
    if (s.kind == StepKind::Recv || s.kind == StepKind::RecvReduce) {
      ChannelState& ch = channels_[static_cast<std::size_t>(step_channel_[g])];
      const auto ord = static_cast<std::size_t>(step_ordinal_[g]);
      if (!ch.messages[ord].sent) {
        ch.waiting[ord] = static_cast<int>(g);
        return;
      }
    }
    queue_.push_back(g);
  }

  std::string runStep(std::size_t g) {
    const int r = rank_of_[g];
    const std::size_t index = g - base_[static_cast<std::size_t>(r)];
    const Step& s = stepAt(r, index);
    auto& st = state_[static_cast<std::size_t>(r)];
    const std::size_t lo = atom(s.offset), hi = atom(s.offset + s.bytes);
    switch (s.kind) {
      case StepKind::Send: {
        for (std::size_t a = lo; a < hi; ++a) {
          if (st[a] == kUndefined) {
            return describeStep(r, index, s) + ": sends undefined data at bytes " +
                   runOf(a, hi, [&](std::size_t x) { return st[x] == kUndefined; }) +
                   " (not yet received, or never defined on this rank)";
          }
        }
        ChannelState& ch = channels_[static_cast<std::size_t>(step_channel_[g])];
        const auto ord = static_cast<std::size_t>(step_ordinal_[g]);
        Message& m = ch.messages[ord];
        m.sent = true;
        m.offset = s.offset;
        m.bytes = s.bytes;
        m.atoms.assign(st.begin() + static_cast<std::ptrdiff_t>(lo),
                       st.begin() + static_cast<std::ptrdiff_t>(hi));
        if (ch.waiting[ord] >= 0) {
          queue_.push_back(static_cast<std::size_t>(ch.waiting[ord]));
          ch.waiting[ord] = -1;
        }
        return {};
      }
      case StepKind::Recv:
      case StepKind::RecvReduce: {
        ChannelState& ch = channels_[static_cast<std::size_t>(step_channel_[g])];
        const auto ord = static_cast<std::size_t>(step_ordinal_[g]);
        Message& m = ch.messages[ord];
        if (m.offset != s.offset || m.bytes != s.bytes) {
          const auto si = static_cast<std::size_t>(ch.send_steps[ord]);
          return describeStep(r, index, s) + ": range " + range(s.offset, s.offset + s.bytes) +
                 " does not match message #" + std::to_string(ord) + " it receives, sent by " +
                 describeStep(ch.sender, si, stepAt(ch.sender, si)) + " with range " +
                 range(m.offset, m.offset + m.bytes);
        }
        if (s.kind == StepKind::Recv) {
          std::copy(m.atoms.begin(), m.atoms.end(), st.begin() + static_cast<std::ptrdiff_t>(lo));
        } else {
          for (std::size_t a = lo; a < hi; ++a) {
            if (st[a] == kUndefined) {
              return describeStep(r, index, s) + ": reduces into undefined data at bytes " +
                     runOf(a, hi, [&](std::size_t x) { return st[x] == kUndefined; });
            }
          }
          for (std::size_t a = lo; a < hi; ++a) {
            if (contrib_.shift(st[a]) != contrib_.shift(m.atoms[a - lo])) {
              return describeStep(r, index, s) + ": combines data from different places at bytes " +
                     range(bounds_[a], bounds_[a + 1]) + ": " + contrib_.describe(st[a]) +
                     " with " + contrib_.describe(m.atoms[a - lo]);
            }
            st[a] = contrib_.reduce(st[a], m.atoms[a - lo]);
          }
        }
        m.consumed = true;
        std::vector<Id>().swap(m.atoms);
        return {};
      }
      case StepKind::Copy: {
        const std::size_t slo = atom(s.source_offset), shi = atom(s.source_offset + s.bytes);
        if (shi - slo != hi - lo) {
          return describeStep(r, index, s) +
                 ": internal error: source and destination atoms differ";
        }
        const auto delta =
            static_cast<std::int64_t>(s.offset) - static_cast<std::int64_t>(s.source_offset);
        std::vector<Id> tmp(st.begin() + static_cast<std::ptrdiff_t>(slo),
                            st.begin() + static_cast<std::ptrdiff_t>(shi));
        for (Id& v : tmp) v = contrib_.moved(v, delta);
        std::copy(tmp.begin(), tmp.end(), st.begin() + static_cast<std::ptrdiff_t>(lo));
        return {};
      }
    }
    return {};
  }

  std::string describeDeadlock() const {
    std::string out = "deadlock after " + std::to_string(steps_run_) + " of " +
                      std::to_string(base_.back()) + " steps:";
    bool first = true;
    for (int r = 0; r < plan_.num_ranks; ++r) {
      const auto& steps = plan_.ranks[static_cast<std::size_t>(r)].steps;
      for (std::size_t i = 0; i < steps.size(); ++i) {
        const std::size_t g = base_[static_cast<std::size_t>(r)] + i;
        if (done_[g]) continue;
        const Step& s = steps[i];
        out += first ? " " : "; ";
        first = false;
        out += describeStep(r, i, s);
        int waits_dep = -1;
        for (int d : s.deps) {
          if (!done_[base_[static_cast<std::size_t>(r)] + static_cast<std::size_t>(d)]) {
            waits_dep = d;
            break;
          }
        }
        if (waits_dep >= 0) {
          out += " waits for step " + std::to_string(waits_dep);
        } else {
          const ChannelState& ch = channels_[static_cast<std::size_t>(step_channel_[g])];
          const auto ord = static_cast<std::size_t>(step_ordinal_[g]);
          out += " waits for message #" + std::to_string(ord) + " from rank " +
                 std::to_string(ch.sender) + " step " + std::to_string(ch.send_steps[ord]);
        }
        break;
      }
    }
    return out;
  }

  std::string checkLeftovers() const {
    for (const ChannelState& ch : channels_) {
      for (std::size_t k = 0; k < ch.messages.size(); ++k) {
        if (ch.messages[k].sent && !ch.messages[k].consumed) {
          const auto si = static_cast<std::size_t>(ch.send_steps[k]);
          return "message sent by " + describeStep(ch.sender, si, stepAt(ch.sender, si)) +
                 " was never received by rank " + std::to_string(ch.receiver);
        }
      }
    }
    return {};
  }

  // ---- the result ------------------------------------------------------------
  std::string checkRange(int r, std::uint64_t begin, std::uint64_t end, Id expected,
                         const std::string& what) {
    const auto& st = state_[static_cast<std::size_t>(r)];
    const std::size_t lo = atom(begin), hi = atom(end);
    for (std::size_t a = lo; a < hi; ++a) {
      if (st[a] == expected) continue;
      const Id got = st[a];
      return "rank " + std::to_string(r) + " ends with bytes " +
             runOf(a, hi, [&](std::size_t x) { return st[x] == got; }) + " = " +
             contrib_.describe(got) + ", expected " + contrib_.describe(expected) + " (" + what +
             ")";
    }
    return {};
  }

  std::string checkFinal() {
    const int n = plan_.num_ranks;
    const Id all = contrib_.all();
    std::string e;
    switch (plan_.collective) {
      case Collective::Broadcast: {
        if (plan_.bytes == 0) break;
        const Id root = contrib_.single(plan_.root);
        for (int r = 0; r < n && e.empty(); ++r) {
          e = checkRange(r, 0, plan_.bytes, root, "the root's input");
        }
        break;
      }
      case Collective::Reduce:
        if (plan_.bytes == 0) break;
        e = checkRange(plan_.root, 0, plan_.bytes, all, "every input exactly once");
        break;
      case Collective::AllGather:
        for (int r = 0; r < n && e.empty(); ++r) {
          for (int g = 0; g < n && e.empty(); ++g) {
            const std::uint64_t off = plan_.segmentOffset(g);
            e = checkRange(r, off, off + plan_.segmentBytes(g), contrib_.single(g),
                           "segment " + std::to_string(g));
          }
        }
        break;
      case Collective::ReduceScatter:
        for (int r = 0; r < n && e.empty(); ++r) {
          const std::uint64_t off = plan_.segmentOffset(r);
          e = checkRange(r, off, off + plan_.segmentBytes(r), all,
                         "segment " + std::to_string(r) + ", every input exactly once");
        }
        break;
      case Collective::AllReduce:
        for (int r = 0; r < n && e.empty(); ++r) {
          e = checkRange(r, 0, plan_.bytes, all, "every input exactly once");
        }
        break;
    }
    return e;
  }

  const Plan& plan_;
  Contributions contrib_;
  std::vector<std::uint64_t> bounds_;
  std::vector<const Step*> copies_;
  std::vector<ChannelState> channels_;
  std::vector<std::size_t> base_;  // global id of each rank's first step
  std::vector<int> rank_of_;
  std::vector<int> step_channel_, step_ordinal_;
  std::vector<int> pending_;
  std::vector<char> done_;
  std::vector<std::size_t> dep_start_, dependents_;
  std::vector<std::size_t> queue_;
  std::vector<std::vector<Id>> state_;
  std::size_t steps_run_ = 0;
};

}  // namespace

SymbolicResult runSymbolic(const Plan& plan) {
  return Executor(plan).run();
}

}  // namespace blink::plan
