// perf/treegen: tree-generation quality and speed on the zoo and on every GPU
// subset (sizes 3..8) of DGX-1P and DGX-1V, for the exact and MWU packers.
// Writes one CSV row per case and method, and a Markdown summary.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "common/error.hpp"
#include "tools/cli.hpp"
#include "topology/zoo.hpp"
#include "treegen/treegen.hpp"

namespace {

namespace topo = blink::topo;
namespace treegen = blink::treegen;

const char* kHelp =
    R"(Usage: treegen_bench [--csv FILE] [--markdown FILE] [--fine-sample N] [--quick]

Packs broadcast trees (root: the lowest GPU), AllGather trees and reduce+broadcast
(undirected AllReduce) trees for every zoo machine
and for every GPU subset of sizes 3..8 of dgx1-p100 and dgx1-v100 (219 each), with
the exact packer and MWU at epsilon 0.1 (and 0.01, then minimised, on the DGX-1
graphs, where it takes seconds rather than minutes), and reports bound, rate/bound,
tree count, trees over the integral optimum (the rate in lanes, treegen::laneGbps;
per root times the roots for AllGather) and milliseconds (wall time, one core) per
method.

  --csv FILE        one row per case and method (default perf/results/treegen.csv)
  --markdown FILE   the summary tables (default perf/results/treegen.md)
  --fine-sample N   run MWU at epsilon 0.01 on every Nth subset only (default 1: all)
  --quick           only the zoo machines and 20 subsets (a smoke run)
  -h, --help        this text
)";

struct Case {
  std::string group;  // "zoo", "dgx1-p100 subsets", ...
  std::string name;
  topo::Topology topology;
  std::set<topo::LinkKind> links;  // empty: all
};

struct Row {
  std::string group, name, collective, method;
  int gpus = 0;
  double bound = 0, rate = 0, millis = 0;
  std::size_t trees = 0;
  // The integral optimum: the rate in lanes (treegen::laneGbps), rounded up, per
  // root for AllGather times the roots; an exact packing on integral lanes holds
  // at most that many trees.
  double lanes = 0;
  double treesOverIntegral() const { return lanes > 0 ? static_cast<double>(trees) / lanes : 0.0; }
  bool unsplit = false;
  double ratio() const { return bound > 0 ? rate / bound : 1.0; }
};

std::string join(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

Row run(const Case& c, const std::string& collective, treegen::Method method, double epsilon,
        bool minimize) {
  treegen::PackOptions options;
  options.method = method;
  options.epsilon = epsilon;
  options.minimize = minimize;
  options.links = c.links;
  // This measures the algorithms themselves, not a runtime's planning: the largest
  // budget, so that no row is a packing cut short (BLINK_PLAN_BUDGET_MS's 400 ms
  // would cut MWU at epsilon 0.01 on the larger machines).
  options.budget_ms = 600'000;
  treegen::TreeSet set =
      collective == "broadcast"
          ? treegen::packBroadcast(c.topology, c.topology.device(c.topology.gpus()[0]).gpu_index,
                                   options)
      : collective == "allgather" ? treegen::packAllGather(c.topology, options)
                                  : treegen::packReduceBroadcast(c.topology, options);
  Row r;
  r.group = c.group;
  r.name = c.name;
  r.collective = collective;
  r.method = method == treegen::Method::Exact
                 ? "exact"
                 : "mwu" + std::string(epsilon < 0.05 ? "0.01" : "0.1") + (minimize ? "+min" : "");
  r.gpus = static_cast<int>(c.topology.gpus().size());
  r.bound = set.bound_gbps;
  r.rate = set.rate_gbps;
  r.millis = set.millis;
  r.trees = set.trees.size();
  const double lane = treegen::laneGbps(c.topology, c.links);
  const double per_root = std::ceil(set.rate_gbps / lane - 1e-9);
  r.lanes = collective == "allgather" ? per_root * r.gpus : per_root;
  for (const auto& n : set.notes) r.unsplit |= n.find("could not be split") != std::string::npos;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    blink::cli::Args args("treegen_bench", argc, argv, {"--csv", "--markdown", "--fine-sample"},
                          {"--help", "--quick"});
    if (args.has("--help")) {
      std::cout << kHelp;
      return 0;
    }
    const std::string csv_path = args.valueOr("--csv", "perf/results/treegen.csv");
    const std::string md_path = args.valueOr("--markdown", "perf/results/treegen.md");
    const int fine_sample = std::stoi(args.valueOr("--fine-sample", "1"));
    if (fine_sample < 1) throw blink::cli::UsageError{"--fine-sample must be >= 1"};
    const bool quick = args.has("--quick");

    const topo::LinkTable table = topo::LinkTable::builtin();
    std::vector<Case> cases;
    for (const auto& m : topo::zooMachines()) {
      cases.push_back({"zoo", m.name, topo::makeZooTopology(m.name, table), {}});
    }
    // NVLink alone, where the tree count can be compared with the lane count.
    for (const char* machine : {"dgx1-p100", "dgx1-v100"}) {
      cases.push_back({"zoo",
                       std::string(machine) + " nvlink",
                       topo::makeZooTopology(machine, table),
                       {topo::LinkKind::NvLink}});
    }
    cases.push_back({"zoo", "dgx1-v100:8", topo::makeZooTopology("dgx1-v100:8", table), {}});
    for (const char* machine : {"dgx1-p100", "dgx1-v100"}) {
      topo::Topology full = topo::makeZooTopology(machine, table);
      int count = 0;
      for (unsigned mask = 0; mask < 256; ++mask) {
        std::vector<int> gpus;
        for (int g = 0; g < 8; ++g) {
          if (mask & (1u << g)) gpus.push_back(g);
        }
        if (gpus.size() < 3) continue;
        if (quick && ++count > 10) break;
        cases.push_back({std::string(machine) + " subsets",
                         std::string(machine) + "[" + join(gpus) + "]",
                         full.restrictToGpus(gpus),
                         {}});
      }
    }

    std::vector<Row> rows;
    int index = 0;
    for (const auto& c : cases) {
      const bool cluster = c.name.find(':') != std::string::npos;
      for (const char* collective : {"broadcast", "allgather", "reduce+broadcast"}) {
        rows.push_back(run(c, collective, treegen::Method::Exact, 0.1, false));
        if (cluster || std::string(collective) == "reduce+broadcast")
          continue;  // MWU on 64 GPUs takes minutes; the exact packer is the product
        rows.push_back(run(c, collective, treegen::Method::Mwu, 0.1, false));
        // epsilon 0.01 needs ~100x the iterations of 0.1: DGX-1 graphs only.
        const bool dgx1 = c.name.rfind("dgx1", 0) == 0;
        if (dgx1 && std::string(collective) == "broadcast" && index % fine_sample == 0) {
          rows.push_back(run(c, collective, treegen::Method::Mwu, 0.01, true));
        }
      }
      ++index;
      std::cerr << "\r" << index << "/" << cases.size() << " cases" << std::flush;
    }
    std::cerr << "\n";

    std::ofstream csv(csv_path);
    csv << "group,case,gpus,collective,method,bound_gbps,rate_gbps,rate_over_bound,trees,millis,"
           "unsplit_switch,trees_over_integral_optimum\n";
    for (const auto& r : rows) {
      csv << r.group << ",\"" << r.name << "\"," << r.gpus << "," << r.collective << "," << r.method
          << "," << std::setprecision(10) << r.bound << "," << r.rate << "," << r.ratio() << ","
          << r.trees << "," << std::setprecision(6) << r.millis << "," << (r.unsplit ? 1 : 0) << ","
          << std::setprecision(4) << r.treesOverIntegral() << "\n";
    }

    // Summary: per group, collective and method: cases, min rate/bound, trees, max ms.
    std::ostringstream md;
    md << "| cases | collective | method | n | min rate/bound | mean trees | max trees | "
          "max trees / integral optimum | median ms | max ms |\n"
          "|---|---|---|---|---|---|---|---|---|---|\n";
    std::map<std::tuple<std::string, std::string, std::string>, std::vector<Row>> groups;
    for (const auto& r : rows) groups[{r.group, r.collective, r.method}].push_back(r);
    for (auto& [key, list] : groups) {
      double min_ratio = 1.0, trees = 0, max_ms = 0, max_over_integral = 0;
      std::size_t max_trees = 0;
      std::vector<double> ms;
      for (const auto& r : list) {
        min_ratio = std::min(min_ratio, r.ratio());
        trees += static_cast<double>(r.trees);
        max_trees = std::max(max_trees, r.trees);
        max_over_integral = std::max(max_over_integral, r.treesOverIntegral());
        max_ms = std::max(max_ms, r.millis);
        ms.push_back(r.millis);
      }
      std::sort(ms.begin(), ms.end());
      md << "| " << std::get<0>(key) << " | " << std::get<1>(key) << " | " << std::get<2>(key)
         << " | " << list.size() << " | " << std::fixed << std::setprecision(6) << min_ratio
         << " | " << std::setprecision(1) << trees / static_cast<double>(list.size()) << " | "
         << max_trees << " | " << std::setprecision(3) << max_over_integral << " | "
         << std::setprecision(2) << ms[ms.size() / 2] << " | " << max_ms << " |\n"
         << std::defaultfloat;
    }
    md << "\n| machine | GPUs | broadcast bound GB/s | exact rate/bound | exact trees | "
          "trees / integral optimum | exact ms | mwu0.1 rate/bound | mwu0.1 trees | allgather "
          "bound GB/s | allgather exact ms | reduce+broadcast GB/s | its trees |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
    for (const auto& c : cases) {
      if (c.group != "zoo") continue;
      auto find = [&](const std::string& coll, const std::string& method) -> const Row* {
        for (const auto& r : rows) {
          if (r.name == c.name && r.collective == coll && r.method == method) return &r;
        }
        return nullptr;
      };
      const Row* e = find("broadcast", "exact");
      const Row* m = find("broadcast", "mwu0.1");
      const Row* a = find("allgather", "exact");
      const Row* rb = find("reduce+broadcast", "exact");
      md << "| " << c.name << " | " << e->gpus << " | " << std::setprecision(6) << e->bound << " | "
         << e->ratio() << " | " << e->trees << " | " << std::setprecision(3)
         << e->treesOverIntegral() << " | " << e->millis << " | "
         << (m ? std::to_string(m->ratio()) : "-") << " | " << (m ? std::to_string(m->trees) : "-")
         << " | " << std::setprecision(6) << a->bound << " | " << std::setprecision(3) << a->millis
         << " | " << std::setprecision(6) << rb->rate << " | " << rb->trees << " |\n";
    }
    std::ofstream(md_path) << md.str();
    std::cout << md.str();
    return 0;
  } catch (const blink::cli::UsageError& e) {
    std::cerr << "treegen_bench: " << e.message << " (see --help)\n";
    return 2;
  } catch (const blink::Error& e) {
    std::cerr << "treegen_bench: " << e.what() << "\n";
    return 1;
  }
}
