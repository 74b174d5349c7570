#include "plan/tree_cache.hpp"

#include <chrono>
#include <list>
#include <map>
#include <mutex>
#include <sstream>
#include <string>

#include "topology/topology_json.hpp"
#include "treegen/budget.hpp"

namespace blink::plan {
namespace {

// Enough for every root of a few topologies; the least recently used goes first.
constexpr std::size_t kMaxEntries = 256;

struct Cache {
  std::mutex mutex;
  std::map<std::string, std::pair<treegen::TreeSet, std::list<std::string>::iterator>> entries;
  std::list<std::string> recency;  // most recent first
  TreeCacheStats stats;
};

Cache& cache() {
  static auto* c = new Cache();  // never destroyed: communicators may plan during exit
  return *c;
}

// The whole topology and every option that changes the trees, as text: exact keys,
// so two topologies never share trees by accident.
std::string keyOf(const topo::Topology& t, int root_gpu, const treegen::PackOptions& o) {
  std::ostringstream key;
  key.precision(17);
  key << "root=" << root_gpu << ";method=" << treegen::toString(o.method) << ";eps=" << o.epsilon
      << ";minimize=" << o.minimize << ";tolerance=" << o.tolerance << ";links=";
  for (auto kind : o.links) key << topo::toString(kind) << ',';
  key << ';' << topo::toJson(t);
  return key.str();
}

// The budget a packing with options `o` draws on: the shared account of the
// planning call, or a fresh one of its own (treegen::budgetFor does the same).
std::int64_t remainingWork(const treegen::PackOptions& o) {
  if (o.budget) return o.budget->limit() - o.budget->spent();
  const treegen::Budget fresh(o.budget_ms > 0.0 ? o.budget_ms : treegen::defaultBudgetMillis());
  return fresh.limit();
}

// A hit must leave everything as a miss would have: the trees, and the work charged
// to the planning call's budget (later packings of the call see the same remainder
// on every rank, whichever of them had the trees cached). So only packings that
// finished within their budget are kept, a hit charges the work the packing cost,
// and a hit whose cost exceeds what is left packs afresh (and is cut short, as on
// a rank without the cache).
template <typename Pack>
treegen::TreeSet lookup(const std::string& key, const treegen::PackOptions& o, Pack&& pack) {
  Cache& c = cache();
  {
    std::lock_guard lock(c.mutex);
    if (auto it = c.entries.find(key); it != c.entries.end()) {
      const treegen::TreeSet& trees = it->second.first;
      if (trees.work <= remainingWork(o)) {
        if (o.budget) o.budget->spend(trees.work);
        c.recency.splice(c.recency.begin(), c.recency, it->second.second);
        ++c.stats.hits;
        return trees;
      }
    }
  }
  // Packed outside the lock: another thread may pack the same key meanwhile, and
  // both get the same (deterministic) trees.
  const auto start = std::chrono::steady_clock::now();
  treegen::TreeSet trees = pack();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::lock_guard lock(c.mutex);
  ++c.stats.misses;
  c.stats.packing_seconds += seconds;
  if (!trees.budget_exhausted && c.entries.count(key) == 0) {
    c.recency.push_front(key);
    c.entries.emplace(key, std::make_pair(trees, c.recency.begin()));
    if (c.entries.size() > kMaxEntries) {
      c.entries.erase(c.recency.back());
      c.recency.pop_back();
    }
  }
  return trees;
}

}  // namespace

treegen::TreeSet broadcastTrees(const topo::Topology& t, int root_gpu,
                                const treegen::PackOptions& o) {
  return lookup(keyOf(t, root_gpu, o), o, [&] { return treegen::packBroadcast(t, root_gpu, o); });
}

treegen::TreeSet allGatherTrees(const topo::Topology& t, const treegen::PackOptions& o) {
  return lookup(keyOf(t, -1, o), o, [&] { return treegen::packAllGather(t, o); });
}

treegen::TreeSet reduceBroadcastTrees(const topo::Topology& t, const treegen::PackOptions& o) {
  // Root -2 stands for the undirected shape (-1: every GPU, >= 0: one root).
  return lookup(keyOf(t, -2, o), o, [&] { return treegen::packReduceBroadcast(t, o); });
}

TreeCacheStats treeCacheStats() {
  std::lock_guard lock(cache().mutex);
  return cache().stats;
}

}  // namespace blink::plan
