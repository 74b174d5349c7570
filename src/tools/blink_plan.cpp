// blink-plan: the trees Blink packs for a collective on a topology.
#include <algorithm>
#include <fstream>
#include <iostream>
#include <sstream>

#include "common/env.hpp"
#include "common/error.hpp"
#include "tools/cli.hpp"
#include "tools/tool_io.hpp"
#include "topology/link_table.hpp"
#include "topology/load.hpp"
#include "treegen/tree_set_io.hpp"
#include "treegen/treegen.hpp"

namespace {

namespace topo = blink::topo;
namespace treegen = blink::treegen;
using blink::cli::UsageError;

const char* kHelp = R"(Usage: blink-plan [options]

Packs spanning trees for a collective and prints each tree (edges and weight), the
rate reached, the optimal bound, rate/bound, the tree count and the time taken.

Options:
  --topo NAME|FILE     zoo machine, Blink JSON or NCCL XML (default $BLINK_TOPO,
                       else this machine)
  --gpus LIST          allocation view, e.g. 0,1,2,4 (default $BLINK_TOPO_GPUS)
  --collective C       broadcast (default), reduce, allgather, reducescatter, allreduce
  --root GPU           root of broadcast/reduce (default: the lowest GPU)
  --method M           exact (default): Lovász's construction, reaches the bound;
                       mwu: the Blink paper's multiplicative-weight packing
  --epsilon E          accuracy of mwu, 0 < E < 1 (default 0.1)
  --minimize           cut the tree count at no loss of rate (Caratheodory), then
                       drop the lightest trees within --tolerance
  --tolerance T        rate --minimize may give up, a fraction in [0, 1) (default 0)
  --budget-ms MS       work allowed to the packing, 1..600000 milliseconds of a slow
                       machine, counted in deterministic work units (default
                       $BLINK_PLAN_BUDGET_MS, else 400); past it the trees found so far
                       are printed, with a note
  --links KINDS        link kinds the trees may use: nvlink, pcie, all (default all),
                       or a comma list of nvlink,pcie,smp,network,shm
  --format F           text (default), json (a stable interface), dot
  --output FILE        write to FILE instead of standard output
  --link-gbps SPEC     override link bandwidths, e.g. nvlink2=22.5
  -h, --help           this text
      --version        the build this tool belongs to (version, git revision, ...)

Reduce uses the broadcast trees reversed, ReduceScatter the AllGather trees
reversed. AllReduce is packed in both shapes, ReduceScatter + AllGather and
reduce + broadcast over undirected trees (packed at the graph's strength), and the
faster is printed; its bound is the tree-schedule optimum (the strength), and the
notes give both rates and the cut bound. With --minimize the tree count printed
is what is left once equal-rate trees are merged and dependent ones removed.

Examples:
  blink-plan --topo dgx1-v100 --gpus 0,1,2,4 --root 0 --method exact
  blink-plan --topo dgx1-v100 --collective allgather --links nvlink --format json

A packing past its budget is still a success (exit 0): the note says so.

Exit codes: 0 success, 1 the topology could not be loaded, 2 bad command line.
)";

// AllReduce in both tree shapes, the faster printed: ReduceScatter + AllGather
// (time 2 (bytes / N) / rate, i.e. an algorithm rate of N * rate / 2) and
// reduce + broadcast over undirected trees (rate: bytes / time). Its bound is the
// tree-schedule optimum, the graph's strength (exact without switches).
treegen::TreeSet planAllReduce(const topo::Topology& t, const treegen::PackOptions& options) {
  treegen::TreeSet rs_ag = treegen::packAllGather(t, options);
  const double n = static_cast<double>(t.gpus().size());
  rs_ag.rate_gbps *= n / 2.0;
  rs_ag.bound_gbps *= n / 2.0;
  treegen::TreeSet rb = treegen::packReduceBroadcast(t, options);
  const auto bounds = treegen::allReduceBounds(t, options.links);
  const double cut_bound = treegen::allReduceBoundGbps(t, options.links);
  const bool reduce_broadcast = rb.rate_gbps >= rs_ag.rate_gbps;
  treegen::TreeSet set = reduce_broadcast ? rb : rs_ag;
  const double optimum = std::max(rb.bound_gbps, rs_ag.bound_gbps);
  set.bound_gbps = optimum;
  std::ostringstream note;
  note << "AllReduce as "
       << (reduce_broadcast ? "reduce + broadcast over undirected trees"
                            : "ReduceScatter + AllGather")
       << "; rates are bytes / time. reducescatter+allgather " << rs_ag.rate_gbps << " GB/s ("
       << rs_ag.trees.size() << " trees), reduce+broadcast " << rb.rate_gbps << " GB/s ("
       << rb.trees.size() << " trees); tree-schedule optimum " << optimum << " GB/s"
       << (bounds.reduce_broadcast_exact ? " (the graph's strength)"
                                         : " (switches split off: not a proven bound)")
       << ", cut and traffic bound " << cut_bound << " GB/s";
  set.notes.push_back(note.str());
  return set;
}

int run(const blink::cli::Args& args) {
  if (args.has("--help")) {
    std::cout << kHelp;
    return blink::cli::kOk;
  }
  if (!args.positional().empty()) {
    throw UsageError{"unexpected argument '" + args.positional().front() + "'"};
  }
  const std::string collective = args.valueOr("--collective", "broadcast");
  static const std::set<std::string> kCollectives = {"broadcast", "reduce", "allgather",
                                                     "reducescatter", "allreduce"};
  if (!kCollectives.contains(collective)) {
    throw UsageError{
        "--collective must be broadcast, reduce, allgather, reducescatter or "
        "allreduce, not '" +
        collective + "'"};
  }
  const std::string format = args.valueOr("--format", "text");
  if (format != "text" && format != "json" && format != "dot") {
    throw UsageError{"--format must be text, json or dot, not '" + format + "'"};
  }
  treegen::PackOptions options;
  const std::string method = args.valueOr("--method", "exact");
  auto parsed = treegen::parseMethod(method);
  if (!parsed) throw UsageError{"--method must be exact or mwu, not '" + method + "'"};
  options.method = *parsed;
  if (auto eps = args.value("--epsilon")) {
    char* end = nullptr;
    options.epsilon = std::strtod(eps->c_str(), &end);
    if (end == eps->c_str() || *end != '\0' || !(options.epsilon > 0 && options.epsilon < 1)) {
      throw UsageError{"--epsilon must be a number in (0, 1), not '" + *eps + "'"};
    }
  }
  options.links = blink::cli::parseLinks(args.valueOr("--links", "all"));
  options.minimize = args.has("--minimize");
  if (auto tol = args.value("--tolerance")) {
    char* end = nullptr;
    options.tolerance = std::strtod(tol->c_str(), &end);
    if (end == tol->c_str() || *end != '\0' || !(options.tolerance >= 0 && options.tolerance < 1)) {
      throw UsageError{"--tolerance must be a number in [0, 1), not '" + *tol + "'"};
    }
  }

  if (auto budget = args.value("--budget-ms")) {
    char* end = nullptr;
    const long long ms = std::strtoll(budget->c_str(), &end, 10);
    if (end == budget->c_str() || *end != '\0' || ms < 1 || ms > 600000) {
      throw UsageError{"--budget-ms must be an integer in 1..600000, not '" + *budget + "'"};
    }
    options.budget_ms = static_cast<double>(ms);
  }

  topo::Topology t = blink::cli::topologyFromArgs(args);
  if (t.gpus().empty()) {
    throw blink::Error(blinkInvalidInput, "topology '" + t.name() + "' has no GPUs to plan for");
  }

  treegen::TreeSet set;
  if (collective == "broadcast" || collective == "reduce") {
    int root = t.device(t.gpus().front()).gpu_index;
    if (auto r = args.value("--root")) {
      char* end = nullptr;
      long v = std::strtol(r->c_str(), &end, 10);
      if (end == r->c_str() || *end != '\0' || v < 0) {
        throw UsageError{"--root must be a GPU index, not '" + *r + "'"};
      }
      root = static_cast<int>(v);
      if (!t.findGpu(root)) {
        throw blink::Error(blinkInvalidArgument, "--root " + *r + " is not a GPU of " + t.name());
      }
    }
    set = treegen::packBroadcast(t, root, options);
  } else if (collective == "allreduce") {
    set = planAllReduce(t, options);
  } else {
    set = treegen::packAllGather(t, options);
  }
  set.collective = collective;
  std::string text = format == "json"  ? treegen::toJson(set, t)
                     : format == "dot" ? treegen::toDot(set, t)
                                       : treegen::toText(set, t);
  blink::cli::emitOutput(args, text);
  return blink::cli::kOk;
}

}  // namespace

int main(int argc, char** argv) {
  return blink::cli::runTool(
      "blink-plan", argc, argv,
      {"--topo", "--gpus", "--collective", "--root", "--method", "--epsilon", "--links", "--format",
       "--output", "--link-gbps", "--tolerance", "--budget-ms"},
      {"--help", "--minimize"}, run);
}
