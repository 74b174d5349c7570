#include "glue_state.hpp"

#include <charconv>
#include <mutex>
#include <sstream>
#include <vector>

#include "glue_support.hpp"

namespace blink::glue {

const char* name(Coll c) {
  switch (c) {
    case Coll::Allreduce:
      return "allreduce";
    case Coll::Bcast:
      return "bcast";
    case Coll::Reduce:
      return "reduce";
    case Coll::Allgather:
      return "allgather";
    case Coll::ReduceScatterBlock:
      return "reduce_scatter_block";
    case Coll::Allgatherv:
      return "allgatherv";
    case Coll::Gather:
      return "gather";
    case Coll::Gatherv:
      return "gatherv";
    case Coll::ReduceScatter:
      return "reduce_scatter";
    case Coll::Barrier:
      return "barrier";
    case Coll::Iallreduce:
      return "iallreduce";
    case Coll::Ibcast:
      return "ibcast";
    case Coll::Count:
      break;
  }
  return "?";
}

bool hasThreshold(Coll c) {
  return c != Coll::Barrier && c != Coll::Iallreduce && c != Coll::Ibcast;
}

const char* name(Fallback f) {
  switch (f) {
    case Fallback::Disabled:
      return "disabled";
    case Fallback::BelowThreshold:
      return "below_threshold";
    case Fallback::ZeroCount:
      return "zero_count";
    case Fallback::Datatype:
      return "datatype";
    case Fallback::Op:
      return "op";
    case Fallback::InterComm:
      return "intercomm";
    case Fallback::Arguments:
      return "arguments";
    case Fallback::Unavailable:
      return "unavailable";
    case Fallback::PlanFailed:
      return "plan_failed";
    case Fallback::MemoryType:
      return "memory_type";
    case Fallback::Nonblocking:
      return "nonblocking";
    case Fallback::Count:
      break;
  }
  return "?";
}

constinit GlueState glue_state;

namespace {

std::uint64_t parseBytes(std::string_view text, std::string_view whole) {
  std::uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size()) {
    throw Error(blinkInvalidInput, "BLINK_MPI_MIN_BYTES='" + std::string(whole) + "': '" +
                                       std::string(text) +
                                       "' is not a byte count (expected BYTES or NAME=BYTES,...)");
  }
  return v;
}

void applyThresholds(std::string_view spec, std::array<std::uint64_t, kNumColls>& out) {
  if (spec.find('=') == std::string_view::npos) {
    out.fill(parseBytes(spec, spec));
    return;
  }
  std::string_view rest = spec;
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    const auto eq = item.find('=');
    if (eq == std::string_view::npos) {
      throw Error(blinkInvalidInput, "BLINK_MPI_MIN_BYTES='" + std::string(spec) + "': '" +
                                         std::string(item) + "' lacks NAME=");
    }
    std::string_view key = item.substr(0, eq);
    bool found = false;
    for (std::size_t c = 0; c < kNumColls; ++c) {
      if (!hasThreshold(static_cast<Coll>(c))) continue;
      if (key == name(static_cast<Coll>(c))) {
        out[c] = parseBytes(item.substr(eq + 1), spec);
        found = true;
      }
    }
    if (!found) {
      throw Error(blinkInvalidInput, "BLINK_MPI_MIN_BYTES='" + std::string(spec) +
                                         "': unknown collective '" + std::string(key) +
                                         "' (allreduce, bcast, reduce, allgather, "
                                         "reduce_scatter_block, allgatherv, gather, gatherv, "
                                         "reduce_scatter)");
    }
  }
}

}  // namespace

void configure() {
  GlueState& s = state();
  applyThresholds(blinkEnvDefault("BLINK_MPI_MIN_BYTES"), s.min_bytes);
  if (auto spec = setting("BLINK_MPI_MIN_BYTES")) applyThresholds(*spec, s.min_bytes);
  s.enabled = setting("BLINK_MPI_DISABLE").value_or("0") != "1";
}

namespace {

std::mutex counters_mutex;
// Every thread's counters; never freed, so a finished thread's calls still count.
std::vector<ThreadCounters*>& allThreadCounters() {
  static auto* all = new std::vector<ThreadCounters*>();
  return *all;
}

// Constant-initialised and initial-exec (see comm_cache.cpp): no guard, no call.
[[gnu::tls_model("initial-exec")]] thread_local constinit ThreadCounters* this_thread = nullptr;

[[gnu::noinline]] ThreadCounters& registerThread() {
  auto* made = new ThreadCounters();
  std::lock_guard lock(counters_mutex);
  allThreadCounters().push_back(made);
  this_thread = made;
  return *made;
}

}  // namespace

ThreadCounters& threadCounters() {
  return this_thread != nullptr ? *this_thread : registerThread();
}

std::string accountingReport() {
  std::lock_guard lock(counters_mutex);
  std::ostringstream out;
  for (std::size_t c = 0; c < kNumColls; ++c) {
    std::uint64_t calls = 0, bytes = 0, refused = 0;
    std::array<std::uint64_t, kNumFallbacks> fallbacks{};
    for (const ThreadCounters* thread : allThreadCounters()) {
      const Counters& k = (*thread)[c];
      calls += k.calls.load(std::memory_order_relaxed);
      bytes += k.bytes.load(std::memory_order_relaxed);
      refused += k.refused_memory_type.load(std::memory_order_relaxed);
      for (std::size_t f = 0; f < kNumFallbacks; ++f) {
        fallbacks[f] += k.fallbacks[f].load(std::memory_order_relaxed);
      }
    }
    out << "blink-accounting " << name(static_cast<Coll>(c)) << " handled=" << calls
        << " bytes=" << bytes;
    for (std::size_t f = 0; f < kNumFallbacks; ++f) {
      if (fallbacks[f] != 0)
        out << " fallback." << name(static_cast<Fallback>(f)) << "=" << fallbacks[f];
    }
    if (refused != 0) out << " refused.memory_type=" << refused;
    out << "\n";
  }
  return out.str();
}

}  // namespace blink::glue
