#include "common/env.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <set>
#include <sstream>

#include "common/error.hpp"
#include "common/log.hpp"

extern char** environ;

namespace blink::env {
namespace {

std::string upper(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return out;
}

std::vector<std::string> splitChoices(std::string_view domain) {
  std::vector<std::string> words;
  std::string_view rest = domain;
  while (!rest.empty()) {
    auto bar = rest.find('|');
    words.emplace_back(rest.substr(0, bar));
    if (bar == std::string_view::npos) break;
    rest.remove_prefix(bar + 1);
  }
  return words;
}

bool parseLongLong(std::string_view text, long long& out) {
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size() && !text.empty();
}

void integerRange(const Variable& var, long long& lo, long long& hi) {
  auto dots = var.domain.find("..");
  if (dots == std::string_view::npos || !parseLongLong(var.domain.substr(0, dots), lo) ||
      !parseLongLong(var.domain.substr(dots + 2), hi)) {
    throw Error(blinkInternalError, "bad integer domain for " + std::string(var.name));
  }
}

const Variable& lookup(std::string_view name) {
  for (const auto& var : registry()) {
    if (var.name == name) return var;
  }
  throw Error(blinkInternalError,
              "environment variable " + std::string(name) + " is read but not registered");
}

[[noreturn]] void invalid(const Variable& var, std::string_view value, std::string_view expected) {
  throw Error(blinkInvalidInput, std::string(var.name) + "='" + std::string(value) +
                                     "' is invalid: expected " + std::string(expected));
}

}  // namespace

const std::vector<Variable>& registry() {
  static const std::vector<Variable> vars = {
      {"BLINK_DEBUG", Kind::Choice, "NONE|WARN|INFO|TRACE", "WARN",
       "Diagnostics on stderr (never stdout). WARN: problems only; INFO: also what Blink "
       "decided and why; TRACE: also per-step detail; NONE: silent."},
      {"BLINK_TOPO", Kind::Text, "zoo name or file", "",
       "Use this topology instead of discovering the machine: a zoo name (`blink-topo list`), a "
       "Blink JSON file or an NCCL topology XML file."},
      {"BLINK_TOPO_GPUS", Kind::IntList, "comma-separated GPU indices", "",
       "Restrict the topology to these GPUs (an allocation view, e.g. `0,1,2,4`)."},
      {"BLINK_LINK_GBPS", Kind::Text, "NAME=GBPS,...", "",
       "Override the bandwidth per lane and direction of link generations, e.g. "
       "`nvlink2=22.5,pcie3x16=12` (names: `blink-topo links`)."},
      {"BLINK_PROBE_LINKS", Kind::Choice, "0|1", "0",
       "1: when a communicator spans nodes, measure at set-up (about 0.3 s, at most 0.5 s, "
       "once per process and set of nodes) what each NIC carries between the nodes (TCP "
       "streams from its IPv4 address, the node leaders in a ring, every NIC at once) and plan "
       "with that rate where it is below the nominal one (rate-limited or virtual NICs); "
       "`BLINK_DEBUG=INFO` shows each NIC's speed and its source (`measured`). Set it alike on "
       "every rank."},
      {"BLINK_PACE_BETWEEN_NODES", Kind::Choice, "0|1", "0",
       "1: streams between nodes are paced by the plan's channel shares, as the simulator "
       "assumes: where two ranks on different nodes exchange streams on several channels, "
       "their messages travel in pieces of BLINK_PACE_PIECE_BYTES, granted by weighted fair "
       "queueing among the channels toward one node. Off by default, and plans still take "
       "no flat trees across nodes: paced, they were not shown faster than the hierarchical "
       "plan (perf/README.md, \"Pacing between nodes\"); `BLINK_ALGO=trees` forces them. "
       "Set it alike on every rank."},
      {"BLINK_LEADERS_MPI", Kind::Choice, "0|1", "1",
       "1: on a communicator across nodes, the node leaders' round may hand a collective to "
       "the MPI library's own (PMPI_* among the leaders, between the boards; or, where a node "
       "has several ranks, PMPI_* on every rank without the boards) unless that is measured "
       "more than 5% slower than the best way when the leaders are set up; INFO and explain say "
       "which collectives it took. 0: never. Set it alike on every rank."},
      {"BLINK_PACE_PIECE_BYTES", Kind::Integer, "1024..1073741824", "32768",
       "With BLINK_PACE_BETWEEN_NODES=1, the pieces paced messages travel in. Above the "
       "transport's eager limit (Open MPI's TCP: 64 KiB) a piece the pacer waits for leaves "
       "only once its receiver asks for it, so pacing is no longer proven free of "
       "deadlocks (src/transport/paced_transport.hpp). Set it alike on every rank."},
      {"BLINK_CHUNK_BYTES", Kind::Integer, "4..1073741824", "",
       "Pipeline chunk size in bytes for every tree; unset, each tree's chunk minimises its "
       "pipeline time under the alpha-beta model."},
      {"BLINK_PLAN_BUDGET_MS", Kind::Integer, "1..600000", "400",
       "Work allowed to each planning (tree packing, switch splitting, minimisation), in "
       "milliseconds of a slow machine. It is counted in deterministic work units, so every rank "
       "stops at the same point and builds the same plan; past it the planner uses the trees "
       "packed so far, or the ring and double binary tree, and says so at WARN."},
      {"BLINK_TIMEOUT_S", Kind::Integer, "1..86400", "300",
       "Longest wait, in seconds, for a peer that makes no progress before a collective fails "
       "with blinkTimeout naming the peer (never a silent hang)."},
      {"BLINK_SHM_SINGLE_COPY", Kind::Choice, "AUTO|1|0", "AUTO",
       "Messages of 1 MiB or more between ranks of a node: 1 reads them straight from the "
       "sender's memory (Linux cross-memory attach, one copy instead of two) when every rank "
       "of the node can; AUTO does so only when the node's ranks do not outnumber its CPUs "
       "(oversubscribed, two copies cost less CPU); 0 always copies through shared-memory "
       "slots and never lets the direct path read the peers' buffers."},
      {"BLINK_ALGO", Kind::Text, "NAME or COLLECTIVE:NAME,...", "",
       "Force an algorithm instead of the planner's fastest prediction, for every collective "
       "(`trees`) or per collective (`allreduce:trees,bcast:direct`). Algorithms: `board` "
       "(one-shot shared-memory board), `direct` (the node's direct path), `trees` (Blink's "
       "packed trees), `hierarchical` (trees per node plus an inter-node phase), `ring`, `dbt` "
       "(double binary trees), `leaders` (across nodes: the board on each node plus a round "
       "between node leaders, in the shape measured cheapest at set-up). Collectives: allreduce, "
       "broadcast (bcast), reduce, allgather, "
       "reducescatter. Where the forced one does not apply to a call, the planner chooses and "
       "says why at INFO."},
      {"BLINK_TRANSPORT", Kind::Text, "NAME or within=NAME,between=NAME", "",
       "The transport a plan's streams use between ranks of one node (`within`) and of "
       "different nodes (`between`); unset, the first registered one that can serve them "
       "(`blink-info --version` lists them): `shm` within a node; between nodes `ucx` where "
       "this build has UCX and every rank sets it up, else `pmpi` (the reason is at "
       "BLINK_DEBUG=INFO and in explain). `pmpi` serves both; `ucx` and `sockets` (plain TCP "
       "connections, one per peer and channel) only `between`: e.g. `between=pmpi`. Unset, the "
       "node "
       "leaders' rounds take the fastest of the default, `pmpi` and `sockets`, timed when "
       "they are set up. A transport named here must work (no fallback) and carries the "
       "leaders' rounds too."},
      {"BLINK_ONE_SHOT_MAX_BYTES", Kind::Integer, "0..1048576", "32768",
       "The capacity of the one-shot shared-memory board: collectives of at most this many "
       "bytes on a communicator within one node may take it (every rank posts its input on a "
       "shared board and reads the others': one synchronisation instead of a plan's one per "
       "step) where its cost model predicts it fastest; across nodes each node has one, and calls "
       "of at most this many bytes may take `leaders` (the board plus rounds between node "
       "leaders). 0: no board."},
      {"BLINK_SHM_DIRECT_MIN_BYTES", Kind::Integer, "0..1099511627776", "32768",
       "AllReduce, Reduce, ReduceScatter, AllGather and Broadcast of at least this many bytes on a "
       "communicator within one node may take the direct path where its cost model predicts it "
       "fastest: a reduce-scatter "
       "and an all-gather (or one copy out, for Broadcast) through a staging area in shared "
       "memory (BLINK_SHM_STAGING_BYTES), pipelined in pieces for AllReduce and Reduce; where "
       "the area is "
       "off or cannot be made, every rank reads its peers' buffers with cross-memory attach "
       "instead, unless BLINK_SHM_SINGLE_COPY=0. 0: no direct path."},
      {"BLINK_SHM_STAGING_BYTES", Kind::Integer, "0..68719476736", "33554432",
       "The direct path's staging area: at most this much shared memory per rank, in two "
       "halves, so that a round can be written while peers still read the last. It starts at "
       "4 MiB and grows, on every rank of the node at once, to fit an AllGather, Broadcast or "
       "ReduceScatter in one round; larger calls go in rounds. AllReduce and Reduce always go "
       "in small rounds (256 KiB per rank, 1 MiB where ranks share cores). 0: no staging area "
       "(the direct path reads the peers' buffers with cross-memory attach)."},
      {"BLINK_MPI_CUDA_AWARE", Kind::Choice, "AUTO|0|1", "AUTO",
       "libblink_mpi.so only: whether the MPI library takes CUDA device buffers. A call on "
       "device buffers Blink cannot move (no device data path) goes to the library only where "
       "it is CUDA-aware on every rank, else fails with `MPI_ERR_BUFFER`. AUTO asks "
       "`MPIX_Query_cuda_support()` (a library without it is not CUDA-aware); 0/1 say it "
       "(an MPI without the query; tests)."},
      {"BLINK_MPI_DISABLE", Kind::Choice, "0|1", "0",
       "libblink_mpi.so only: 1 sends every MPI collective to the MPI library (`PMPI_*`) "
       "untouched."},
      {"BLINK_MPI_MIN_BYTES", Kind::Text, "BYTES or NAME=BYTES,...",
       "allreduce=0,bcast=4096,reduce=1048576,allgather=4096,reduce_scatter_block=4096",
       "libblink_mpi.so only: smaller calls go to the MPI library. One number for every "
       "collective, or per collective: `allreduce`, `bcast`, `reduce`, `allgather`, "
       "`reduce_scatter_block`, `allgatherv`, `gather`, `gatherv`, `reduce_scatter` (bytes of "
       "one rank's buffer, for the last four of the largest block; unnamed ones keep their "
       "default, 0 for the last four). MPI_Barrier has no bytes and no threshold."},
      {"BLINK_NODE_ID", Kind::Text, "any name", "hostname",
       "The node this rank runs on; ranks with equal names share a node. Set it per rank to "
       "emulate several nodes on one machine. Ranks grouped as one node must share "
       "/dev/shm: communicator creation checks it (a token in a segment) and fails otherwise."},
      {"BLINK_UCX_NICS", Kind::Text, "DEVICE,... or all", "",
       "The NICs the `ucx` transport (BLINK_TRANSPORT) uses between nodes, one UCP context each, "
       "in "
       "UCX_NET_DEVICES names (`eth0`, `mlx5_0:1`); `all`: one context over the devices UCX "
       "picks itself. Unset: the active InfiniBand/RoCE ports, else the IPv4 interfaces that "
       "are up (loopback excluded). They are the NICs of the node in the plan's topology. A rank's "
       "streams between nodes leave on the NIC the plan assigns it (the nearest to its socket or "
       "GPU, round robin among equals; `BLINK_DEBUG=INFO` prints the map), or, where the plan "
       "knows no NIC of that name, on NIC (local rank + channel) mod N, N the fewest NICs of "
       "any node."},
      {"BLINK_DEVICE", Kind::Choice, "AUTO|CUDA|EMULATED|OFF", "AUTO",
       "Which device runs collectives on GPU buffers: AUTO (CUDA where this process sees a usable "
       "GPU, else none: device buffers then go to the MPI library or fail), CUDA, EMULATED "
       "(threads play streams and copy engines over host memory, for tests without a GPU: "
       "buffers from the emulated device take the GPU data path), OFF."},
      {"BLINK_DEVICE_EMULATION_DELAY_US", Kind::Integer, "0..100000", "0",
       "BLINK_DEVICE=EMULATED only: delay every stream operation by a random time of up to "
       "this many microseconds, so that work ordered only by luck goes wrong in tests."},
      {"BLINK_DEVICE_EMULATION_FAIL_IPC", Kind::Choice, "0|1", "0",
       "BLINK_DEVICE=EMULATED only, for tests: 1 makes opening a peer's device memory fail, "
       "as a CUDA IPC error would, so that the device path fails to set up."},
      {"BLINK_DEVICE_EMULATION_PEER_GROUP", Kind::Integer, "0..1024", "0",
       "BLINK_DEVICE=EMULATED only: the emulated GPU of local rank i reaches that of rank j "
       "peer to peer only when i / N == j / N (N GPUs per PCIe root complex, e.g. 4 on a "
       "two-socket PCIe machine; 1: no two GPUs); other pairs take the device transport's "
       "host-staged path. 0: every pair."},
      {"BLINK_DEVICE_P2P", Kind::Choice, "AUTO|OFF", "AUTO",
       "The device transport between the GPUs of a node: AUTO copies peer to peer (CUDA IPC) "
       "between GPUs that reach each other (`cudaDeviceCanAccessPeer`, both ways; always on one "
       "GPU) and stages the other pairs through pinned host memory; OFF stages every pair."},
      {"BLINK_DEVICE_SLOT_BYTES", Kind::Integer, "64..1073741824", "1048576",
       "The device transport's chunk: each stream between two GPUs of a node has 4 slots of "
       "this many bytes (a multiple of 64) in the receiver's memory, so up to 4 chunks are "
       "copied or reduced at once per stream."},
  };
  return vars;
}

std::optional<std::string> get(std::string_view name) {
  const Variable& var = lookup(name);
  const char* raw = std::getenv(std::string(var.name).c_str());
  if (raw == nullptr || *raw == '\0') return std::nullopt;
  return std::string(raw);
}

void validate(const Variable& var, std::string_view value) {
  switch (var.kind) {
    case Kind::Choice: {
      auto words = splitChoices(var.domain);
      if (std::find(words.begin(), words.end(), upper(value)) == words.end()) {
        invalid(var, value, "one of " + std::string(var.domain));
      }
      break;
    }
    case Kind::Integer: {
      long long lo = 0, hi = 0, v = 0;
      integerRange(var, lo, hi);
      if (!parseLongLong(value, v) || v < lo || v > hi) {
        invalid(var, value, "an integer in " + std::string(var.domain));
      }
      break;
    }
    case Kind::IntList:
      (void)parseIntList(value, var.name);
      break;
    case Kind::Text:
      break;
  }
}

long long getInt(std::string_view name) {
  const Variable& var = lookup(name);
  auto value = get(name);
  std::string text = value ? *value : std::string(var.default_value);
  validate(var, text);
  long long v = 0;
  parseLongLong(text, v);
  return v;
}

std::vector<int> getIntList(std::string_view name) {
  const Variable& var = lookup(name);
  auto value = get(name);
  if (!value) return {};
  return parseIntList(*value, var.name);
}

std::string getChoice(std::string_view name) {
  const Variable& var = lookup(name);
  auto value = get(name);
  std::string text = value ? *value : std::string(var.default_value);
  validate(var, text);
  return upper(text);
}

void validateAll() {
  std::set<std::string_view> known;
  for (const auto& var : registry()) {
    known.insert(var.name);
    if (auto value = get(var.name)) validate(var, *value);
  }
  // Read by scripts/*.sh, not by the library: set around a whole test run, they
  // reach every program it starts and must not draw a warning there.
  for (std::string_view script_variable : {"BLINK_SANITIZE", "BLINK_BUILD_DIR", "BLINK_BUILD_JOBS",
                                           "BLINK_FUZZ_SECONDS", "BLINK_FUZZ_SEED"}) {
    known.insert(script_variable);
  }
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string_view kv(*entry);
    if (kv.rfind("BLINK_", 0) != 0) continue;
    std::string_view name = kv.substr(0, kv.find('='));
    if (!known.contains(name)) {
      BLINK_LOG(Warn,
                "ignoring unknown environment variable " << name << " (see the README's table)");
    }
  }
}

std::string markdownTable() {
  std::ostringstream out;
  out << "| Variable | Values | Default | Meaning |\n";
  out << "|---|---|---|---|\n";
  auto cell = [](std::string_view text) {
    std::string escaped;
    for (char c : text) {
      if (c == '|') escaped += '\\';
      escaped += c;
    }
    return escaped;
  };
  for (const auto& var : registry()) {
    out << "| `" << var.name << "` | " << cell(var.domain) << " | "
        << (var.default_value.empty() ? "unset" : "`" + std::string(var.default_value) + "`")
        << " | " << var.description << " |\n";
  }
  return out.str();
}

std::vector<std::string_view> splitItems(std::string_view text) {
  std::vector<std::string_view> items;
  while (!text.empty()) {
    const auto comma = text.find(',');
    items.push_back(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
  }
  return items;
}

std::vector<int> parseIntList(std::string_view text, std::string_view what) {
  std::vector<int> values;
  std::set<int> seen;
  std::string_view rest = text;
  auto fail = [&](const std::string& why) -> void {
    throw Error(blinkInvalidInput, std::string(what) + "='" + std::string(text) + "' is invalid: " +
                                       why + " (expected comma-separated indices such as 0,1,2,4)");
  };
  if (rest.empty()) fail("empty list");
  while (true) {
    auto comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    long long v = 0;
    if (!parseLongLong(item, v) || v < 0 || v > 1'000'000) {
      fail("'" + std::string(item) + "' is not a non-negative integer");
    }
    if (!seen.insert(static_cast<int>(v)).second) fail("index " + std::to_string(v) + " repeats");
    values.push_back(static_cast<int>(v));
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return values;
}

}  // namespace blink::env
