// Communicator: how each call runs, decided collectively at its first use and
// cached (see communicator.hpp), and the node algorithms a decision sets up.
#include <algorithm>
#include <chrono>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "common/log.hpp"
#include "common/mpi_wait.hpp"
#include "plan/planner.hpp"
#include "runtime/communicator.hpp"
#include "runtime/communicator_detail.hpp"
#include "runtime/memory_type.hpp"

namespace blink::runtime {
namespace {

using communicator_detail::fnv1a;

// Enough for every size a training loop or benchmark sweep uses; the oldest plan
// goes first (every rank makes the same calls, so every rank evicts the same one).
constexpr std::size_t kMaxCachedPlans = 64;

// Set-up measurements closer than this fraction are ties (between emulated hosts the
// same configuration measured twice differs by up to ~5%).
constexpr double kMeasuredTie = 0.05;

// Set-up timings: `ways` candidates run in turn, kTimedBlocks blocks of kCallsPerBlock
// calls each after kWarmUpCalls each, the order rotating by block. Each way's time is
// the median over its blocks of the slowest rank's seconds per call: one block that a
// scheduler hiccup hit does not decide (as it did when the blocks were summed). Every
// rank gets the same times.
std::vector<double> timeInTurn(std::size_t ways,
                               const std::function<void(std::size_t way, int calls)>& run,
                               MPI_Comm comm, double timeout_seconds, const std::string& what) {
  constexpr int kWarmUpCalls = 20, kTimedBlocks = 8, kCallsPerBlock = 5;
  constexpr auto blocks = static_cast<std::size_t>(kTimedBlocks);
  for (std::size_t way = 0; way < ways; ++way) run(way, kWarmUpCalls);
  std::vector<double> mine(ways * blocks, 0.0), slowest(mine.size(), 0.0);
  for (std::size_t block = 0; block < blocks; ++block) {
    for (std::size_t k = 0; k < ways; ++k) {
      const std::size_t way = (k + block) % ways;
      const auto start = std::chrono::steady_clock::now();
      run(way, kCallsPerBlock);
      mine[way * blocks + block] =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
          kCallsPerBlock;
    }
  }
  allreduceWithin(mine.data(), slowest.data(), static_cast<int>(mine.size()), MPI_DOUBLE, MPI_MAX,
                  comm, timeout_seconds, what);
  std::vector<double> medians(ways, 0.0);
  for (std::size_t way = 0; way < ways; ++way) {
    const auto first = slowest.begin() + static_cast<std::ptrdiff_t>(way * blocks);
    std::sort(first, first + kTimedBlocks);
    medians[way] = (first[kTimedBlocks / 2 - 1] + first[kTimedBlocks / 2]) / 2.0;
  }
  return medians;
}

}  // namespace

Communicator::CachedChoice& Communicator::choiceFor(plan::Collective c, std::uint64_t bytes,
                                                    int element_size, int root_plan,
                                                    bool on_device) {
  const PlanKey key{static_cast<int>(c), bytes, element_size, root_plan, on_device};
  // Every call passes here, the board's sub-microsecond ones too: no allocation, no
  // scan, and for a repeated call not even the map.
  if (small_decisions_stale_) forgetSmallDecisions();
  if (last_choice_ != nullptr && key == last_key_) return *last_choice_;
  if (auto it = cache_.find(key); it != cache_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second.lru_position);
    last_key_ = key;
    last_choice_ = &it->second;
    return it->second;
  }
  checkUsable();
  const auto start = std::chrono::steady_clock::now();
  CachedChoice cp;
  for (;;) {
    std::unique_ptr<Error> failure;
    try {
      const log::QuietInfo quiet(layout_.rank != 0);  // every rank decides the same
      plan::PlannerOptions options;
      options.lower = plan::lowerOptionsFromEnvironment();
      options.lower.element_size = element_size;
      options.flat_trees_across_nodes = false;  // flat trees: planner.hpp says why
      NodeAlgorithms node = node_;
      if (on_device) priceForDeviceBuffers(node, options);
      AlgorithmChoice choice =
          chooseAlgorithm({c, bytes, root_plan}, job_.topology, node, forced_, options);
      cp.algorithm = choice.algorithm;
      cp.why = choice.why;
      cp.predicted_seconds = choice.seconds;
      cp.plan = std::move(choice.plan);
      if (runsPlan(cp.algorithm)) {
        const int me = job_.plan_rank_of[static_cast<std::size_t>(layout_.rank)];
        cp.program = compileProgram(cp.plan, me, [this, on_device](int plan_rank) {
          const int peer = job_.comm_rank_of[static_cast<std::size_t>(plan_rank)];
          const bool local = layout_.node_of_rank[static_cast<std::size_t>(peer)] == layout_.node;
          if (on_device) return PeerRoute{peer, device_transport_.get()};
          return PeerRoute{peer, local ? within_node_ : between_nodes_};
        });
        cp.program.comm_rank = layout_.rank;
      }
    } catch (const Error& e) {
      failure = std::make_unique<Error>(e);
    }
    // One reduction tells every rank whether all decided and whether alike.
    const std::uint64_t hash =
        failure ? 0 : fnv1a(toString(cp.algorithm)) ^ (runsPlan(cp.algorithm) ? cp.plan.hash() : 0);
    std::uint64_t mine[3] = {failure ? 1u : 0u, hash, ~hash}, all[3] = {0, 0, 0};
    allreduceWithin(mine, all, 3, MPI_UINT64_T, MPI_MAX, comm_, timeout_s_,
                    "agreeing on how to run " + plan::toString(c));
    if (failure) throw CollectiveError(failure->status(), failure->what());
    if (all[0] != 0)
      throw CollectiveError(blinkInvalidUsage, "choosing the algorithm failed on another rank");
    if (all[1] != hash || all[2] != ~hash) {
      throw CollectiveError(blinkInvalidUsage,
                            "the ranks chose differently for " + plan::toString(c) + " of " +
                                std::to_string(bytes) +
                                " bytes: every rank must see the same BLINK_* settings and "
                                "topology");
    }
    if (runsPlan(cp.algorithm) && !on_device && node_.leaders && !leaders_ &&
        bytes <= node_.board_capacity && !forced_.forced(c)) {
      // A plan won a call the leaders could take on the model alone: set them up,
      // which measures what their calls take here, and decide again with that
      // (algorithm_choice.hpp). After the agreement, so every rank does it.
      ensureLeaders();
      continue;
    }
    if (runsPlan(cp.algorithm) || ensureNodeAlgorithm(cp.algorithm)) break;
    // The board or the direct path could not be made (on every rank): choose again.
  }
  if (runsPlan(cp.algorithm)) {
    std::unique_ptr<Error> stream_failure;
    try {
      if (on_device) {
        StreamNeeds needs = streamNeeds(cp.program, device_transport_.get());
        device_transport_->ensureStreams(needs.sends, needs.recvs);
      } else {
        for (const auto& transport : transport_objects_) {
          // Plans route only within_node_ and between_nodes_; a transport made for the
          // leaders' rounds alone (sockets) would make its set-up collectives for nothing.
          if (transport.get() != within_node_ && transport.get() != between_nodes_) continue;
          StreamNeeds needs = streamNeeds(cp.program, transport.get());
          transport->ensureStreams(needs.sends, needs.recvs);
        }
      }
    } catch (const Error& e) {
      stream_failure = std::make_unique<Error>(e);
    }
    try {
      agreeAllOk(comm_, stream_failure.get(), "setting up the streams", timeout_s_,
                 blinkInvalidUsage);
    } catch (const CollectiveError& e) {
      if (!on_device) throw;
      // A CUDA error (IPC, an allocation) met by every rank together before any data
      // moved: device buffers then have no path here, as where there is no GPU, and
      // the interposer hands the call to a CUDA-aware MPI or refuses it.
      device_path_ = false;
      device_off_ = std::string("the device data path failed to set up: ") + e.what();
      throw MemoryTypeError(e.status(), device_off_);
    }
  }
  ++plans_built_;
  cp.planning_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  planning_seconds_ += cp.planning_seconds;
  if (first_planning_seconds_ < 0.0) first_planning_seconds_ = cp.planning_seconds;
  if (layout_.rank == 0) {
    BLINK_LOG(Info, "decided " << cp.why << " [" << cp.planning_seconds * 1e3 << " ms to decide]");
    if (runsPlan(cp.algorithm)) {
      for (const auto& note : cp.plan.notes) BLINK_LOG(Info, "plan: " << note);
    }
  }
  lru_.push_front(key);
  cp.lru_position = lru_.begin();
  if (lru_.size() > kMaxCachedPlans) {
    cache_.erase(lru_.back());
    lru_.pop_back();
  }
  CachedChoice& made = cache_.emplace(key, std::move(cp)).first->second;
  last_key_ = key;
  last_choice_ = &made;
  return made;
}

bool Communicator::ensureNodeAlgorithm(Algorithm algorithm) {
  if (algorithm == Algorithm::Board && !one_shot_) {
    try {
      one_shot_ =
          std::make_unique<algorithms::ShmOneShot>(node_comm_, node_.board_capacity, timeout_s_);
    } catch (const Error& e) {
      // Every rank failed together (the board agrees before it returns).
      if (e.status() == blinkTimeout) throw;
      if (layout_.rank == 0) {
        BLINK_LOG(Warn,
                  "the one-shot board for small collectives is unavailable (" << e.what() << ")");
      }
      node_.board_capacity = 0;
      node_.board_off = std::string("it could not be set up: ") + e.what();
      return false;
    }
  }
  if (algorithm == Algorithm::Leaders && !leaders_) return ensureLeaders();
  if (algorithm == Algorithm::Direct && !direct_) {
    algorithms::NodeCollectivesChoice made = algorithms::makeNodeCollectives(
        node_comm_, staging_max_, cross_memory_allowed_, timeout_s_, layout_.rank == 0);
    if (!made.mover) {
      if (layout_.rank == 0) {
        BLINK_LOG(Info, "the direct path for large collectives is off (" << made.why_not << ")");
      }
      node_.direct_off = "it could not be set up: " + made.why_not;
      node_.direct_min = 0;
      return false;
    }
    direct_ = std::move(made.mover);
    if (layout_.rank == 0) BLINK_LOG(Info, "direct path: " << direct_->describe());
  }
  return true;
}

std::unique_ptr<algorithms::NodeLeaders> Communicator::makeNodeLeaders(Transport& between) const {
  return std::make_unique<algorithms::NodeLeaders>(
      one_shot_.get(), between,
      algorithms::NodeLeaders::Layout{layout_.rank, layout_.node_of_rank,
                                      layout_.local_rank_of_rank},
      node_.board_capacity, timeout_s_);
}

bool Communicator::ensureLeaders() {
  // Each node's board fails on its ranks together, the streams on some ranks only:
  // every rank learns of any failure, so all drop the algorithm together.
  auto agreed = [&](const std::unique_ptr<Error>& failure, const char* stage) {
    if (everyRankOk(failure == nullptr, comm_, timeout_s_, stage)) return true;
    node_.leaders = false;
    node_.leaders_off = std::string("it could not be set up: ") +
                        (failure ? failure->what() : "it failed on another rank");
    if (layout_.rank == 0) BLINK_LOG(Warn, "the node leaders' algorithm is unavailable: " << stage);
    leaders_.reset();
    return false;
  };
  std::unique_ptr<Error> failure;
  try {
    if (layout_.local_size > 1 && !one_shot_) {
      one_shot_ =
          std::make_unique<algorithms::ShmOneShot>(node_comm_, node_.board_capacity, timeout_s_);
    }
    leaders_ = makeNodeLeaders(*between_nodes_);
  } catch (const Error& e) {
    if (e.status() == blinkTimeout) throw;
    failure = std::make_unique<Error>(e);
  }
  if (!agreed(failure, "setting up the boards of the node leaders")) return false;
  try {
    const auto keys = leaders_->streamsNeeded();
    between_nodes_->ensureStreams(keys, keys);
  } catch (const Error& e) {
    if (e.status() == blinkTimeout) throw;
    failure = std::make_unique<Error>(e);
  }
  if (!agreed(failure, "setting up the streams between node leaders")) return false;
  leaders_between_ = between_nodes_;
  if (!rounds_alternatives_.empty()) chooseLeadersTransport();
  if (leaders_mpi_) {
    if (PMPI_Comm_split(comm_, layout_.local_rank == 0 ? 0 : MPI_UNDEFINED, layout_.node,
                        &leaders_comm_) != MPI_SUCCESS) {
      throw Error(blinkSystemError, "MPI_Comm_split of the node leaders failed");
    }
    leaders_->setLeadersComm(leaders_comm_);
    leaders_->setWholeComm(comm_);
  }
  chooseLeadersShapes();
  if (leaders_mpi_) {
    const std::string mpi = chooseLeadersMpi();
    leaders_note_ += (leaders_note_.empty() ? "" : "; ") + mpi;
  }
  if (layout_.rank == 0) {
    BLINK_LOG(Info, "node leaders: the board on each node, rounds between "
                        << layout_.num_nodes << " leaders over " << leaders_between_->name()
                        << (leaders_note_.empty() ? "" : " (" + leaders_note_ + ")"));
  }
  return true;
}

void Communicator::chooseLeadersTransport() {
  // The default transport and each alternative that every rank could set up.
  std::vector<std::unique_ptr<algorithms::NodeLeaders>> candidates;
  std::vector<Transport*> carriers = {between_nodes_};
  std::string not_set_up;
  for (Transport* alternative : rounds_alternatives_) {
    std::unique_ptr<algorithms::NodeLeaders> other;
    std::unique_ptr<Error> failure;
    try {
      other = makeNodeLeaders(*alternative);
      const auto keys = other->streamsNeeded();
      alternative->ensureStreams(keys, keys);
    } catch (const Error& e) {
      if (e.status() == blinkTimeout) throw;
      failure = std::make_unique<Error>(e);
    }
    if (!everyRankOk(failure == nullptr, comm_, timeout_s_,
                     "setting up the leaders' rounds over " + alternative->name())) {
      not_set_up += (not_set_up.empty() ? "" : ", ") + alternative->name();
      if (layout_.rank == 0 && failure) {
        BLINK_LOG(Info, "node leaders: no rounds over " << alternative->name() << ": "
                                                        << failure->what());
      }
      continue;
    }
    candidates.push_back(std::move(other));
    carriers.push_back(alternative);
  }
  if (!not_set_up.empty()) leaders_note_ = not_set_up + " could not be set up for them";
  if (candidates.empty()) {
    dropRoundsAlternatives();
    return;
  }
  // The cost of a round: 8-byte AllReduces through the leaders over each transport
  // in turn.
  std::byte in[8] = {}, out[8] = {};
  const Combine combine = [](std::byte* inout, const std::byte* incoming, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) inout[i] |= incoming[i];
  };
  auto leadersOf = [&](std::size_t way) {
    return way == 0 ? leaders_.get() : candidates[way - 1].get();
  };
  const std::vector<double> seconds = timeInTurn(
      carriers.size(),
      [&](std::size_t way, int calls) {
        for (int i = 0; i < calls; ++i) {
          leadersOf(way)->allReduce(in, out, sizeof in, combine);
          settleAfterLeaders(*leadersOf(way), carriers[way]);
        }
      },
      comm_, timeout_s_, "measuring the leaders' rounds");
  // The fastest (each call settled as runLeaders settles it), the default (UCX, whose
  // progress thread costs a small call's wake-ups) counted kMeasuredTie slower: an
  // alternative within measuring noise of it takes the rounds.
  std::size_t best = 0;
  double best_seconds = seconds[0] * (1.0 + kMeasuredTie);
  for (std::size_t way = 1; way < carriers.size(); ++way) {
    if (seconds[way] < best_seconds) {
      best = way;
      best_seconds = seconds[way];
    }
  }
  std::ostringstream note;
  note.precision(3);
  note << (leaders_note_.empty() ? "" : leaders_note_ + "; ")
       << "measured at set-up, an 8-byte AllReduce through the leaders:";
  for (std::size_t way = 0; way < carriers.size(); ++way) {
    note << (way == 0 ? " " : ", ") << carriers[way]->name() << " " << seconds[way] * 1e6 << " us";
  }
  leaders_note_ = note.str();
  if (best != 0) {
    leaders_ = std::move(candidates[best - 1]);
    leaders_between_ = carriers[best];
  }
  candidates.clear();  // their leaders use the transports dropped next
  dropRoundsAlternatives();
}

void Communicator::dropRoundsAlternatives() {
  // The ones not taken would keep their connections (sockets: descriptors) for nothing.
  for (Transport* alternative : rounds_alternatives_) {
    if (alternative == leaders_between_ || alternative == within_node_ ||
        alternative == between_nodes_) {
      continue;
    }
    std::erase_if(transport_objects_, [&](const std::unique_ptr<Transport>& owned) {
      return owned.get() == alternative;
    });
  }
  rounds_alternatives_.clear();
}

void Communicator::chooseLeadersShapes() {
  using Shape = algorithms::NodeLeaders::Shape;
  if (layout_.num_nodes < 3) return;  // two leaders: one exchange whatever the shape
  const auto shapes = algorithms::NodeLeaders::shapesFor(plan::Collective::AllReduce);
  std::byte in[8] = {}, out[8] = {};
  const Combine combine = [](std::byte* inout, const std::byte* incoming, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) inout[i] |= incoming[i];
  };
  std::vector<double> slowest = timeInTurn(
      shapes.size(),
      [&](std::size_t way, int calls) {
        leaders_->setShape(plan::Collective::AllReduce, shapes[way]);
        for (int i = 0; i < calls; ++i) {
          leaders_->allReduce(in, out, sizeof in, combine);
          settleAfterLeaders(*leaders_, leaders_between_);
        }
      },
      comm_, timeout_s_, "measuring the leaders' shapes");
  std::ostringstream note;
  note.precision(3);
  note << (leaders_note_.empty() ? "" : "; ") << "by shape:";
  for (std::size_t k = 0; k < shapes.size(); ++k) {
    note << (k == 0 ? " " : ", ") << algorithms::NodeLeaders::toString(shapes[k]) << " "
         << slowest[k] * 1e6 << " us";
  }
  algorithms::NodeLeaders::ShapeCosts costs;
  if (!algorithms::NodeLeaders::fitCosts(plan::Collective::AllReduce, layout_.num_nodes, shapes,
                                         slowest, costs)) {
    leaders_->setShape(plan::Collective::AllReduce, Shape::OneRound);
    leaders_note_ += note.str() + ", no fit: one round for all";
    return;
  }
  note << "; fitted: a round " << costs.round_seconds * 1e6 << " us, a message "
       << costs.message_seconds * 1e6 << " us; shapes:";
  for (auto collective :
       {plan::Collective::Broadcast, plan::Collective::Reduce, plan::Collective::AllGather,
        plan::Collective::ReduceScatter, plan::Collective::AllReduce}) {
    const Shape shape = algorithms::NodeLeaders::cheapest(collective, layout_.num_nodes, costs);
    leaders_->setShape(collective, shape);
    note << " " << plan::toString(collective) << " " << algorithms::NodeLeaders::toString(shape)
         << (collective == plan::Collective::AllReduce ? "" : ",");
  }
  leaders_note_ += note.str();
}

void Communicator::measureLeadersAgain() {
  const std::string at_set_up = leaders_note_;
  leaders_note_.clear();
  chooseLeadersShapes();
  if (leaders_mpi_) leaders_note_ += (leaders_note_.empty() ? "" : "; ") + chooseLeadersMpi();
  if (layout_.rank == 0) {
    BLINK_LOG(Info, "node leaders: measured again after "
                        << kLeadersSteadyCalls << " calls through them: " << leaders_note_);
  }
  leaders_note_ = at_set_up + "; after " + std::to_string(kLeadersSteadyCalls) +
                  " calls through them: " + leaders_note_;
  small_decisions_stale_ = true;  // not here: the caller may still hold its decision
}

void Communicator::forgetSmallDecisions() {
  small_decisions_stale_ = false;
  last_choice_ = nullptr;
  for (auto it = cache_.begin(); it != cache_.end();) {
    const bool small = std::get<1>(it->first) <= node_.board_capacity && !std::get<4>(it->first);
    if (!small) {
      ++it;
      continue;
    }
    lru_.erase(it->second.lru_position);
    it = cache_.erase(it);
  }
}

std::string Communicator::chooseLeadersMpi() {
  using plan::Collective;
  constexpr std::size_t kBlock = 8;
  const auto ranks = static_cast<std::size_t>(layout_.size);
  std::vector<std::byte> in(ranks * kBlock), out(ranks * kBlock);
  const Combine combine = [](std::byte* inout, const std::byte* incoming, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) inout[i] |= incoming[i];
  };
  const algorithms::NodeLeaders::MpiReduction bor{MPI_BYTE, MPI_BOR};
  // Rooted calls alternate their root between rank 0 and a rank of another node, so
  // that each call waits for the one before it: back to back with one root, the root
  // returns once its sends are posted and the time measured is how fast it posts, not
  // what a call takes (a training loop's broadcast is followed by work that needs it).
  int other_root = 0;
  for (int r = layout_.size - 1; r > 0 && other_root == 0; --r) {
    if (layout_.node_of_rank[static_cast<std::size_t>(r)] != layout_.node_of_rank[0]) {
      other_root = r;
    }
  }
  std::size_t rooted_calls = 0;
  auto nextRoot = [&] { return rooted_calls++ % 2 == 0 ? 0 : other_root; };
  auto call = [&](Collective collective) {
    switch (collective) {
      case Collective::AllReduce:
        return leaders_->allReduce(in.data(), out.data(), kBlock, combine, bor);
      case Collective::Broadcast:
        return leaders_->broadcast(in.data(), out.data(), kBlock, nextRoot());
      case Collective::Reduce:
        return leaders_->reduce(in.data(), out.data(), kBlock, combine, nextRoot(), bor);
      case Collective::AllGather:
        return leaders_->allGather(in.data(), out.data(), kBlock);
      case Collective::ReduceScatter:
        return leaders_->reduceScatter(in.data(), out.data(), kBlock, combine, bor);
    }
  };
  const bool whole_fits = ranks * kBlock <= node_.board_capacity;
  std::vector<Collective> collectives = {Collective::Broadcast, Collective::Reduce,
                                         Collective::AllReduce};
  if (whole_fits) {
    collectives.insert(collectives.begin() + 2, {Collective::AllGather, Collective::ReduceScatter});
  }
  // Per collective in turn: Blink's shape (way 0), MPI's among the leaders (1) and, where
  // a node has several ranks, MPI's own on every rank (2; with one rank per node it is
  // way 1).
  const bool several_per_node = layout_.num_nodes < layout_.size;
  const std::size_t ways = several_per_node ? 3 : 2;
  std::vector<double> slowest;
  for (const Collective collective : collectives) {
    std::vector<double> times = timeInTurn(
        ways,
        [&](std::size_t way, int calls) {
          leaders_->useMpi(collective, way == 1);
          leaders_->useMpiOnAll(collective, way == 2);
          for (int i = 0; i < calls; ++i) {
            call(collective);
            settleAfterLeaders(*leaders_, leaders_between_);
          }
        },
        comm_, timeout_s_, "measuring MPI's collectives among the leaders");
    times.resize(3, std::numeric_limits<double>::infinity());
    slowest.insert(slowest.end(), times.begin(), times.end());
  }
  std::ostringstream note;
  note.precision(3);
  note << "8 bytes (a block), Blink's shape / MPI's own among the leaders"
       << (several_per_node ? " / MPI's own on every rank" : "") << ":";
  std::string among_leaders, on_all;
  for (std::size_t c = 0; c < collectives.size(); ++c) {
    const double own = slowest[3 * c] * 1e6;
    const double mpi = slowest[3 * c + 1] * 1e6;
    const double all = slowest[3 * c + 2] * 1e6;
    // MPI's own where not measurably slower: a call the MPI way is the MPI library's
    // call with the least of Blink around it, and 40 calls do not resolve a few percent.
    // On every rank before among the leaders: the least of Blink around it.
    const bool use_all = all < std::min(own, mpi) * (1.0 + kMeasuredTie);
    const bool use_mpi = !use_all && mpi < own * (1.0 + kMeasuredTie);
    leaders_->useMpi(collectives[c], use_mpi);
    leaders_->useMpiOnAll(collectives[c], use_all);
    // What a call of this size takes the way now chosen: the leaders' price from
    // here on (algorithm_choice.hpp). Every rank has the same slowest times.
    const bool whole =
        collectives[c] == Collective::AllGather || collectives[c] == Collective::ReduceScatter;
    node_.leaders_measured[static_cast<std::size_t>(collectives[c])] = {
        (use_all   ? all
         : use_mpi ? mpi
                   : own) *
            1e-6,
        whole ? ranks * kBlock : kBlock};
    note << (c == 0 ? " " : ", ") << plan::toString(collectives[c]) << " " << own << " / " << mpi;
    if (several_per_node) note << " / " << all;
    note << " us";
    std::string& taken = use_all ? on_all : among_leaders;
    if (use_all || use_mpi) taken += (taken.empty() ? "" : ", ") + plan::toString(collectives[c]);
  }
  note << "; MPI's own among the leaders takes: "
       << (among_leaders.empty() ? "none" : among_leaders);
  if (several_per_node) note << "; on every rank: " << (on_all.empty() ? "none" : on_all);
  return note.str();
}

}  // namespace blink::runtime
