#include "treegen/minimize.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <sstream>

#include "common/error.hpp"

namespace blink::treegen {
namespace {

using Vector = std::vector<double>;

double dot(const Vector& a, const Vector& b) {
  double s = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// An incremental QR factorisation of the vectors of the kept trees, so that a new
// vector's coefficients over them come from one triangular solve.
class Basis {
 public:
  explicit Basis(std::size_t dim) : dim_(dim) {}

  std::size_t size() const { return members_.size(); }
  const std::vector<int>& members() const { return members_; }

  // Coefficients alpha with v = sum alpha_k vector(members_[k]) when v lies in the
  // span (relative residual below 1e-9); nullopt when it does not.
  std::optional<Vector> express(const Vector& v) const {
    Vector coeff(q_.size());
    Vector residual = v;
    for (std::size_t k = 0; k < q_.size(); ++k) {
      coeff[k] = dot(q_[k], v);
      for (std::size_t i = 0; i < dim_; ++i) residual[i] -= coeff[k] * q_[k][i];
    }
    if (std::sqrt(dot(residual, residual)) > 1e-9 * std::max(1.0, std::sqrt(dot(v, v)))) {
      return std::nullopt;
    }
    // Back-substitute R alpha = Q^T v.
    Vector alpha(q_.size());
    for (std::size_t k = q_.size(); k-- > 0;) {
      double s = coeff[k];
      for (std::size_t j = k + 1; j < q_.size(); ++j) s -= r_[k][j] * alpha[j];
      alpha[k] = s / r_[k][k];
    }
    return alpha;
  }

  void add(int member, const Vector& v) {
    Vector w = v;
    Vector column(q_.size() + 1, 0.0);
    for (std::size_t k = 0; k < q_.size(); ++k) {
      column[k] = dot(q_[k], w);
      for (std::size_t i = 0; i < dim_; ++i) w[i] -= column[k] * q_[k][i];
    }
    double norm = std::sqrt(dot(w, w));
    column.back() = norm;
    for (auto& x : w) x /= norm;
    for (std::size_t k = 0; k < r_.size(); ++k) r_[k].push_back(column[k]);
    r_.push_back(Vector(q_.size() + 1, 0.0));
    r_.back().back() = norm;
    q_.push_back(std::move(w));
    members_.push_back(member);
  }

 private:
  std::size_t dim_;
  std::vector<Vector> q_;  // orthonormal columns
  std::vector<Vector> r_;  // upper triangular, r_[row][col]
  std::vector<int> members_;
};

}  // namespace

void minimizeTrees(TreeSet& set, double tolerance, Budget* budget) {
  if (!(tolerance >= 0.0 && tolerance < 1.0)) {
    throw Error(blinkInvalidArgument,
                "minimize tolerance must be in [0, 1), got " + std::to_string(tolerance));
  }
  const std::size_t before = set.trees.size();
  if (before <= 1) return;

  // Rows: one per directed device pair a route uses, one per root. Undirected
  // (reduce+broadcast) trees load both directions of every hop alike and may
  // root anywhere: one row per unordered pair, one row for the rate.
  auto hop = [&](topo::Vertex a, topo::Vertex b) -> std::pair<topo::Vertex, topo::Vertex> {
    if (set.undirected && b < a) return {b, a};
    return {a, b};
  };
  auto rootKey = [&](const Tree& tree) { return set.undirected ? -1 : tree.root_gpu; };
  std::map<std::pair<topo::Vertex, topo::Vertex>, std::size_t> row_of_hop;
  std::map<int, std::size_t> row_of_root;
  for (const auto& tree : set.trees) {
    for (const auto& e : tree.edges) {
      for (std::size_t k = 0; k + 1 < e.route.size(); ++k) {
        row_of_hop.emplace(hop(e.route[k], e.route[k + 1]), row_of_hop.size());
      }
    }
  }
  for (const auto& tree : set.trees) {
    row_of_root.emplace(rootKey(tree), row_of_hop.size() + row_of_root.size());
  }
  const std::size_t dim = row_of_hop.size() + row_of_root.size();
  std::vector<Vector> vectors;
  for (const auto& tree : set.trees) {
    Vector v(dim, 0.0);
    for (const auto& e : tree.edges) {
      for (std::size_t k = 0; k + 1 < e.route.size(); ++k) {
        v[row_of_hop.at(hop(e.route[k], e.route[k + 1]))] += 1.0;
      }
    }
    v[row_of_root.at(rootKey(tree))] = 1.0;
    vectors.push_back(std::move(v));
  }

  // 1. Loss-free: heaviest trees first, so the basis holds the trees that matter.
  Vector weight(before);
  for (std::size_t i = 0; i < before; ++i) weight[i] = set.trees[i].weight_gbps;
  std::vector<int> order(before);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return weight[a] > weight[b]; });
  const double scale = *std::max_element(weight.begin(), weight.end());
  auto rebuild = [&](const std::vector<int>& keep) {
    Basis b(dim);
    for (int m : keep) {
      if (weight[m] > 0 && !b.express(vectors[m])) b.add(m, vectors[m]);
    }
    return b;
  };
  Basis basis(dim);
  std::vector<int> pending(order.begin(), order.end());
  bool cut_short = false;
  for (std::size_t next = 0; next < pending.size() && !cut_short; ++next) {
    const int j = pending[next];
    while (weight[j] > 0) {
      if (budget != nullptr &&
          !budget->spend(static_cast<std::int64_t>(dim * (basis.size() + 1)))) {
        cut_short = true;
        break;
      }
      auto alpha = basis.express(vectors[j]);
      if (!alpha) {
        basis.add(j, vectors[j]);
        break;
      }
      // v_j = sum alpha_k v_k: move t of weight off j and alpha_k t onto each k.
      double t = weight[j];
      int blocker = -1;
      for (std::size_t k = 0; k < alpha->size(); ++k) {
        const int m = basis.members()[k];
        if ((*alpha)[k] < 0 && weight[m] / -(*alpha)[k] < t) {
          t = weight[m] / -(*alpha)[k];
          blocker = m;
        }
      }
      weight[j] -= t;
      for (std::size_t k = 0; k < alpha->size(); ++k) {
        weight[basis.members()[k]] += (*alpha)[k] * t;
      }
      if (blocker < 0) {
        weight[j] = 0.0;
        break;
      }
      weight[blocker] = 0.0;
      std::vector<int> keep;
      for (int m : basis.members()) {
        if (m != blocker) keep.push_back(m);
      }
      if (budget != nullptr) {
        budget->spend(static_cast<std::int64_t>(dim * keep.size() * keep.size()));
      }
      basis = rebuild(keep);
    }
    for (auto& w : weight) {
      if (w < 1e-12 * scale) w = 0.0;
    }
  }

  // 2. Lossy within tolerance: drop the lightest trees while every root keeps at
  // least (1 - tolerance) of the rate.
  std::map<int, double> root_rate;
  for (std::size_t i = 0; i < before; ++i) root_rate[rootKey(set.trees[i])] += weight[i];
  double rate = std::numeric_limits<double>::infinity();
  for (auto [root, r] : root_rate) rate = std::min(rate, r);
  std::map<int, double> allowance;
  for (auto [root, r] : root_rate) allowance[root] = r - (1.0 - tolerance) * rate;
  std::vector<int> light(before);
  std::iota(light.begin(), light.end(), 0);
  std::stable_sort(light.begin(), light.end(), [&](int a, int b) { return weight[a] < weight[b]; });
  for (int i : light) {
    if (weight[i] <= 0) continue;
    double& left = allowance[rootKey(set.trees[i])];
    if (weight[i] > left) continue;
    left -= weight[i];
    weight[i] = 0.0;
  }

  std::vector<Tree> kept;
  std::map<int, double> final_rate;
  for (std::size_t i = 0; i < before; ++i) {
    if (weight[i] <= 0) continue;
    set.trees[i].weight_gbps = weight[i];
    final_rate[rootKey(set.trees[i])] += weight[i];
    kept.push_back(std::move(set.trees[i]));
  }
  set.trees = std::move(kept);
  double new_rate = std::numeric_limits<double>::infinity();
  for (auto [root, r] : final_rate) new_rate = std::min(new_rate, r);
  if (set.root_gpu >= 0) {
    new_rate = 0.0;
    for (auto [root, r] : final_rate) new_rate += r;
  }
  std::ostringstream note;
  note << "minimize: " << before << " -> " << set.trees.size() << " trees, rate " << set.rate_gbps
       << " -> " << new_rate << " GB/s (tolerance " << tolerance << ")";
  if (cut_short) note << "; the loss-free pass was cut short by the planning budget";
  set.rate_gbps = new_rate;
  set.notes.push_back(note.str());
  set.method += "+minimize";
}

}  // namespace blink::treegen
