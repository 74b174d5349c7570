// perf/simulate: the Blink paper's experiment on the simulator. For every distinct
// GPU allocation (one per orbit under the machine's automorphisms) of sizes 3..8 of
// dgx1-p100 and dgx1-v100, Broadcast (root: rank 0) and AllReduce at 1 GiB: Blink's
// trees against NCCL-style rings (and double binary trees), the planner's choice,
// and the optimal algorithm bandwidth. Plus a size sweep on three allocations.
// Writes one CSV row per machine, allocation, collective and size, and a Markdown
// summary.
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <numeric>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "plan/baselines.hpp"
#include "plan/planner.hpp"
#include "tools/cli.hpp"
#include "topology/zoo.hpp"

namespace {

namespace topo = blink::topo;
namespace plan = blink::plan;

const char* kHelp =
    R"(Usage: simulate_bench [--csv FILE] [--markdown FILE] [--machines LIST] [--quick]

The Blink paper's experiment on Blink's flow-level simulator. For every DISTINCT GPU
allocation of sizes 3..8 of dgx1-p100 and dgx1-v100 (one representative per orbit
under the automorphisms of the machine: GPU permutations that keep the NVLink lane
count of every pair and the PCIe switch / CPU socket grouping; the representative is
the lexicographically smallest member), Broadcast (root: rank 0, the lowest GPU) and
AllReduce of 1 GiB (element size 4) are planned and simulated:

  blink   the fastest of Blink's tree candidates (plan::blinkCandidates)
  ring    NCCL-style rings (plan::ringPlan)
  tree    NCCL's double binary tree (plan::doubleBinaryTreePlan)
  chosen  what plan::choosePlan picks with the baselines allowed
  optimal plan::optimalAlgbwGbps (the treegen bounds; for AllReduce the smaller of
          the minimum cut and the total-traffic bound, treegen::allReduceBoundGbps)

speedup = ring time / blink time; blink_over_optimal = blink algbw / optimal algbw;
nvlink_ring = plan::findRings(allocation)[0].nvlink. A size sweep (1 KiB .. 1 GiB in
x4 steps) covers the full machine, {0,1,2,4} and {0,4,5,6} of each machine.
Chunk sizes are the planner's own (plan::chooseChunkBytes); nothing is scaled down.

  --csv FILE        one row per machine, allocation, collective and size
                    (default perf/results/simulate.csv)
  --markdown FILE   the summary tables (default perf/results/simulate.md)
  --machines LIST   comma-separated zoo machines (default dgx1-p100,dgx1-v100; each
                    must be an 8-GPU DGX-1-style machine: 2 GPUs per PCIe switch,
                    2 switches per socket)
  --quick           sizes 3 and 8 only, and a sweep of 1 KiB, 1 MiB, 1 GiB (a smoke run)
  -h, --help        this text

Exit codes: 0 success, 1 failure, 2 bad command line.
)";

constexpr int kGpus = 8;
constexpr std::uint64_t kBig = std::uint64_t{1} << 30;

using Perm = std::array<int, kGpus>;

struct Row {
  std::string machine;
  std::vector<int> gpus;
  std::string collective;
  std::uint64_t bytes = 0;
  bool representative = false;  // an orbit representative of the main experiment
  bool sweep = false;           // part of the size sweep
  int orbit_size = 0;           // allocations in its orbit (0: not computed)
  double blink_s = 0, ring_s = 0, tree_s = 0, chosen_s = 0;
  std::string blink_algorithm, chosen;
  double optimal_gbps = 0;
  bool nvlink_ring = false;
  int rings = 0;

  double gbps(double s) const { return s > 0 ? static_cast<double>(bytes) / s / 1e9 : 0.0; }
  double speedup() const { return blink_s > 0 ? ring_s / blink_s : 0.0; }
  double overOptimal() const { return optimal_gbps > 0 ? gbps(blink_s) / optimal_gbps : 0.0; }
};

std::string join(const std::vector<int>& v, const char* sep = ",") {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : sep) + std::to_string(x);
  return s;
}

std::vector<int> gpusOf(unsigned mask) {
  std::vector<int> gpus;
  for (int g = 0; g < kGpus; ++g) {
    if (mask & (1u << g)) gpus.push_back(g);
  }
  return gpus;
}

// The neighbour of v of the given kind (the first one), or -1.
long neighbourOfKind(const topo::Topology& t, topo::Vertex v, topo::DeviceKind kind) {
  for (auto [e, end] = boost::out_edges(v, t.graph()); e != end; ++e) {
    topo::Vertex w = boost::target(*e, t.graph());
    if (t.device(w).kind == kind) return static_cast<long>(w);
  }
  return -1;
}

// The automorphisms of the 8-GPU machine: permutations p of the GPUs with
// lanes[p(i)][p(j)] == lanes[i][j] for every pair and the PCIe switch (2k, 2k+1) and
// CPU socket (0..3, 4..7) grouping preserved. Checks that the topology's own PCIe
// layout is that grouping.
std::vector<Perm> automorphisms(const topo::Topology& t) {
  auto gpus = t.gpus();
  if (gpus.size() != kGpus) {
    throw blink::Error(blinkInvalidInput, t.name() + " does not have 8 GPUs");
  }
  int lanes[kGpus][kGpus] = {};
  for (int i = 0; i < kGpus; ++i) {
    for (int j = 0; j < kGpus; ++j) {
      if (i == j) continue;
      for (auto e : t.linksBetween(gpus[i], gpus[j])) {
        if (t.link(e).kind == topo::LinkKind::NvLink) lanes[i][j] += t.link(e).multiplicity;
      }
    }
  }
  std::array<long, kGpus> sw{}, socket{};
  for (int i = 0; i < kGpus; ++i) {
    sw[i] = neighbourOfKind(t, gpus[i], topo::DeviceKind::PciSwitch);
    socket[i] = sw[i] < 0
                    ? -1
                    : neighbourOfKind(t, static_cast<topo::Vertex>(sw[i]), topo::DeviceKind::Cpu);
  }
  for (int i = 0; i < kGpus; ++i) {
    for (int j = 0; j < kGpus; ++j) {
      const bool same_switch = i / 2 == j / 2, same_socket = i / 4 == j / 4;
      if (sw[i] < 0 || socket[i] < 0 || (sw[i] == sw[j]) != same_switch ||
          (socket[i] == socket[j]) != same_socket) {
        throw blink::Error(blinkInvalidInput,
                           t.name() +
                               " is not laid out as a DGX-1 (GPUs 2k, 2k+1 on switch k, "
                               "switches 0, 1 on socket 0 and 2, 3 on socket 1)");
      }
    }
  }
  std::vector<Perm> group;
  Perm p;
  std::iota(p.begin(), p.end(), 0);
  do {
    bool ok = true;
    for (int i = 0; i < kGpus && ok; ++i) {
      for (int j = 0; j < kGpus && ok; ++j) {
        ok = lanes[p[i]][p[j]] == lanes[i][j] && (p[i] / 2 == p[j] / 2) == (i / 2 == j / 2) &&
             (p[i] / 4 == p[j] / 4) == (i / 4 == j / 4);
      }
    }
    if (ok) group.push_back(p);
  } while (std::next_permutation(p.begin(), p.end()));
  return group;
}

// The lexicographically smallest image (as a sorted GPU list) of the subset.
std::vector<int> canonical(const std::vector<int>& gpus, const std::vector<Perm>& group) {
  std::vector<int> best;
  for (const Perm& p : group) {
    std::vector<int> image;
    for (int g : gpus) image.push_back(p[g]);
    std::sort(image.begin(), image.end());
    if (best.empty() || image < best) best = image;
  }
  return best;
}

void measure(Row& r, const topo::Topology& full) {
  topo::Topology view = full.restrictToGpus(r.gpus);
  const plan::Collective c =
      r.collective == "broadcast" ? plan::Collective::Broadcast : plan::Collective::AllReduce;
  plan::PlannerOptions options;  // element size 4, the planner's chunking, baselines allowed
  // choosePlan builds and simulates every candidate: Blink's (blinkCandidates), the
  // ring (ringPlan) and the double binary tree (doubleBinaryTreePlan).
  plan::Choice choice = plan::choosePlan(c, view, r.bytes, 0, options);
  r.chosen = choice.plan.algorithm;
  r.chosen_s = choice.seconds;
  r.blink_s = 0;
  for (const auto& cand : choice.candidates) {
    if (cand.name.rfind("blink", 0) == 0) {
      if (r.blink_s == 0 || cand.seconds < r.blink_s) {
        r.blink_s = cand.seconds;
        r.blink_algorithm = cand.name;
      }
    } else if (cand.name == "ring") {
      r.ring_s = cand.seconds;
    } else if (cand.name == "double-binary-tree") {
      r.tree_s = cand.seconds;
    }
  }
  if (r.blink_s == 0 || r.ring_s == 0 || r.tree_s == 0) {
    throw blink::Error(blinkInternalError, "a candidate is missing for " + r.machine + "[" +
                                               join(r.gpus) + "] " + r.collective);
  }
  r.optimal_gbps = plan::optimalAlgbwGbps(c, view, 0, options.pack.links);
  auto rings = plan::findRings(view);
  r.nvlink_ring = !rings.empty() && rings[0].nvlink;
  r.rings = static_cast<int>(rings.size());
}

double geomean(const std::vector<double>& v) {
  if (v.empty()) return 0.0;
  double s = 0;
  for (double x : v) s += std::log(x);
  return std::exp(s / static_cast<double>(v.size()));
}

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

std::string sizeName(std::uint64_t b) {
  if (b >= (1u << 30)) return std::to_string(b >> 30) + " GiB";
  if (b >= (1u << 20)) return std::to_string(b >> 20) + " MiB";
  if (b >= (1u << 10)) return std::to_string(b >> 10) + " KiB";
  return std::to_string(b) + " B";
}

std::string fixed(double x, int digits) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << x;
  return s.str();
}

}  // namespace

int main(int argc, char** argv) {
  try {
    blink::cli::Args args("simulate_bench", argc, argv, {"--csv", "--markdown", "--machines"},
                          {"--help", "--quick"});
    if (args.has("--help")) {
      std::cout << kHelp;
      return 0;
    }
    if (!args.positional().empty()) {
      throw blink::cli::UsageError{"unexpected argument '" + args.positional()[0] + "'"};
    }
    const std::string csv_path = args.valueOr("--csv", "perf/results/simulate.csv");
    const std::string md_path = args.valueOr("--markdown", "perf/results/simulate.md");
    const bool quick = args.has("--quick");
    std::vector<std::string> machines;
    {
      std::stringstream list(args.valueOr("--machines", "dgx1-p100,dgx1-v100"));
      for (std::string m; std::getline(list, m, ',');) {
        if (!m.empty()) machines.push_back(m);
      }
      if (machines.empty()) throw blink::cli::UsageError{"--machines is empty"};
      for (const auto& m : machines) {
        if (!topo::isZooName(m) || m.find(':') != std::string::npos) {
          throw blink::cli::UsageError{"--machines: '" + m + "' is not a single zoo machine"};
        }
      }
    }
    std::vector<std::uint64_t> sweep_sizes;
    if (quick) {
      sweep_sizes = {1u << 10, 1u << 20, kBig};
    } else {
      for (std::uint64_t b = 1u << 10; b <= kBig; b *= 4) sweep_sizes.push_back(b);
    }
    const std::vector<std::vector<int>> sweep_allocs = {
        {0, 1, 2, 3, 4, 5, 6, 7}, {0, 1, 2, 4}, {0, 4, 5, 6}};
    const char* collectives[] = {"broadcast", "allreduce"};

    const auto start = std::chrono::steady_clock::now();
    const topo::LinkTable table = topo::LinkTable::builtin();
    std::vector<Row> rows;
    std::ostringstream orbit_md;
    orbit_md << "| machine | automorphisms | size 3 | size 4 | size 5 | size 6 | size 7 | size 8 | "
                "all |\n|---|---|---|---|---|---|---|---|---|\n";
    std::map<std::string, topo::Topology> fulls;
    for (const auto& machine : machines) {
      topo::Topology full = topo::makeZooTopology(machine, table);
      const std::vector<Perm> group = automorphisms(full);
      // Orbits: canonical subset -> number of subsets in its orbit.
      std::map<std::vector<int>, int> orbits;
      std::map<int, int> per_size, subsets_per_size;
      for (unsigned mask = 0; mask < (1u << kGpus); ++mask) {
        auto gpus = gpusOf(mask);
        if (gpus.size() < 3) continue;
        ++subsets_per_size[static_cast<int>(gpus.size())];
        if (++orbits[canonical(gpus, group)] == 1) ++per_size[static_cast<int>(gpus.size())];
      }
      orbit_md << "| " << machine << " | " << group.size();
      int total = 0;
      for (int s = 3; s <= kGpus; ++s) {
        orbit_md << " | " << per_size[s] << " (of " << subsets_per_size[s] << ")";
        total += per_size[s];
      }
      orbit_md << " | " << total << " (of "
               << std::accumulate(subsets_per_size.begin(), subsets_per_size.end(), 0,
                                  [](int a, const auto& kv) { return a + kv.second; })
               << ") |\n";
      std::cerr << machine << ": " << group.size() << " automorphisms, " << orbits.size()
                << " distinct allocations of sizes 3..8\n";
      // Orbits in order of size, then lexicographically.
      std::vector<std::pair<std::vector<int>, int>> reps(orbits.begin(), orbits.end());
      std::stable_sort(reps.begin(), reps.end(), [](const auto& a, const auto& b) {
        return a.first.size() < b.first.size();
      });
      for (const auto& [gpus, count] : reps) {
        if (quick && gpus.size() != 3 && gpus.size() != kGpus) continue;
        for (const char* c : collectives) {
          Row r;
          r.machine = machine;
          r.gpus = gpus;
          r.collective = c;
          r.bytes = kBig;
          r.representative = true;
          r.orbit_size = count;
          rows.push_back(r);
        }
      }
      for (const auto& gpus : sweep_allocs) {
        for (const char* c : collectives) {
          for (std::uint64_t b : sweep_sizes) {
            auto it = std::find_if(rows.begin(), rows.end(), [&](const Row& x) {
              return x.machine == machine && x.gpus == gpus && x.collective == c && x.bytes == b;
            });
            if (it != rows.end()) {
              it->sweep = true;
              continue;
            }
            Row r;
            r.machine = machine;
            r.gpus = gpus;
            r.collective = c;
            r.bytes = b;
            r.sweep = true;
            auto orbit = orbits.find(canonical(gpus, group));
            r.orbit_size = orbit == orbits.end() ? 0 : orbit->second;
            rows.push_back(r);
          }
        }
      }
      fulls.emplace(machine, std::move(full));
    }
    for (std::size_t i = 0; i < rows.size(); ++i) {
      measure(rows[i], fulls.at(rows[i].machine));
      if ((i + 1) % 50 == 0 || i + 1 == rows.size()) {
        std::cerr << i + 1 << "/" << rows.size() << " cases\n";
      }
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    std::ofstream csv(csv_path);
    if (!csv) throw blink::Error(blinkInvalidInput, "cannot write " + csv_path);
    csv << "machine,allocation,gpus,collective,bytes,representative,sweep,orbit_size,blink_us,"
           "ring_us,tree_us,chosen,chosen_us,blink_algorithm,blink_algbw_gbps,ring_algbw_gbps,"
           "optimal_algbw_gbps,speedup,blink_over_optimal,nvlink_ring,rings\n";
    for (const auto& r : rows) {
      csv << r.machine << ",\"" << join(r.gpus) << "\"," << r.gpus.size() << "," << r.collective
          << "," << r.bytes << "," << r.representative << "," << r.sweep << "," << r.orbit_size
          << "," << std::setprecision(10) << r.blink_s * 1e6 << "," << r.ring_s * 1e6 << ","
          << r.tree_s * 1e6 << "," << r.chosen << "," << r.chosen_s * 1e6 << ","
          << r.blink_algorithm << "," << r.gbps(r.blink_s) << "," << r.gbps(r.ring_s) << ","
          << r.optimal_gbps << "," << r.speedup() << "," << r.overOptimal() << "," << r.nvlink_ring
          << "," << r.rings << "\n";
    }
    if (!csv) throw blink::Error(blinkInvalidInput, "failed writing " + csv_path);

    std::ostringstream md;
    md << "# perf/simulate: Blink's trees against rings on the simulator\n\n"
       << "Broadcast (root: rank 0, the allocation's lowest GPU) and AllReduce of 1 GiB "
          "(element size 4) on every distinct allocation of sizes 3..8; chunking is the "
          "planner's own. GB/s is algbw (bytes / time). speedup = ring time / blink time; "
          "blink = the fastest of Blink's tree candidates, chosen = what choosePlan picks with "
          "the ring and double-binary-tree baselines. "
       << rows.size() << " cases simulated in " << fixed(seconds, 1) << " s (one core"
       << (quick ? ", --quick" : "") << ").\n\n"
       << "Distinct allocations (orbits under the automorphisms that keep NVLink lane counts and "
          "the PCIe switch / CPU socket grouping):\n\n"
       << orbit_md.str() << "\n"
       << "Each allocation is its orbit's lexicographically smallest member; Broadcast is rooted "
          "at its lowest GPU (an automorphism may move that root, so other members of an orbit "
          "are represented up to the choice of root).\n\n"
       << "blink/optimal compares with plan::optimalAlgbwGbps. Broadcast's bound is exact "
          "(the minimum cut from the root, which the packed trees reach). AllReduce's is "
          "treegen::allReduceBoundGbps: the smaller of the minimum cut and the total-traffic "
          "bound (every element is delivered GPU to GPU at least 2(n-1) times, so time >= "
          "2(n-1) bytes / the capacity into the GPUs). No AllReduce that reduces only on GPUs "
          "beats it, but it need not be reachable.\n\n";
    if (quick) md << "**--quick: sizes 3 and 8 only, and a 3-point sweep.**\n\n";

    for (const auto& machine : machines) {
      for (const char* c : collectives) {
        md << "## " << machine << ", " << c << ", 1 GiB\n\n"
           << "| allocation | GPUs | orbit | NVLink ring? | blink GB/s | ring GB/s | speedup | "
              "blink/optimal | chosen |\n|---|---|---|---|---|---|---|---|---|\n";
        for (const auto& r : rows) {
          if (r.machine != machine || r.collective != c || !r.representative) continue;
          md << "| {" << join(r.gpus) << "} | " << r.gpus.size() << " | " << r.orbit_size << " | "
             << (r.nvlink_ring ? "yes" : "no") << " | " << fixed(r.gbps(r.blink_s), 2) << " | "
             << fixed(r.gbps(r.ring_s), 2) << " | " << fixed(r.speedup(), 3) << " | "
             << fixed(r.overOptimal(), 4) << " | " << r.chosen << " |\n";
        }
        md << "\n";
      }
    }

    // Summaries over the orbit representatives (each distinct allocation counted once).
    md << "## Summary at 1 GiB (each distinct allocation once)\n\n"
       << "| machine | collective | allocations | geomean speedup | max speedup | without NVLink "
          "ring: n | geomean | max | min blink/optimal | median blink/optimal | baseline chosen "
          "|\n"
          "|---|---|---|---|---|---|---|---|---|---|---|\n";
    std::vector<std::string> groups = machines;
    groups.push_back("all");
    std::vector<std::string> ring_chosen;
    for (const auto& machine : groups) {
      for (const char* c : collectives) {
        std::vector<double> all, no_ring, ratio;
        double max_all = 0, max_no_ring = 0;
        int chose_ring = 0;
        for (const auto& r : rows) {
          if (!r.representative || r.collective != c) continue;
          if (machine != "all" && r.machine != machine) continue;
          all.push_back(r.speedup());
          max_all = std::max(max_all, r.speedup());
          ratio.push_back(r.overOptimal());
          if (!r.nvlink_ring) {
            no_ring.push_back(r.speedup());
            max_no_ring = std::max(max_no_ring, r.speedup());
          }
          if (r.chosen.rfind("blink", 0) != 0) {
            ++chose_ring;
            if (machine != "all") {
              ring_chosen.push_back(r.machine + " {" + join(r.gpus) + "} " + c + ": " + r.chosen +
                                    " (" + fixed(r.chosen_s * 1e6, 1) + " us vs blink " +
                                    fixed(r.blink_s * 1e6, 1) + " us)");
            }
          }
        }
        md << "| " << machine << " | " << c << " | " << all.size() << " | "
           << fixed(geomean(all), 3) << " | " << fixed(max_all, 3) << " | " << no_ring.size()
           << " | " << (no_ring.empty() ? "-" : fixed(geomean(no_ring), 3)) << " | "
           << (no_ring.empty() ? "-" : fixed(max_no_ring, 3)) << " | "
           << fixed(ratio.empty() ? 0 : *std::min_element(ratio.begin(), ratio.end()), 4) << " | "
           << fixed(median(ratio), 4) << " | " << chose_ring << " |\n";
      }
    }
    md << "\n";
    if (ring_chosen.empty()) {
      md << "The planner chose Blink's trees for every allocation at 1 GiB.\n\n";
    } else {
      md << "Where the planner chose a baseline over Blink's trees at 1 GiB:\n\n";
      for (const auto& s : ring_chosen) md << "- " << s << "\n";
      md << "\n";
    }

    md << "## Size sweep\n\n"
       << "| machine | allocation | collective | bytes | blink us | ring us | tree us | blink GB/s "
          "| ring GB/s | tree GB/s | speedup | chosen |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
    for (const auto& machine : machines) {
      for (const auto& gpus : sweep_allocs) {
        for (const char* c : collectives) {
          for (std::uint64_t b : sweep_sizes) {
            for (const auto& r : rows) {
              if (r.machine != machine || r.gpus != gpus || r.collective != c || r.bytes != b)
                continue;
              md << "| " << machine << " | {" << join(gpus) << "} | " << c << " | " << sizeName(b)
                 << " | " << fixed(r.blink_s * 1e6, 1) << " | " << fixed(r.ring_s * 1e6, 1) << " | "
                 << fixed(r.tree_s * 1e6, 1) << " | " << fixed(r.gbps(r.blink_s), 3) << " | "
                 << fixed(r.gbps(r.ring_s), 3) << " | " << fixed(r.gbps(r.tree_s), 3) << " | "
                 << fixed(r.speedup(), 3) << " | " << r.chosen << " |\n";
            }
          }
        }
      }
    }
    std::ofstream out(md_path);
    if (!(out << md.str())) throw blink::Error(blinkInvalidInput, "cannot write " + md_path);
    std::cout << md.str();
    std::cerr << "simulate_bench: " << rows.size() << " cases in " << fixed(seconds, 1)
              << " s; wrote " << csv_path << " and " << md_path << "\n";
    return 0;
  } catch (const blink::cli::UsageError& e) {
    std::cerr << "simulate_bench: " << e.message << " (see --help)\n";
    return 2;
  } catch (const blink::Error& e) {
    std::cerr << "simulate_bench: " << e.what() << "\n";
    return 1;
  }
}
