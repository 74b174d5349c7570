// blink-sim: predicted times of Blink's plans against rings and double binary
// trees, from the flow-level simulator.
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/error.hpp"
#include "plan/baselines.hpp"
#include "plan/planner.hpp"
#include "tools/cli.hpp"
#include "tools/tool_io.hpp"

namespace {

namespace topo = blink::topo;
namespace plan = blink::plan;
using blink::cli::UsageError;

const char* kHelp = R"(Usage: blink-sim [options]

Predicts, with the flow-level simulator, how long a collective takes on a topology
with Blink's trees, NCCL-style rings and double binary trees, with algorithm and bus
bandwidth as nccl-tests defines them (busbw = algbw x 2(n-1)/n for AllReduce,
(n-1)/n for AllGather/ReduceScatter, 1 for Broadcast/Reduce), and the optimal bound.

Options:
  --topo NAME|FILE     zoo machine, Blink JSON or NCCL XML (default $BLINK_TOPO,
                       else this machine)
  --gpus LIST          allocation view, e.g. 0,1,2,4 (default $BLINK_TOPO_GPUS)
  --collective C       allreduce (default), broadcast, reduce, allgather, reducescatter
  --bytes SIZE         buffer size: 1024, 64K, 256M, 1.5G (K/M/G/T are powers of 1024,
                       fractions round down to whole bytes; default 256M). For AllGather/ReduceScatter the whole buffer.
  --root GPU           root of broadcast/reduce (default: the lowest GPU)
  --sweep              sizes from 1K up to --bytes, x4 each step
  --chunk-bytes SIZE   fixed chunk size (default $BLINK_CHUNK_BYTES, else the pipeline
                       model's choice per tree)
  --budget-ms MS       work allowed to planning each size, 1..600000 milliseconds
                       of a slow machine, counted in deterministic work units
                       (default $BLINK_PLAN_BUDGET_MS, else 400); past it the trees
                       found so far, or the ring and double binary tree, are used
  --links KINDS        link kinds Blink's trees may use, as in blink-plan: nvlink,
                       pcie, all (default all), or a comma list of
                       nvlink,pcie,smp,network,shm; the optimal bound is over those
                       links too. The baselines, and the inter-node routes of the
                       hierarchical plan, keep every link
  --candidates         also list each of Blink's own candidates (flat trees in each
                       shape, and on several nodes the hierarchical plan)
  --format F           text (default) or json (a stable interface)
  --link-gbps SPEC     override link bandwidths, e.g. nvlink2=22.5
  --output FILE        write to FILE instead of standard output
  -h, --help           this text
      --version        the build this tool belongs to (version, git revision, ...)

JSON: one object per size with collective, bytes, bound_gbps, chosen, why,
baselines ({ring, tree}: which rings and trees are modelled, one line each) and
algorithms: [{name (blink, ring, tree), time_us, algbw_gbps, busbw_gbps}]; --sweep
prints an array of them. With --candidates each object also has candidates: [{name
(blink-trees, blink-trees reduce+broadcast, blink-hierarchical), time_us, algbw_gbps,
busbw_gbps}] (blink is the fastest of them).

Examples:
  blink-sim --topo dgx1-v100 --gpus 0,1,2,4 --collective allreduce --bytes 256M
  blink-sim --topo dgx1-v100 --gpus 0,1,2,4 --collective broadcast --sweep --format json
  blink-sim --topo dgx1-v100:2 --collective allreduce --bytes 1G --candidates

Exit codes: 0 success, 1 the topology could not be loaded or simulated, 2 bad command line.
)";

std::uint64_t parseSize(const std::string& text, const std::string& option) {
  return blink::cli::parseByteSize(text, option);
}

plan::Collective parseCollective(const std::string& name) {
  for (auto c : {plan::Collective::AllReduce, plan::Collective::Broadcast, plan::Collective::Reduce,
                 plan::Collective::AllGather, plan::Collective::ReduceScatter}) {
    if (plan::toString(c) == name) return c;
  }
  throw UsageError{
      "--collective must be allreduce, broadcast, reduce, allgather or "
      "reducescatter, not '" +
      name + "'"};
}

struct Row {
  std::string name;
  double seconds = 0.0;
};

nlohmann::json timing(const std::string& name, double seconds, std::uint64_t bytes,
                      plan::Collective c, int n) {
  const double algbw = seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0.0;
  return {{"name", name},
          {"time_us", seconds * 1e6},
          {"algbw_gbps", algbw},
          {"busbw_gbps", algbw * plan::busBandwidthFactor(c, n)}};
}

nlohmann::json simulateOne(plan::Collective c, const topo::Topology& t, std::uint64_t bytes,
                           int root_rank, const plan::PlannerOptions& options, double bound,
                           bool candidates) {
  const int n = static_cast<int>(t.gpus().size());
  auto blink = plan::blinkCandidates(c, t, bytes, root_rank, options);
  double best = blink.front().second;
  for (const auto& [p, s] : blink) best = std::min(best, s);
  std::vector<Row> rows{{"blink", best}};
  rows.push_back(
      {"ring", plan::simulate(plan::ringPlan(c, t, bytes, root_rank, options.lower), t, options.sim)
                   .seconds});
  if (c != plan::Collective::AllGather && c != plan::Collective::ReduceScatter) {
    rows.push_back(
        {"tree", plan::simulate(plan::doubleBinaryTreePlan(c, t, bytes, root_rank, options.lower),
                                t, options.sim)
                     .seconds});
  }
  auto choice = plan::choosePlan(c, t, bytes, root_rank, options);
  nlohmann::json out;
  // The baselines as modelled here: how many rings, over which links.
  nlohmann::json baselines;
  baselines["ring"] = plan::describeRings(t, plan::findRings(t));
  if (c != plan::Collective::AllGather && c != plan::Collective::ReduceScatter) {
    baselines["tree"] = plan::describeDoubleBinaryTree(t);
  }
  out["baselines"] = std::move(baselines);
  out["collective"] = plan::toString(c);
  out["bytes"] = bytes;
  out["bound_gbps"] = bound;
  out["chosen"] = choice.plan.algorithm;
  out["why"] = choice.why;
  nlohmann::json algorithms = nlohmann::json::array();
  for (const auto& r : rows) algorithms.push_back(timing(r.name, r.seconds, bytes, c, n));
  out["algorithms"] = std::move(algorithms);
  if (candidates) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& [p, s] : blink) list.push_back(timing(p.algorithm, s, bytes, c, n));
    out["candidates"] = std::move(list);
  }
  return out;
}

std::string asText(const nlohmann::json& results, const topo::Topology& t) {
  std::ostringstream out;
  const auto& first = results.front();
  out << first["collective"].get<std::string>() << " on " << t.name() << ", " << t.gpus().size()
      << " GPUs; optimal algbw " << std::setprecision(4) << first["bound_gbps"].get<double>()
      << " GB/s\n";
  for (const auto& [name, what] : first["baselines"].items()) {
    out << "baseline " << name << ": NCCL-style, " << what.get<std::string>() << "\n";
  }
  out << std::left << std::setw(14) << "bytes" << std::setw(8) << "algo" << std::right
      << std::setw(14) << "time_us" << std::setw(12) << "algbw_gbps" << std::setw(12)
      << "busbw_gbps"
      << "  chosen\n";
  for (const auto& r : results) {
    bool firstRow = true;
    for (const auto& a : r["algorithms"]) {
      out << std::left << std::setw(14)
          << (firstRow ? std::to_string(r["bytes"].get<std::uint64_t>()) : "") << std::setw(8)
          << a["name"].get<std::string>() << std::right << std::fixed << std::setprecision(2)
          << std::setw(14) << a["time_us"].get<double>() << std::setw(12)
          << a["algbw_gbps"].get<double>() << std::setw(12) << a["busbw_gbps"].get<double>()
          << std::defaultfloat;
      if (firstRow) out << "  " << r["chosen"].get<std::string>();
      out << "\n";
      firstRow = false;
    }
    if (r.contains("candidates")) {
      for (const auto& a : r["candidates"]) {
        out << "  blink candidate " << std::left << std::setw(30) << a["name"].get<std::string>()
            << std::right << std::fixed << std::setprecision(2) << std::setw(14)
            << a["time_us"].get<double>() << std::setw(12) << a["algbw_gbps"].get<double>()
            << std::setw(12) << a["busbw_gbps"].get<double>() << std::defaultfloat << "\n";
      }
    }
  }
  return out.str();
}

int run(const blink::cli::Args& args) {
  if (args.has("--help")) {
    std::cout << kHelp;
    return blink::cli::kOk;
  }
  if (!args.positional().empty()) {
    throw UsageError{"unexpected argument '" + args.positional().front() + "'"};
  }
  const plan::Collective c = parseCollective(args.valueOr("--collective", "allreduce"));
  const std::uint64_t bytes = parseSize(args.valueOr("--bytes", "256M"), "--bytes");
  const std::string format = args.valueOr("--format", "text");
  if (format != "text" && format != "json") {
    throw UsageError{"--format must be text or json, not '" + format + "'"};
  }
  plan::PlannerOptions options;
  options.lower = plan::lowerOptionsFromEnvironment();
  if (auto chunk = args.value("--chunk-bytes"))
    options.lower.chunk_bytes = parseSize(*chunk, "--chunk-bytes");
  if (auto budget = args.value("--budget-ms")) {
    char* end = nullptr;
    const long long ms = std::strtoll(budget->c_str(), &end, 10);
    if (end == budget->c_str() || *end != '\0' || ms < 1 || ms > 600000) {
      throw UsageError{"--budget-ms must be an integer in 1..600000, not '" + *budget + "'"};
    }
    options.pack.budget_ms = static_cast<double>(ms);
  }
  options.pack.links = blink::cli::parseLinks(args.valueOr("--links", "all"));
  topo::Topology t = blink::cli::topologyFromArgs(args);
  const int n = static_cast<int>(t.gpus().size());
  if (n < 2)
    throw blink::Error(blinkInvalidInput, "topology '" + t.name() + "' has fewer than 2 GPUs");
  int root_rank = 0;
  if (auto r = args.value("--root")) {
    char* end = nullptr;
    long gpu = std::strtol(r->c_str(), &end, 10);
    if (end == r->c_str() || *end != '\0')
      throw UsageError{"--root must be a GPU index, not '" + *r + "'"};
    auto ranks = plan::ranksOfGpus(t);
    if (gpu < 0 || gpu >= static_cast<long>(ranks.size()) || ranks[gpu] < 0) {
      throw blink::Error(blinkInvalidArgument, "--root " + *r + " is not a GPU of " + t.name());
    }
    root_rank = ranks[gpu];
  }
  // Whole elements, and whole segments where the collective has segments.
  const std::uint64_t unit =
      (c == plan::Collective::AllGather || c == plan::Collective::ReduceScatter)
          ? 4ull * static_cast<std::uint64_t>(n)
          : 4ull;
  std::vector<std::uint64_t> sizes;
  if (args.has("--sweep")) {
    for (std::uint64_t s = 1024; s <= bytes; s *= 4) sizes.push_back(s);
  } else {
    sizes.push_back(bytes);
  }
  const double bound = plan::optimalAlgbwGbps(c, t, root_rank, options.pack.links);
  nlohmann::json results = nlohmann::json::array();
  for (std::uint64_t s : sizes) {
    const std::uint64_t rounded = std::max(s / unit * unit, unit);
    results.push_back(
        simulateOne(c, t, rounded, root_rank, options, bound, args.has("--candidates")));
  }
  std::string text = format == "json"
                         ? (args.has("--sweep") ? results : results.front()).dump(2) + "\n"
                         : asText(results, t);
  blink::cli::emitOutput(args, text);
  return blink::cli::kOk;
}

}  // namespace

int main(int argc, char** argv) {
  return blink::cli::runTool(
      "blink-sim", argc, argv,
      {"--topo", "--gpus", "--collective", "--bytes", "--root", "--chunk-bytes", "--format",
       "--link-gbps", "--output", "--hwloc-xml", "--budget-ms", "--links"},
      {"--help", "--sweep", "--candidates"}, run);
}
