#include "plan/plan.hpp"

#include <bit>
#include <cmath>
#include <string>

#include "common/error.hpp"

namespace blink::plan {

std::string toString(Collective c) {
  switch (c) {
    case Collective::Broadcast:
      return "broadcast";
    case Collective::Reduce:
      return "reduce";
    case Collective::AllGather:
      return "allgather";
    case Collective::ReduceScatter:
      return "reducescatter";
    case Collective::AllReduce:
      return "allreduce";
  }
  return "?";
}

std::string toString(StepKind k) {
  switch (k) {
    case StepKind::Send:
      return "send";
    case StepKind::Recv:
      return "recv";
    case StepKind::RecvReduce:
      return "recv-reduce";
    case StepKind::Copy:
      return "copy";
  }
  return "?";
}

std::uint64_t Plan::segmentOffset(int rank) const {
  const std::uint64_t elements = bytes / static_cast<std::uint64_t>(element_size);
  const std::uint64_t n = static_cast<std::uint64_t>(num_ranks);
  const std::uint64_t r = static_cast<std::uint64_t>(rank);
  const std::uint64_t base = elements / n, extra = elements % n;
  return (r * base + std::min(r, extra)) * static_cast<std::uint64_t>(element_size);
}

std::uint64_t Plan::segmentBytes(int rank) const {
  const std::uint64_t elements = bytes / static_cast<std::uint64_t>(element_size);
  const std::uint64_t n = static_cast<std::uint64_t>(num_ranks);
  const std::uint64_t base = elements / n, extra = elements % n;
  return (base + (static_cast<std::uint64_t>(rank) < extra ? 1 : 0)) *
         static_cast<std::uint64_t>(element_size);
}

double Plan::channelShare(int channel) const {
  if (channel_shares.empty()) return 1.0;
  if (channel < 0 || channel >= static_cast<int>(channel_shares.size())) {
    throw Error(blinkInternalError, "plan " + algorithm + ": channel " + std::to_string(channel) +
                                        " has no share (" + std::to_string(channel_shares.size()) +
                                        " channel shares)");
  }
  return channel_shares[static_cast<std::size_t>(channel)];
}

std::size_t Plan::numSteps() const {
  std::size_t n = 0;
  for (const auto& r : ranks) n += r.steps.size();
  return n;
}

namespace {

// FNV-1a over the plan's fields in a fixed order.
class Hasher {
 public:
  void add(std::uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h_ ^= (v >> (8 * i)) & 0xffu;
      h_ *= 1099511628211ull;
    }
  }
  void add(const std::string& s) {
    add(s.size());
    for (unsigned char c : s) {
      h_ ^= c;
      h_ *= 1099511628211ull;
    }
  }
  std::uint64_t value() const { return h_; }

 private:
  std::uint64_t h_ = 1469598103934665603ull;
};

}  // namespace

std::uint64_t Plan::hash() const {
  Hasher h;
  h.add(static_cast<std::uint64_t>(collective));
  h.add(algorithm);
  h.add(topology);
  h.add(static_cast<std::uint64_t>(num_ranks));
  h.add(static_cast<std::uint64_t>(static_cast<std::int64_t>(root)));
  h.add(bytes);
  h.add(chunk_bytes);
  h.add(static_cast<std::uint64_t>(element_size));
  for (int g : rank_gpu) h.add(static_cast<std::uint64_t>(g));
  for (const auto& route : routes) {
    h.add(route.size());
    for (auto v : route) h.add(static_cast<std::uint64_t>(v));
  }
  for (const auto& r : ranks) {
    h.add(r.steps.size());
    for (const auto& s : r.steps) {
      h.add(static_cast<std::uint64_t>(s.kind));
      h.add(static_cast<std::uint64_t>(static_cast<std::int64_t>(s.peer)));
      h.add(static_cast<std::uint64_t>(s.channel));
      h.add(s.offset);
      h.add(s.bytes);
      h.add(s.source_offset);
      h.add(static_cast<std::uint64_t>(static_cast<std::int64_t>(s.route)));
      h.add(s.deps.size());
      for (int d : s.deps) h.add(static_cast<std::uint64_t>(d));
    }
  }
  // The exact bits: every rank computes the shares the same way, and a runtime that
  // paces by them must agree on them as on the steps. (Nothing is added without
  // shares, so such plans keep the hash they had before shares existed.)
  if (!channel_shares.empty()) {
    h.add(channel_shares.size());
    for (double share : channel_shares) h.add(std::bit_cast<std::uint64_t>(share));
  }
  return h.value();
}

void validateStructure(const Plan& plan) {
  auto fail = [&](int rank, std::size_t step, const std::string& what) {
    throw Error(blinkInternalError, "plan " + plan.algorithm + "/" + toString(plan.collective) +
                                        ": rank " + std::to_string(rank) + " step " +
                                        std::to_string(step) + ": " + what);
  };
  if (plan.num_ranks < 1 || static_cast<int>(plan.ranks.size()) != plan.num_ranks ||
      static_cast<int>(plan.rank_gpu.size()) != plan.num_ranks || plan.element_size < 1 ||
      plan.bytes % static_cast<std::uint64_t>(plan.element_size) != 0) {
    throw Error(blinkInternalError, "plan " + plan.algorithm + ": inconsistent header");
  }
  for (std::size_t c = 0; c < plan.channel_shares.size(); ++c) {
    const double share = plan.channel_shares[c];
    if (!std::isfinite(share) || share <= 0.0) {
      throw Error(blinkInternalError, "plan " + plan.algorithm + ": channel " + std::to_string(c) +
                                          " has share " + std::to_string(share) +
                                          " (must be positive and finite)");
    }
  }
  const auto es = static_cast<std::uint64_t>(plan.element_size);
  for (int r = 0; r < plan.num_ranks; ++r) {
    const auto& steps = plan.ranks[r].steps;
    for (std::size_t i = 0; i < steps.size(); ++i) {
      const Step& s = steps[i];
      if (s.kind != StepKind::Copy && (s.peer < 0 || s.peer >= plan.num_ranks || s.peer == r)) {
        fail(r, i, "peer " + std::to_string(s.peer) + " out of range");
      }
      if (s.kind != StepKind::Copy && !plan.channel_shares.empty() &&
          (s.channel < 0 || s.channel >= static_cast<int>(plan.channel_shares.size()))) {
        fail(r, i, "channel " + std::to_string(s.channel) + " has no share");
      }
      if (s.offset + s.bytes > plan.bytes || s.offset % es != 0 || s.bytes % es != 0) {
        fail(r, i, "range outside the buffer or not element-aligned");
      }
      if (s.kind == StepKind::Copy &&
          (s.source_offset + s.bytes > plan.bytes || s.source_offset % es != 0)) {
        fail(r, i, "copy source outside the buffer");
      }
      if (s.kind == StepKind::Send &&
          (s.route < 0 || s.route >= static_cast<int>(plan.routes.size()))) {
        fail(r, i, "send without a valid route");
      }
      for (int d : s.deps) {
        if (d < 0 || d >= static_cast<int>(i)) fail(r, i, "dependency does not point backwards");
      }
    }
  }
}

}  // namespace blink::plan
