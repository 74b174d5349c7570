// The oracles the tree generation tests check against, sharing no code with it: a
// validator that replays every tree over the real links of the topology (spanning,
// parents first, routes made of links of allowed kinds, no link over capacity, rates
// adding up), a brute force over every vertex subset of small graphs for the
// broadcast and allgather bounds, and the pack-validate-compare checks built on them.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/error.hpp"
#include "topology/topology.hpp"
#include "topology/zoo.hpp"
#include "treegen/tree_set.hpp"
#include "treegen/treegen.hpp"

namespace treegen_oracle {

using blink::topo::Device;
using blink::topo::DeviceKind;
using blink::topo::Link;
using blink::topo::LinkKind;
using blink::topo::LinkTable;
using blink::topo::Topology;
using blink::topo::Vertex;
using blink::treegen::Method;
using blink::treegen::PackOptions;
using blink::treegen::TreeSet;

using Kinds = std::set<LinkKind>;

inline const LinkTable kTable = LinkTable::builtin();

// "all", or the kinds separated by spaces (for traces).
inline std::string kindsName(const Kinds& links) {
  if (links.empty()) return "all";
  std::string s;
  for (auto k : links) s += std::string(toString(k)) + " ";
  return s;
}

inline bool nearlyEqual(double a, double b) {
  return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b)) + 1e-12;
}

inline bool allowed(LinkKind kind, const Kinds& links) {
  return links.empty() || links.contains(kind);
}

// Summed capacity of the links u -> v of allowed kinds.
inline double capacityBetween(const Topology& t, Vertex u, Vertex v, const Kinds& links) {
  double c = 0.0;
  for (auto e : t.linksBetween(u, v)) {
    if (allowed(t.link(e).kind, links)) c += t.link(e).capacity();
  }
  return c;
}

inline bool reportsUnsplitSwitch(const TreeSet& set) {
  for (const auto& n : set.notes) {
    if (n.find("could not be split") != std::string::npos) return true;
  }
  return false;
}

inline std::string notesOf(const TreeSet& set) {
  std::string s;
  for (const auto& n : set.notes) s += "[" + n + "] ";
  return s;
}

// Devices and links, enough to rebuild the topology from a failure message.
inline std::string describe(const Topology& t) {
  std::ostringstream out;
  out << "topology '" << t.name() << "': ";
  for (Vertex v = 0; v < t.numDevices(); ++v) {
    out << t.device(v).id << "(" << toString(t.device(v).kind) << ") ";
  }
  out << "| links:";
  for (auto e : t.links()) {
    const Link& l = t.link(e);
    out << " " << t.device(t.source(e)).id << "->" << t.device(t.target(e)).id << " "
        << toString(l.kind) << " " << l.gbps << "x" << l.multiplicity << ";";
  }
  return out.str();
}

// "" when `set` is a valid packing on `t` under `links`, else the first problem.
inline std::string whyInvalid(const Topology& t, const TreeSet& set, const Kinds& links,
                              bool broadcast) {
  std::ostringstream why;
  const auto gpus = t.gpus();
  std::map<std::pair<Vertex, Vertex>, double> load;
  std::map<int, double> rooted;  // gpu_index -> summed weight of its trees
  double total = 0.0;
  for (std::size_t k = 0; k < set.trees.size(); ++k) {
    const auto& tree = set.trees[k];
    std::string at = "tree " + std::to_string(k) + " (root GPU " + std::to_string(tree.root_gpu) +
                     ", " + std::to_string(tree.weight_gbps) + " GB/s:";
    for (const auto& e : tree.edges) at += " " + t.device(e.from).id + "->" + t.device(e.to).id;
    at += "): ";
    if (!(tree.weight_gbps > 0.0) || !std::isfinite(tree.weight_gbps)) {
      return at + "weight " + std::to_string(tree.weight_gbps);
    }
    if (broadcast && tree.root_gpu != set.root_gpu) {
      return at + "root GPU " + std::to_string(tree.root_gpu) + ", set root " +
             std::to_string(set.root_gpu);
    }
    auto root = t.findGpu(tree.root_gpu);
    if (!root) return at + "root GPU " + std::to_string(tree.root_gpu) + " is not in the topology";
    std::set<Vertex> entered{*root};
    for (std::size_t i = 0; i < tree.edges.size(); ++i) {
      const auto& e = tree.edges[i];
      const std::string edge = at + "edge " + std::to_string(i) + " (" + t.device(e.from).id +
                               "->" + t.device(e.to).id + "): ";
      if (e.from >= t.numDevices() || e.to >= t.numDevices()) return edge + "vertex out of range";
      if (!entered.contains(e.from)) return edge + "starts where the tree has not reached";
      if (entered.contains(e.to)) return edge + "enters a vertex a second time";
      entered.insert(e.to);
      if (e.route.size() < 2 || e.route.front() != e.from || e.route.back() != e.to) {
        return edge + "route does not run from `from` to `to`";
      }
      for (std::size_t j = 0; j + 1 < e.route.size(); ++j) {
        Vertex u = e.route[j], v = e.route[j + 1];
        if (u >= t.numDevices() || v >= t.numDevices()) return edge + "route vertex out of range";
        if (capacityBetween(t, u, v, links) <= 0.0) {
          return edge + "route step " + t.device(u).id + "->" + t.device(v).id +
                 " is no link of an allowed kind";
        }
        load[{u, v}] += tree.weight_gbps;
      }
    }
    for (Vertex g : gpus) {
      if (!entered.contains(g)) return at + "does not reach " + t.device(g).id;
    }
    rooted[tree.root_gpu] += tree.weight_gbps;
    total += tree.weight_gbps;
  }
  for (const auto& [uv, used] : load) {
    double cap = capacityBetween(t, uv.first, uv.second, links);
    if (used > cap * (1.0 + 1e-9)) {
      why << "link " << t.device(uv.first).id << "->" << t.device(uv.second).id << " carries "
          << used << " GB/s over its capacity " << cap;
      return why.str();
    }
  }
  if (broadcast) {
    if (!nearlyEqual(set.rate_gbps, total)) {
      why << "rate " << set.rate_gbps << " but the trees carry " << total;
      return why.str();
    }
  } else if (set.rate_gbps > 0.0) {
    for (Vertex g : gpus) {
      int index = t.device(g).gpu_index;
      if (rooted[index] < set.rate_gbps * (1.0 - 1e-9)) {
        why << "GPU " << index << " roots " << rooted[index] << " GB/s, rate " << set.rate_gbps;
        return why.str();
      }
    }
  }
  if (set.rate_gbps < 0.0 || set.rate_gbps > set.bound_gbps * (1.0 + 1e-9) + 1e-12) {
    why << "rate " << set.rate_gbps << " outside [0, bound " << set.bound_gbps << "]";
    return why.str();
  }
  return "";
}

// ---- the brute-force oracle ---------------------------------------------------

struct SmallGraph {
  int n = 0;
  std::vector<bool> gpu;
  std::vector<std::vector<double>> cap;  // cap[u][v], allowed kinds only
};

inline SmallGraph smallGraph(const Topology& t, const Kinds& links) {
  SmallGraph s;
  s.n = static_cast<int>(t.numDevices());
  EXPECT_LE(s.n, 14) << "the brute force is for small graphs";
  s.gpu.resize(static_cast<std::size_t>(s.n));
  s.cap.assign(static_cast<std::size_t>(s.n), std::vector<double>(static_cast<std::size_t>(s.n)));
  for (int v = 0; v < s.n; ++v) s.gpu[v] = t.device(static_cast<Vertex>(v)).kind == DeviceKind::Gpu;
  for (auto e : t.links()) {
    if (allowed(t.link(e).kind, links)) s.cap[t.source(e)][t.target(e)] += t.link(e).capacity();
  }
  return s;
}

// min over X (a GPU in it, the root not) of the capacity entering X.
inline double oracleBroadcastBound(const Topology& t, int root_gpu, const Kinds& links) {
  SmallGraph s = smallGraph(t, links);
  const int r = static_cast<int>(*t.findGpu(root_gpu));
  double best = std::numeric_limits<double>::infinity();
  for (unsigned mask = 1; mask < (1u << s.n); ++mask) {
    if (mask & (1u << r)) continue;
    bool has_gpu = false;
    for (int v = 0; v < s.n; ++v) has_gpu |= (mask >> v & 1u) && s.gpu[v];
    if (!has_gpu) continue;
    double in = 0.0;
    for (int u = 0; u < s.n; ++u) {
      if (mask >> u & 1u) continue;
      for (int v = 0; v < s.n; ++v) {
        if (mask >> v & 1u) in += s.cap[u][v];
      }
    }
    best = std::min(best, in);
  }
  return std::isinf(best) ? 0.0 : best;
}

// min over S (some GPUs in it, not all) of c_out(S) / |S ∩ GPUs|.
inline double oracleAllGatherBound(const Topology& t, const Kinds& links) {
  SmallGraph s = smallGraph(t, links);
  int gpus = 0;
  for (int v = 0; v < s.n; ++v) gpus += s.gpu[v];
  double best = std::numeric_limits<double>::infinity();
  for (unsigned mask = 1; mask < (1u << s.n); ++mask) {
    int members = 0;
    for (int v = 0; v < s.n; ++v) members += (mask >> v & 1u) && s.gpu[v];
    if (members == 0 || members == gpus) continue;
    double out = 0.0;
    for (int u = 0; u < s.n; ++u) {
      if (!(mask >> u & 1u)) continue;
      for (int v = 0; v < s.n; ++v) {
        if (!(mask >> v & 1u)) out += s.cap[u][v];
      }
    }
    best = std::min(best, out / members);
  }
  return std::isinf(best) ? 0.0 : best;
}

inline PackOptions exact(Kinds links = {}) {
  PackOptions o;
  o.method = Method::Exact;
  o.links = std::move(links);
  return o;
}

inline PackOptions mwu(double epsilon, Kinds links = {}) {
  PackOptions o;
  o.method = Method::Mwu;
  o.epsilon = epsilon;
  o.links = std::move(links);
  return o;
}

// Packs, validates and checks the rate against the bound. `at_least` is the
// fraction of the bound the rate must reach (1: equal, within 1e-9).
inline TreeSet checkBroadcast(const Topology& t, int root, const PackOptions& o, double at_least) {
  TreeSet set;
  EXPECT_NO_THROW(set = blink::treegen::packBroadcast(t, root, o)) << "root " << root;
  EXPECT_EQ(whyInvalid(t, set, o.links, true), "") << set.method << " broadcast from GPU " << root;
  double bound = blink::treegen::broadcastBoundGbps(t, root, o.links);
  EXPECT_TRUE(nearlyEqual(set.bound_gbps, bound)) << set.bound_gbps << " vs " << bound;
  if (at_least >= 1.0) {
    EXPECT_TRUE(nearlyEqual(set.rate_gbps, set.bound_gbps))
        << "broadcast from GPU " << root << ": rate " << set.rate_gbps << " of " << set.bound_gbps
        << " " << notesOf(set);
  } else {
    EXPECT_GE(set.rate_gbps, at_least * set.bound_gbps)
        << "broadcast from GPU " << root << " " << notesOf(set);
  }
  return set;
}

inline TreeSet checkAllGather(const Topology& t, const PackOptions& o, double at_least) {
  TreeSet set;
  EXPECT_NO_THROW(set = blink::treegen::packAllGather(t, o));
  EXPECT_EQ(whyInvalid(t, set, o.links, false), "") << set.method << " allgather";
  double bound = blink::treegen::allGatherBoundGbps(t, o.links);
  EXPECT_TRUE(nearlyEqual(set.bound_gbps, bound)) << set.bound_gbps << " vs " << bound;
  if (at_least >= 1.0) {
    EXPECT_TRUE(nearlyEqual(set.rate_gbps, set.bound_gbps))
        << "allgather: rate " << set.rate_gbps << " of " << set.bound_gbps << " " << notesOf(set);
  } else {
    EXPECT_GE(set.rate_gbps, at_least * set.bound_gbps) << "allgather " << notesOf(set);
  }
  return set;
}

}  // namespace treegen_oracle
