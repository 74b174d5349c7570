#include "runtime/communicator.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>

#include "common/env.hpp"
#include "common/error.hpp"
#include "common/log.hpp"
#include "common/mpi_wait.hpp"
#include "plan/planner.hpp"
#include "runtime/memory_type.hpp"
#include "runtime/nic_assignment.hpp"
#include "runtime/node_identity.hpp"
#include "runtime/process_device.hpp"
#include "runtime/reduce_cpu.hpp"
#include "topology/cuda_probe.hpp"
#include "transport/cuda/device_transport.hpp"

namespace blink::runtime {
namespace {

// Enough for every size a training loop or benchmark sweep uses; the oldest plan
// goes first (every rank makes the same calls, so every rank evicts the same one).
constexpr std::size_t kMaxCachedPlans = 64;

void checkMpi(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw Error(blinkSystemError, std::string(what) + " failed");
}

// Collective: if any rank failed, every rank throws (the failing ones their own
// error, the others a pointer to it), so no rank walks on into a collective alone.
void agree(MPI_Comm comm, const Error* failure, const std::string& stage, double timeout_s) {
  int ok = failure == nullptr ? 1 : 0, all_ok = 0;
  allreduceWithin(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm, timeout_s, stage);
  if (failure != nullptr) throw CollectiveError(failure->status(), failure->what());
  if (all_ok == 0) {
    throw CollectiveError(blinkInvalidUsage,
                          stage + " failed on another rank (see its error message)");
  }
}

std::uint64_t checkedBytes(std::size_t count, std::size_t element, std::size_t factor = 1) {
  std::uint64_t bytes = 0;  // no division: every call passes here
  if (__builtin_mul_overflow(static_cast<std::uint64_t>(count), element, &bytes) ||
      __builtin_mul_overflow(bytes, factor, &bytes)) {
    throw Error(blinkInvalidArgument, "count is too large");
  }
  return bytes;
}

void needBuffer(const void* p, std::uint64_t bytes, const char* which) {
  if (p == nullptr && bytes > 0) {
    throw Error(blinkInvalidArgument, std::string(which) + " is NULL with a count > 0");
  }
}

// Every caller has run checkReduction(type, op) on this call.
Combine combineFor(blinkDataType_t type, blinkRedOp_t op) {
  const blinkRedOp_t combine_op = op == blinkAvg ? blinkSum : op;  // the caller divides
  const std::size_t es = elementSize(type);
  return [type, combine_op, es](std::byte* inout, const std::byte* incoming, std::size_t n) {
    reduceIntoChecked(inout, incoming, n / es, type, combine_op);
  };
}

const std::byte* asBytes(const void* p) {
  return static_cast<const std::byte*>(p);
}
std::byte* asBytes(void* p) {
  return static_cast<std::byte*>(p);
}

// The same on every rank for the same text (unlike std::hash, by definition).
std::uint64_t fnv1a(std::string_view text) {
  std::uint64_t h = 1469598103934665603ull;
  for (char c : text) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}

}  // namespace

Communicator::Communicator(MPI_Comm comm) {
  int is_inter = 0;
  checkMpi(PMPI_Comm_test_inter(comm, &is_inter), "MPI_Comm_test_inter");
  if (is_inter) throw Error(blinkUnsupported, "Blink communicators need an intra-communicator");
  checkMpi(PMPI_Comm_dup(comm, &comm_), "MPI_Comm_dup");
  try {
    layout_ = computeRankLayout(comm_, localNodeName());
    {
      std::unique_ptr<Error> failure;
      try {
        job_ = jobTopology(layout_, comm_);  // collective first, before anything may throw
        timeout_s_ = static_cast<double>(env::getInt("BLINK_TIMEOUT_S"));
        node_.board_capacity = static_cast<std::size_t>(env::getInt("BLINK_ONE_SHOT_MAX_BYTES"));
        node_.direct_min = static_cast<std::uint64_t>(env::getInt("BLINK_SHM_DIRECT_MIN_BYTES"));
        staging_max_ = static_cast<std::size_t>(env::getInt("BLINK_SHM_STAGING_BYTES"));
        cross_memory_allowed_ = env::getChoice("BLINK_SHM_SINGLE_COPY") != "0";
        forced_text_ = env::get("BLINK_ALGO").value_or("");
        forced_ = ForcedAlgorithms::parse(forced_text_);
        transports_ = transport::selectTransports(env::get("BLINK_TRANSPORT").value_or(""));
      } catch (const Error& e) {
        failure = std::make_unique<Error>(e);
      }
      agree(comm_, failure.get(), "loading the topology", timeout_s_);
    }
    {
      // Which path a call takes depends on these settings: they must be the same
      // everywhere, or ranks would wait on different paths.
      constexpr int kSettings = 6;
      const char* names[kSettings] = {"BLINK_ONE_SHOT_MAX_BYTES",
                                      "BLINK_SHM_DIRECT_MIN_BYTES",
                                      "BLINK_SHM_SINGLE_COPY",
                                      "BLINK_SHM_STAGING_BYTES",
                                      "BLINK_ALGO",
                                      "BLINK_TRANSPORT"};
      const std::uint64_t values[kSettings] = {
          node_.board_capacity, node_.direct_min,    fnv1a(env::getChoice("BLINK_SHM_SINGLE_COPY")),
          staging_max_,         fnv1a(forced_text_), fnv1a(transports_.describe())};
      std::uint64_t mine[2 * kSettings], all[2 * kSettings] = {};
      for (int i = 0; i < kSettings; ++i) {
        mine[2 * i] = values[i];
        mine[2 * i + 1] = ~values[i];  // the maximum of both is the minimum of the first
      }
      allreduceWithin(mine, all, 2 * kSettings, MPI_UINT64_T, MPI_MAX, comm_, timeout_s_,
                      "agreeing on the BLINK_* settings of the paths");
      for (int i = 0; i < kSettings; ++i) {
        if (all[2 * i] != mine[2 * i] || all[2 * i + 1] != mine[2 * i + 1]) {
          throw CollectiveError(blinkInvalidUsage,
                                std::string(names[i]) +
                                    " differs between the ranks: every rank must see the same "
                                    "BLINK_* settings");
        }
      }
      if (node_.board_capacity == 0) node_.board_off = "BLINK_ONE_SHOT_MAX_BYTES=0";
      if (node_.direct_min == 0) {
        node_.direct_off = "BLINK_SHM_DIRECT_MIN_BYTES=0";
      } else if (staging_max_ == 0 && !cross_memory_allowed_) {
        node_.direct_off = "BLINK_SHM_STAGING_BYTES=0 and BLINK_SHM_SINGLE_COPY=0";
        node_.direct_min = 0;
      }
      if (layout_.num_nodes > 1) {  // it lives in one node's shared memory
        node_.direct_min = 0;
        node_.direct_off = "the ranks span nodes";
      }
      // Across nodes the board serves each node, with rounds between node leaders.
      node_.leaders = layout_.num_nodes > 1 && node_.board_capacity > 0;
      node_.leaders_off =
          layout_.num_nodes == 1 ? "one node (the board serves it)" : "BLINK_ONE_SHOT_MAX_BYTES=0";
    }
    device_ = processDevice(layout_.local_rank);
    memory_ = MemoryAgreement(comm_, timeout_s_, device_);
    health_ = PeerHealth(comm_, layout_.rank, timeout_s_);
    for (int r = 0; r < layout_.size; ++r) {
      identity_ranks_ = identity_ranks_ && job_.plan_rank_of[static_cast<std::size_t>(r)] == r;
    }
    // GPU binding: local rank i uses GPU i modulo the GPUs this process sees (the
    // same rule as processDevice, which runs collectives on device buffers).
    const topo::CudaProbe cuda = topo::probeCuda();
    if (!cuda.devices.empty()) {
      bound_gpu_ = layout_.local_rank % static_cast<int>(cuda.devices.size());
      gpu_note_ = "GPU " + std::to_string(bound_gpu_) + " (" +
                  cuda.devices[static_cast<std::size_t>(bound_gpu_)].name + ")";
    } else {
      gpu_note_ =
          "no GPU (" + (cuda.why_none.empty() ? std::string("none found") : cuda.why_none) + ")";
    }
    checkMpi(PMPI_Comm_split(comm_, layout_.node, layout_.rank, &node_comm_), "MPI_Comm_split");
    verifyNodeIdentity(comm_, node_comm_, layout_, timeout_s_);
    std::vector<int> node_rank_of(static_cast<std::size_t>(layout_.size), -1);
    for (int r = 0; r < layout_.size; ++r) {
      if (layout_.node_of_rank[static_cast<std::size_t>(r)] == layout_.node) {
        node_rank_of[static_cast<std::size_t>(r)] =
            layout_.local_rank_of_rank[static_cast<std::size_t>(r)];
      }
    }
    std::vector<std::string> host_of;
    for (int r = 0; r < layout_.size; ++r) {
      host_of.push_back(layout_.node_names[static_cast<std::size_t>(
          layout_.node_of_rank[static_cast<std::size_t>(r)])]);
    }
    NicAssignment nics = assignNics(job_);
    if (layout_.rank == 0 && !nics.text.empty()) {
      BLINK_LOG(Info,
                "rank -> NIC (the plan's ports; streams between nodes leave there): " << nics.text);
    }
    const transport::TransportSetUp set_up{comm_,
                                           node_comm_,
                                           layout_.rank,
                                           std::move(node_rank_of),
                                           layout_.local_rank_of_rank,
                                           std::move(host_of),
                                           timeout_s_,
                                           std::move(nics.nics_of_rank)};
    auto make = [&](const transport::TransportEntry* entry) -> Transport* {
      for (const auto& made : transport_objects_) {
        if (made->name() == entry->name) return made.get();
      }
      transport_objects_.push_back(entry->make(set_up));
      return transport_objects_.back().get();
    };
    within_node_ = make(transports_.within_node);
    if (layout_.num_nodes == 1) {
      between_note_ = " (unused: one node)";
    } else {
      try {
        between_nodes_ = make(transports_.between_nodes);
      } catch (const CollectiveError& e) {
        // Every rank is here together. A transport BLINK_TRANSPORT named must work;
        // the default one may give way to the first that serves every reach.
        if (!transports_.between_chosen_by_default) throw;
        transport::fallBackBetweenNodes(transports_, e.what());
        between_nodes_ = make(transports_.between_nodes);
      }
      between_note_ = " (" + transports_.why_between + ")";
      const std::string details = between_nodes_->details();
      if (!details.empty()) between_note_ += " (" + details + ")";
    }
    if (!memory_.deviceEverywhere()) {
      device_off_ = device_ == nullptr ? processDeviceNote()
                                       : "a rank has no device, or the ranks' devices differ "
                                         "(emulated and real)";
    } else if (layout_.num_nodes > 1) {
      device_off_ = "the ranks span nodes (no device transport between nodes yet)";
    } else {
      transport::DeviceTransportOptions options;
      options.timeout_seconds = timeout_s_;
      // A multiple of 64, so of every element size; senders take the receiver's.
      options.slot_bytes =
          static_cast<std::size_t>(env::getInt("BLINK_DEVICE_SLOT_BYTES")) / 64 * 64;
      options.peer_to_peer = env::getChoice("BLINK_DEVICE_P2P") != "OFF";
      device_transport_ = std::make_unique<transport::DeviceTransport>(
          *device_, node_comm_, set_up.node_rank_of, layout_.rank, options);
      device_path_ = true;  // its stream comes with the first call on device buffers
    }
    if (layout_.rank == 0) {
      BLINK_LOG(Info, "communicator of " << layout_.size << " ranks on " << layout_.num_nodes
                                         << " node(s); topology " << job_.topology.name()
                                         << " from " << job_.source
                                         << "; streams: " << transports_.describe() << between_note_
                                         << "; rank 0: " << gpu_note_);
      BLINK_LOG(Info,
                "algorithms: the planner's plans; the one-shot board "
                    << (node_.board_capacity > 0
                            ? "up to " + std::to_string(node_.board_capacity) + " bytes" +
                                  (node_.leaders ? " on each node, with rounds between node "
                                                   "leaders across nodes (leaders)"
                                                 : "")
                            : "off (" + node_.board_off + ")")
                    << "; the direct path "
                    << (node_.direct_min > 0 ? "from " + std::to_string(node_.direct_min) + " bytes"
                                             : "off (" + node_.direct_off + ")")
                    << "; each call takes the fastest predicted"
                    << (forced_text_.empty() ? "" : " unless BLINK_ALGO=" + forced_text_));
    }
  } catch (...) {
    device_transport_.reset();
    direct_.reset();
    leaders_.reset();
    one_shot_.reset();
    transport_objects_.clear();
    if (node_comm_ != MPI_COMM_NULL) PMPI_Comm_free(&node_comm_);
    PMPI_Comm_free(&comm_);
    throw;
  }
}

Communicator::~Communicator() {
  device_transport_.reset();
  if (device_scratch_ != nullptr) device_->release(device_scratch_);
  if (device_stream_ >= 0) {
    try {
      device_->synchronize(device_stream_);
    } catch (const Error&) {
      // A failed device: nothing left to wait for.
    }
    device_->destroyStream(device_stream_);
  }
  for (device::Device::Event e : device_events_) device_->destroyEvent(e);
  direct_.reset();
  leaders_.reset();
  one_shot_.reset();
  transport_objects_.clear();
  int finalized = 0;
  PMPI_Finalized(&finalized);
  if (finalized) return;  // MPI has already released every communicator
  if (node_comm_ != MPI_COMM_NULL) PMPI_Comm_free(&node_comm_);
  if (comm_ != MPI_COMM_NULL) PMPI_Comm_free(&comm_);
}

std::byte* Communicator::scratch(std::size_t bytes, bool on_device) {
  if (on_device) {
    if (device_scratch_bytes_ < bytes) {
      if (device_scratch_ != nullptr) device_->release(device_scratch_);
      device_scratch_ = nullptr;
      device_scratch_bytes_ = 0;
      device_scratch_ = static_cast<std::byte*>(device_->allocate(bytes));
      device_scratch_bytes_ = bytes;
    }
    return device_scratch_;
  }
  // Kept between calls: fresh pages cost a fault each, which on some machines
  // is slower than the collective itself.
  if (scratch_.size() < bytes) scratch_.resize(bytes);
  return scratch_.data();
}

void Communicator::checkUsable() const {
  if (!broken_.empty()) {
    throw Error(blinkInvalidUsage, "this communicator failed earlier (" + broken_ +
                                       "); destroy it and create a new one");
  }
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

bool Communicator::ensureLeaders() {
  // Each node's board fails on its ranks together, the streams on some ranks only:
  // every rank learns of any failure, so all drop the algorithm together.
  auto agreed = [&](const std::unique_ptr<Error>& failure, const char* stage) {
    int ok = failure ? 0 : 1, all_ok = 0;
    allreduceWithin(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm_, timeout_s_, stage);
    if (all_ok != 0) return true;
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
    leaders_ = std::make_unique<algorithms::NodeLeaders>(
        one_shot_.get(), *between_nodes_,
        algorithms::NodeLeaders::Layout{layout_.rank, layout_.node_of_rank,
                                        layout_.local_rank_of_rank},
        node_.board_capacity, timeout_s_);
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
  if (layout_.rank == 0) {
    BLINK_LOG(Info, "node leaders: the board on each node, rounds between "
                        << layout_.num_nodes << " leaders over " << between_nodes_->name());
  }
  return true;
}

template <typename Body>
void Communicator::runOffPlan(Body&& body) {
  checkUsable();
  try {
    body();
  } catch (const Error& e) {
    broken_ = e.what();  // the peers are mid-call: the call counts are lost
    if (e.status() == blinkTimeout) throw Error(blinkTimeout, e.what() + health_.diagnose());
    throw;
  }
}

template <typename Body>
void Communicator::runLeaders(Body&& body) {
  runOffPlan([&] {
    body();
    settleTransports();
  });
}

void Communicator::settleTransports() {
  for (const auto& transport : transport_objects_) transport->settle(timeout_s_);
}

void Communicator::moveBytes(bool on_device, void* to, const void* from, std::size_t bytes) {
  if (bytes == 0 || to == from) return;
  if (!on_device) {
    std::memmove(to, from, bytes);
    return;
  }
  device_->copy(to, from, bytes, device_stream_);
  device_->synchronize(device_stream_);
}

void Communicator::divideResult(bool on_device, void* buffer, std::size_t count,
                                blinkDataType_t type) {
  if (!on_device) {
    divideBy(buffer, count, type, size());
    return;
  }
  device_->divide(buffer, count, type, size(), device_stream_);
  device_->synchronize(device_stream_);
}

void Communicator::requireHostMemory(std::initializer_list<MemoryAgreement::Buffer> buffers) {
  checkUsable();
  try {
    memory_.requireHostMemory(buffers);
  } catch (const MemoryTypeError&) {
    throw;  // every rank refused together: the communicator goes on
  } catch (const Error& e) {
    broken_ = e.what();  // a rank missed the agreement: its reduction may still be pending
    throw;
  }
}

bool Communicator::placeBuffers(std::initializer_list<MemoryAgreement::Buffer> buffers) {
  checkUsable();
  try {
    // Made at the first such call: on a GPU a stream costs a CUDA context, which
    // communicators that only ever see host buffers should not pay for. A CUDA
    // error here is agreed within the memory check (refused on every rank alike).
    return memory_.onDevice(buffers, device_path_, [this] {
      if (device_stream_ < 0) device_stream_ = device_->createStream();
      device_->synchronizeCaller();
    });
  } catch (const MemoryTypeError&) {
    throw;  // every rank refused together: the communicator goes on
  } catch (const Error& e) {
    broken_ = e.what();  // a rank missed the agreement: its reduction may still be pending
    throw;
  }
}

void Communicator::checkRoot(int root) const {
  if (root < 0 || root >= layout_.size) {
    throw Error(blinkInvalidArgument, "root " + std::to_string(root) + " is not a rank of this " +
                                          std::to_string(layout_.size) + "-rank communicator");
  }
}

Communicator::CachedChoice& Communicator::choiceFor(plan::Collective c, std::uint64_t bytes,
                                                    int element_size, int root_plan,
                                                    bool on_device) {
  const PlanKey key{static_cast<int>(c), bytes, element_size, root_plan, on_device};
  // Every call passes here, the board's sub-microsecond ones too: no allocation, no
  // scan, and for a repeated call not even the map.
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
      options.flat_trees_across_nodes = false;  // nothing between nodes paces (planner.hpp)
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
          StreamNeeds needs = streamNeeds(cp.program, transport.get());
          transport->ensureStreams(needs.sends, needs.recvs);
        }
      }
    } catch (const Error& e) {
      stream_failure = std::make_unique<Error>(e);
    }
    try {
      agree(comm_, stream_failure.get(), "setting up the streams", timeout_s_);
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

void Communicator::runPlan(CachedChoice& cp, std::byte* work, const void* input,
                           std::uint64_t bytes, blinkDataType_t type, blinkRedOp_t op,
                           bool on_device) {
  checkUsable();
  const auto* in = static_cast<const std::byte*>(input);
  if (in == work) in = nullptr;
  if (in != nullptr && !cp.program.input_capable) {
    moveBytes(on_device, work, in, bytes);
    in = nullptr;
  }
  const Combine combine = combineFor(type, op);
  DeviceRun device_run;
  RunOptions options;
  if (on_device) {
    device_run = {device_, device_stream_, &device_events_, {type, op}};
    options.device = &device_run;
    device_transport_->paceByShares(cp.plan.channel_shares);
  }
  options.timeout_seconds = timeout_s_;
  options.what = plan::toString(cp.plan.collective) + " of " + std::to_string(bytes) + " bytes";
  try {
    execute(cp.program, work, in, combine, options);
    settleTransports();
  } catch (const Error& e) {
    // Streams stopped mid-message cannot be resynchronised with the peers.
    broken_ = e.what();
    if (e.status() == blinkTimeout) throw Error(blinkTimeout, e.what() + health_.diagnose());
    throw;
  }
}

void Communicator::allReduce(const void* send, void* recv, std::size_t count, blinkDataType_t type,
                             blinkRedOp_t op) {
  checkReduction(type, op);
  const std::uint64_t bytes = checkedBytes(count, elementSize(type));
  needBuffer(send, bytes, "sendbuff");
  needBuffer(recv, bytes, "recvbuff");
  if (bytes == 0) return;
  const bool dev = placeBuffers({{send, "sendbuff"}, {recv, "recvbuff"}});
  if (size() == 1) {
    moveBytes(dev, recv, send, bytes);
  } else {
    CachedChoice& cp =
        choiceFor(plan::Collective::AllReduce, bytes, static_cast<int>(elementSize(type)), 0, dev);
    ++calls_[static_cast<std::size_t>(cp.algorithm)];
    if (cp.algorithm == Algorithm::Board) {
      runOffPlan(
          [&] { one_shot_->allReduce(asBytes(send), asBytes(recv), bytes, combineFor(type, op)); });
    } else if (cp.algorithm == Algorithm::Leaders) {
      runLeaders(
          [&] { leaders_->allReduce(asBytes(send), asBytes(recv), bytes, combineFor(type, op)); });
    } else if (cp.algorithm == Algorithm::Direct) {
      runOffPlan([&] {
        direct_->allReduce(asBytes(send), asBytes(recv), bytes, elementSize(type),
                           combineFor(type, op));
      });
    } else {
      runPlan(cp, static_cast<std::byte*>(recv), send, bytes, type, op, dev);
    }
  }
  if (op == blinkAvg) divideResult(dev, recv, count, type);
}

void Communicator::barrier() {
  const std::uint8_t arrived = 1;
  std::uint8_t all = 0;
  allReduce(&arrived, &all, 1, blinkUint8, blinkMax);
}

void Communicator::broadcast(const void* send, void* recv, std::size_t count, blinkDataType_t type,
                             int root) {
  checkRoot(root);
  const std::uint64_t bytes = checkedBytes(count, elementSize(type));
  if (rank() == root) needBuffer(send, bytes, "sendbuff");
  needBuffer(recv, bytes, "recvbuff");
  if (bytes == 0) return;
  const bool dev =
      placeBuffers({{rank() == root ? send : nullptr, "sendbuff"}, {recv, "recvbuff"}});
  if (size() == 1) {
    moveBytes(dev, recv, send, bytes);
    return;
  }
  const int root_plan = job_.plan_rank_of[static_cast<std::size_t>(root)];
  CachedChoice& cp = choiceFor(plan::Collective::Broadcast, bytes,
                               static_cast<int>(elementSize(type)), root_plan, dev);
  ++calls_[static_cast<std::size_t>(cp.algorithm)];
  if (cp.algorithm == Algorithm::Board) {
    runOffPlan([&] { one_shot_->broadcast(asBytes(send), asBytes(recv), bytes, root); });
  } else if (cp.algorithm == Algorithm::Leaders) {
    runLeaders([&] { leaders_->broadcast(asBytes(send), asBytes(recv), bytes, root); });
  } else if (cp.algorithm == Algorithm::Direct) {
    runOffPlan([&] { direct_->broadcast(asBytes(send), asBytes(recv), bytes, root); });
  } else {
    runPlan(cp, static_cast<std::byte*>(recv), rank() == root ? send : nullptr, bytes, type,
            blinkSum, dev);
  }
}

void Communicator::reduce(const void* send, void* recv, std::size_t count, blinkDataType_t type,
                          blinkRedOp_t op, int root) {
  checkReduction(type, op);
  checkRoot(root);
  const std::uint64_t bytes = checkedBytes(count, elementSize(type));
  needBuffer(send, bytes, "sendbuff");
  if (rank() == root) needBuffer(recv, bytes, "recvbuff");
  if (bytes == 0) return;
  const bool dev =
      placeBuffers({{send, "sendbuff"}, {rank() == root ? recv : nullptr, "recvbuff"}});
  std::byte* work = rank() == root ? static_cast<std::byte*>(recv) : nullptr;
  if (size() == 1) {
    moveBytes(dev, work, send, bytes);
  } else {
    const int root_plan = job_.plan_rank_of[static_cast<std::size_t>(root)];
    CachedChoice& cp = choiceFor(plan::Collective::Reduce, bytes,
                                 static_cast<int>(elementSize(type)), root_plan, dev);
    ++calls_[static_cast<std::size_t>(cp.algorithm)];
    if (cp.algorithm == Algorithm::Board) {
      runOffPlan([&] {
        one_shot_->reduce(asBytes(send), asBytes(recv), bytes, combineFor(type, op), root);
      });
    } else if (cp.algorithm == Algorithm::Leaders) {
      runLeaders([&] {
        leaders_->reduce(asBytes(send), asBytes(recv), bytes, combineFor(type, op), root);
      });
    } else {
      if (work == nullptr) work = scratch(bytes, dev);
      if (cp.algorithm == Algorithm::Direct) {
        runOffPlan([&] {
          direct_->reduce(asBytes(send), work, bytes, elementSize(type), combineFor(type, op),
                          root);
        });
      } else {
        runPlan(cp, work, send, bytes, type, op, dev);
      }
    }
  }
  if (op == blinkAvg && rank() == root) divideResult(dev, recv, count, type);
}

void Communicator::allGather(const void* send, void* recv, std::size_t send_count,
                             blinkDataType_t type) {
  const std::uint64_t block = checkedBytes(send_count, elementSize(type));
  const std::uint64_t bytes =
      checkedBytes(send_count, elementSize(type), static_cast<std::size_t>(size()));
  needBuffer(send, block, "sendbuff");
  needBuffer(recv, bytes, "recvbuff");
  if (bytes == 0) return;
  const bool dev = placeBuffers({{send, "sendbuff"}, {recv, "recvbuff"}});
  auto* out = static_cast<std::byte*>(recv);
  const auto me = static_cast<std::size_t>(rank());
  if (size() == 1) {
    moveBytes(dev, out, send, block);
    return;
  }
  CachedChoice& cp =
      choiceFor(plan::Collective::AllGather, bytes, static_cast<int>(elementSize(type)), -1, dev);
  ++calls_[static_cast<std::size_t>(cp.algorithm)];
  if (cp.algorithm == Algorithm::Board) {  // comm rank order: no plan ranks involved
    runOffPlan([&] { one_shot_->allGather(asBytes(send), out, block); });
    return;
  }
  if (cp.algorithm == Algorithm::Leaders) {  // comm rank order as well
    runLeaders([&] { leaders_->allGather(asBytes(send), out, block); });
    return;
  }
  if (cp.algorithm == Algorithm::Direct) {
    runOffPlan([&] { direct_->allGather(asBytes(send), out, block); });
    return;
  }
  if (identity_ranks_) {
    moveBytes(dev, out + me * block, send, block);
    runPlan(cp, out, nullptr, bytes, type, blinkSum, dev);
    return;
  }
  // Plan rank p's segment is the block of communicator rank comm_rank_of[p].
  std::byte* work = scratch(bytes, dev);
  const auto mine = static_cast<std::size_t>(job_.plan_rank_of[me]);
  moveBytes(dev, work + mine * block, send, block);
  runPlan(cp, work, nullptr, bytes, type, blinkSum, dev);
  for (std::size_t p = 0; p < static_cast<std::size_t>(size()); ++p) {
    moveBytes(dev, out + static_cast<std::size_t>(job_.comm_rank_of[p]) * block, work + p * block,
              block);
  }
}

void Communicator::reduceScatter(const void* send, void* recv, std::size_t recv_count,
                                 blinkDataType_t type, blinkRedOp_t op) {
  checkReduction(type, op);
  const std::uint64_t block = checkedBytes(recv_count, elementSize(type));
  const std::uint64_t bytes =
      checkedBytes(recv_count, elementSize(type), static_cast<std::size_t>(size()));
  needBuffer(send, bytes, "sendbuff");
  needBuffer(recv, block, "recvbuff");
  if (bytes == 0) return;
  const bool dev = placeBuffers({{send, "sendbuff"}, {recv, "recvbuff"}});
  const auto me = static_cast<std::size_t>(rank());
  const auto* in = static_cast<const std::byte*>(send);
  if (size() == 1) {
    moveBytes(dev, recv, send, block);
    if (op == blinkAvg) divideResult(dev, recv, recv_count, type);
    return;
  }
  CachedChoice& cp = choiceFor(plan::Collective::ReduceScatter, bytes,
                               static_cast<int>(elementSize(type)), -1, dev);
  ++calls_[static_cast<std::size_t>(cp.algorithm)];
  if (cp.algorithm == Algorithm::Board) {
    runOffPlan([&] { one_shot_->reduceScatter(in, asBytes(recv), block, combineFor(type, op)); });
  } else if (cp.algorithm == Algorithm::Leaders) {
    runLeaders([&] { leaders_->reduceScatter(in, asBytes(recv), block, combineFor(type, op)); });
  } else if (cp.algorithm == Algorithm::Direct) {
    // A result that lands elsewhere in `send` than this rank's own block waits in
    // scratch unless the path allows it (MPI_IN_PLACE puts it at the start).
    auto* out = asBytes(recv);
    const auto at = reinterpret_cast<std::uintptr_t>(out);
    const auto from = reinterpret_cast<std::uintptr_t>(in);
    const bool overlaps = at < from + bytes && from < at + block && out != in + me * block &&
                          !(out == in && direct_->reduceScatterIntoInputStart());
    std::byte* result = overlaps ? scratch(block) : out;
    runOffPlan([&] { direct_->reduceScatter(in, result, block, combineFor(type, op)); });
    if (overlaps) std::memmove(out, result, block);
  } else {
    // The plan reduces in place, so it works on scratch: the send buffer stays intact.
    std::byte* work = scratch(bytes, dev);
    if (identity_ranks_) {
      runPlan(cp, work, send, bytes, type, op, dev);
    } else {
      for (std::size_t p = 0; p < static_cast<std::size_t>(size()); ++p) {
        moveBytes(dev, work + p * block,
                  in + static_cast<std::size_t>(job_.comm_rank_of[p]) * block, block);
      }
      runPlan(cp, work, nullptr, bytes, type, op, dev);
    }
    const auto mine = static_cast<std::size_t>(job_.plan_rank_of[me]);
    moveBytes(dev, recv, work + mine * block, block);
  }
  if (op == blinkAvg) divideResult(dev, recv, recv_count, type);
}

}  // namespace blink::runtime
