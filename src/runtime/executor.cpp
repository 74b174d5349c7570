#include "runtime/executor.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <sstream>
#include <tuple>

#include "common/backoff.hpp"
#include "common/error.hpp"
#include "transport/cuda/device_transport.hpp"

namespace blink::runtime {
namespace {

bool writes(const plan::Step& s) {
  return s.kind != plan::StepKind::Send;
}

bool overlaps(const plan::Step& a, const plan::Step& b) {
  return a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
}

// Byte ranges written so far, as disjoint [begin, end) intervals.
class WrittenRanges {
 public:
  enum class Coverage { None, Full, Partial };

  Coverage coverage(std::uint64_t begin, std::uint64_t end) const {
    if (begin >= end) return Coverage::Full;
    std::uint64_t covered = 0;
    auto it = ranges_.upper_bound(begin);
    if (it != ranges_.begin()) --it;
    for (; it != ranges_.end() && it->first < end; ++it) {
      const std::uint64_t lo = std::max(begin, it->first), hi = std::min(end, it->second);
      if (lo < hi) covered += hi - lo;
    }
    if (covered == 0) return Coverage::None;
    return covered == end - begin ? Coverage::Full : Coverage::Partial;
  }

  void add(std::uint64_t begin, std::uint64_t end) {
    if (begin >= end) return;
    auto it = ranges_.upper_bound(begin);
    if (it != ranges_.begin() && std::prev(it)->second >= begin) --it;
    while (it != ranges_.end() && it->first <= end) {
      begin = std::min(begin, it->first);
      end = std::max(end, it->second);
      it = ranges_.erase(it);
    }
    ranges_.emplace(begin, end);
  }

  // The complement within [0, total).
  std::vector<std::pair<std::uint64_t, std::uint64_t>> gaps(std::uint64_t total) const {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
    std::uint64_t at = 0;
    for (const auto& [b, e] : ranges_) {
      if (b > at) out.emplace_back(at, b - at);
      at = std::max(at, e);
    }
    if (at < total) out.emplace_back(at, total - at);
    return out;
  }

 private:
  std::map<std::uint64_t, std::uint64_t> ranges_;
};

// Plans are race-free (a step that reads bytes another step writes depends on it),
// so list order tells which steps see the input and which see written data.
void analyseInput(Program& p, std::uint64_t total_bytes) {
  WrittenRanges written;
  p.reads_input.assign(p.steps.size(), 0);
  for (std::size_t i = 0; i < p.steps.size(); ++i) {
    const plan::Step& s = p.steps[i];
    std::uint64_t read_at = s.offset;
    bool reads = s.kind == plan::StepKind::Send || s.kind == plan::StepKind::RecvReduce;
    if (s.kind == plan::StepKind::Copy) {
      read_at = s.source_offset;
      reads = true;
    }
    if (reads && s.bytes > 0) {
      switch (written.coverage(read_at, read_at + s.bytes)) {
        case WrittenRanges::Coverage::None:
          p.reads_input[i] = 1;
          break;
        case WrittenRanges::Coverage::Full:
          break;
        case WrittenRanges::Coverage::Partial:
          p.input_capable = false;
          break;
      }
    }
    if (writes(s)) written.add(s.offset, s.offset + s.bytes);
  }
  p.never_written = written.gaps(total_bytes);
}

}  // namespace

Program compileProgram(const plan::Plan& plan, int plan_rank,
                       const std::function<PeerRoute(int plan_rank)>& route_of) {
  if (plan_rank < 0 || plan_rank >= plan.num_ranks) {
    throw Error(blinkInternalError, "compileProgram: rank out of range");
  }
  Program p;
  p.plan_rank = plan_rank;
  p.steps = plan.ranks[static_cast<std::size_t>(plan_rank)].steps;
  const std::size_t n = p.steps.size();
  p.dep_count.assign(n, 0);
  p.dependents.assign(n, {});
  p.lane_of_step.assign(n, -1);
  std::map<std::tuple<bool, int, int>, int> lane_index;
  for (std::size_t i = 0; i < n; ++i) {
    plan::Step& s = p.steps[i];
    std::sort(s.deps.begin(), s.deps.end());
    s.deps.erase(std::unique(s.deps.begin(), s.deps.end()), s.deps.end());
    for (int d : s.deps) {
      if (d < 0 || static_cast<std::size_t>(d) >= i) {
        throw Error(blinkInternalError, "compileProgram: a dependency does not point backwards");
      }
      p.dependents[static_cast<std::size_t>(d)].push_back(static_cast<int>(i));
    }
    p.dep_count[i] = static_cast<int>(s.deps.size());
    if (s.kind == plan::StepKind::Copy) continue;
    const bool is_send = s.kind == plan::StepKind::Send;
    auto key = std::make_tuple(is_send, s.peer, s.channel);
    auto [it, fresh] = lane_index.try_emplace(key, static_cast<int>(p.lanes.size()));
    if (fresh) {
      PeerRoute route = route_of(s.peer);
      if (route.transport == nullptr) {
        throw Error(blinkInternalError,
                    "compileProgram: no transport to plan rank " + std::to_string(s.peer));
      }
      p.lanes.push_back({is_send, route.comm_rank, s.channel, route.transport, {}});
    }
    p.lane_of_step[i] = it->second;
    p.lanes[static_cast<std::size_t>(it->second)].steps.push_back(static_cast<int>(i));
  }
  analyseInput(p, plan.bytes);
  return p;
}

StreamNeeds streamNeeds(const Program& program, const Transport* transport) {
  StreamNeeds needs;
  for (const Lane& lane : program.lanes) {
    if (lane.transport != transport) continue;
    (lane.is_send ? needs.sends : needs.recvs).push_back({lane.peer, lane.channel});
  }
  return needs;
}

namespace {

class Run {
 public:
  Run(const Program& p, std::byte* buffer, const std::byte* input, const Combine& combine,
      const RunOptions& options)
      : p_(p),
        buffer_(buffer),
        input_(input),
        combine_(combine),
        options_(options),
        remaining_(p.dep_count),
        lane_pos_(p.lanes.size(), 0),
        lane_done_(p.lanes.size(), 0),
        send_streams_(p.lanes.size(), nullptr),
        recv_streams_(p.lanes.size(), nullptr),
        device_recv_streams_(p.lanes.size(), nullptr) {
    if (options.device != nullptr) free_events_ = *options.device->events;
    for (std::size_t l = 0; l < p.lanes.size(); ++l) {
      const Lane& lane = p.lanes[l];
      StreamKey key{lane.peer, lane.channel};
      if (lane.is_send) {
        send_streams_[l] = &lane.transport->sendStream(key);
      } else {
        recv_streams_[l] = &lane.transport->recvStream(key);
        if (options.device != nullptr) {
          device_recv_streams_[l] = dynamic_cast<transport::DeviceRecvStream*>(recv_streams_[l]);
          if (device_recv_streams_[l] == nullptr) {
            throw Error(blinkInternalError, "execute: device buffers on a " +
                                                lane.transport->name() +
                                                " stream, which moves host memory only");
          }
        }
      }
    }
    for (std::size_t i = 0; i < p.steps.size(); ++i) {
      if (remaining_[i] == 0 && p.lane_of_step[i] < 0) ready_copies_.push_back(static_cast<int>(i));
    }
  }

  void go() {
    Backoff backoff(options_.timeout_seconds);
    const std::size_t total = p_.steps.size();
    while (done_ < total) {
      bool moved = runCopies();
      moved |= retireDeviceCopies();
      for (std::size_t l = 0; l < p_.lanes.size(); ++l) moved |= advanceLane(l);
      if (moved) {
        backoff.progressed();
        continue;
      }
      if (done_ < total && ready_copies_.empty() && device_copies_.empty() && !anyLaneReady()) {
        throw Error(blinkInternalError, "plan deadlock on this rank: " + std::to_string(done_) +
                                            " of " + std::to_string(total) +
                                            " steps done and none can start");
      }
      if (!backoff.idle()) throw Error(blinkTimeout, timeoutMessage(backoff));
    }
    if (input_ != nullptr) {
      for (const auto& [offset, bytes] : p_.never_written) {
        if (options_.device != nullptr) {
          options_.device->device->copy(buffer_ + offset, input_ + offset, bytes,
                                        options_.device->stream);
        } else {
          std::memcpy(buffer_ + offset, input_ + offset, bytes);
        }
      }
      if (options_.device != nullptr) options_.device->device->synchronize(options_.device->stream);
    }
  }

 private:
  void complete(int step) {
    ++done_;
    for (int d : p_.dependents[static_cast<std::size_t>(step)]) {
      if (--remaining_[static_cast<std::size_t>(d)] == 0 &&
          p_.lane_of_step[static_cast<std::size_t>(d)] < 0) {
        ready_copies_.push_back(d);
      }
    }
  }

  bool fromInput(int step) const {
    return input_ != nullptr && p_.reads_input[static_cast<std::size_t>(step)] != 0;
  }

  // A write must not overtake an earlier Send of the same bytes still being pushed.
  bool blockedByInFlightSend(int step) const {
    const plan::Step& s = p_.steps[static_cast<std::size_t>(step)];
    for (int t : in_flight_sends_) {
      if (t < step && overlaps(p_.steps[static_cast<std::size_t>(t)], s)) return true;
    }
    return false;
  }

  bool runCopies() {
    bool moved = false;
    for (std::size_t k = 0; k < ready_copies_.size();) {
      int c = ready_copies_[k];
      if (blockedByInFlightSend(c)) {
        ++k;
        continue;
      }
      const plan::Step& s = p_.steps[static_cast<std::size_t>(c)];
      if (options_.device != nullptr) {
        queueDeviceCopy(c);
        ready_copies_.erase(ready_copies_.begin() + static_cast<std::ptrdiff_t>(k));
        moved = true;
        continue;
      }
      if (fromInput(c)) {
        std::memcpy(buffer_ + s.offset, input_ + s.source_offset, s.bytes);
      } else if (s.bytes > 0 && s.offset != s.source_offset) {
        std::memmove(buffer_ + s.offset, buffer_ + s.source_offset, s.bytes);
      }
      ready_copies_.erase(ready_copies_.begin() + static_cast<std::ptrdiff_t>(k));
      complete(c);
      moved = true;
    }
    return moved;
  }

  // A Copy step on the device: queued now, done when its event has passed.
  void queueDeviceCopy(int step) {
    const DeviceRun& run = *options_.device;
    const plan::Step& s = p_.steps[static_cast<std::size_t>(step)];
    if (free_events_.empty()) {
      free_events_.push_back(run.device->createEvent());
      run.events->push_back(free_events_.back());
    }
    const device::Device::Event event = free_events_.back();
    free_events_.pop_back();
    const std::byte* from = (fromInput(step) ? input_ : buffer_) + s.source_offset;
    if (s.bytes > 0 && (fromInput(step) || s.offset != s.source_offset)) {
      run.device->copy(buffer_ + s.offset, from, s.bytes, run.stream);
    }
    run.device->record(event, run.stream);
    device_copies_.emplace_back(step, event);
  }

  bool retireDeviceCopies() {
    bool moved = false;
    for (std::size_t k = 0; k < device_copies_.size();) {
      const auto [step, event] = device_copies_[k];
      if (!options_.device->device->done(event)) {
        ++k;
        continue;
      }
      device_copies_.erase(device_copies_.begin() + static_cast<std::ptrdiff_t>(k));
      free_events_.push_back(event);
      complete(step);
      moved = true;
    }
    return moved;
  }

  bool headReady(std::size_t l) const {
    const Lane& lane = p_.lanes[l];
    if (lane_pos_[l] >= lane.steps.size()) return false;
    return remaining_[static_cast<std::size_t>(lane.steps[lane_pos_[l]])] == 0;
  }

  bool anyLaneReady() const {
    for (std::size_t l = 0; l < p_.lanes.size(); ++l) {
      if (headReady(l)) return true;
    }
    return false;
  }

  bool advanceLane(std::size_t l) {
    const Lane& lane = p_.lanes[l];
    bool moved = false;
    while (headReady(l)) {
      const int index = lane.steps[lane_pos_[l]];
      const plan::Step& s = p_.steps[static_cast<std::size_t>(index)];
      std::size_t& done = lane_done_[l];
      const std::size_t before = done;
      bool finished;
      if (lane.is_send) {
        if (done == 0 && !sending(index)) in_flight_sends_.push_back(index);
        const std::byte* source = (fromInput(index) ? input_ : buffer_) + s.offset;
        finished = send_streams_[l]->push(source, s.bytes, done);
      } else {
        if (done == 0 && writes(s) && blockedByInFlightSend(index)) break;
        std::byte* dest = buffer_ + s.offset;
        if (options_.device != nullptr && s.kind == plan::StepKind::RecvReduce) {
          // On the device: dest = first (+) incoming, queued chunk by chunk.
          const std::byte* first = fromInput(index) ? input_ + s.offset : dest;
          finished = device_recv_streams_[l]->pullReduce(s.bytes, done, dest, first,
                                                         options_.device->reduction);
        } else if (s.kind == plan::StepKind::RecvReduce && fromInput(index)) {
          // The first combination into these bytes: out = input (+) incoming,
          // piece by piece while the piece is hot in cache.
          const std::byte* in = input_ + s.offset;
          finished = recv_streams_[l]->pull(
              s.bytes, done,
              [this, dest, in](std::size_t at, const std::byte* piece, std::size_t n) {
                std::memcpy(dest + at, in + at, n);
                combine_(dest + at, piece, n);
              });
        } else if (s.kind == plan::StepKind::RecvReduce) {
          finished = recv_streams_[l]->pull(
              s.bytes, done, [this, dest](std::size_t at, const std::byte* piece, std::size_t n) {
                combine_(dest + at, piece, n);
              });
        } else {
          finished = recv_streams_[l]->pullTo(s.bytes, done, dest);
        }
      }
      moved |= done != before;
      if (!finished) break;
      if (lane.is_send) {
        in_flight_sends_.erase(std::find(in_flight_sends_.begin(), in_flight_sends_.end(), index));
      }
      done = 0;
      ++lane_pos_[l];
      complete(index);
      moved = true;
    }
    return moved;
  }

  bool sending(int step) const {
    return std::find(in_flight_sends_.begin(), in_flight_sends_.end(), step) !=
           in_flight_sends_.end();
  }

  std::string timeoutMessage(const Backoff& backoff) const {
    std::ostringstream out;
    out << (options_.what.empty() ? std::string("collective") : options_.what) << ": rank "
        << p_.comm_rank << " saw no progress for "
        << static_cast<int>(backoff.secondsSinceProgress()) << " s (BLINK_TIMEOUT_S); waiting";
    int listed = 0;
    for (std::size_t l = 0; l < p_.lanes.size() && listed < 4; ++l) {
      if (!headReady(l)) continue;
      const Lane& lane = p_.lanes[l];
      const plan::Step& s = p_.steps[static_cast<std::size_t>(lane.steps[lane_pos_[l]])];
      out << (listed++ ? "; " : " ");
      if (lane.is_send) {
        out << "to send " << s.bytes << " bytes to rank " << lane.peer << " (" << lane_done_[l]
            << " taken)";
      } else {
        out << "for " << s.bytes << " bytes from rank " << lane.peer << " (" << lane_done_[l]
            << " arrived)";
      }
      out << " on channel " << lane.channel << " via " << lane.transport->name();
    }
    out << "; is that rank alive and calling the same collective?";
    return out.str();
  }

  const Program& p_;
  std::byte* buffer_;
  const std::byte* input_;
  const Combine& combine_;
  const RunOptions& options_;
  std::vector<int> remaining_;
  std::vector<std::size_t> lane_pos_;
  std::vector<std::size_t> lane_done_;
  std::vector<SendStream*> send_streams_;
  std::vector<RecvStream*> recv_streams_;
  std::vector<transport::DeviceRecvStream*> device_recv_streams_;
  std::vector<int> ready_copies_;
  std::vector<std::pair<int, device::Device::Event>> device_copies_;  // queued, not yet run
  std::vector<device::Device::Event> free_events_;
  std::vector<int> in_flight_sends_;
  std::size_t done_ = 0;
};

}  // namespace

void execute(const Program& program, std::byte* buffer, const std::byte* input,
             const Combine& combine, const RunOptions& options) {
  if (input != nullptr && !program.input_capable) {
    throw Error(blinkInternalError, "execute: this plan needs its input in the working buffer");
  }
  Run(program, buffer, input, combine, options).go();
}

}  // namespace blink::runtime
