// Communicator: construction (the rank layout, the topology, the BLINK_* settings
// every rank must share, the transports) and destruction. The decisions per call
// are in communicator_plan_cache.cpp, the calls in communicator_collectives.cpp.
#include "runtime/communicator.hpp"

#include "common/env.hpp"
#include "common/error.hpp"
#include "common/log.hpp"
#include "common/mpi_wait.hpp"
#include "runtime/communicator_detail.hpp"
#include "runtime/memory_type.hpp"
#include "runtime/nic_assignment.hpp"
#include "runtime/node_identity.hpp"
#include "runtime/process_device.hpp"
#include "topology/cuda_probe.hpp"
#include "transport/cuda/device_transport.hpp"

namespace blink::runtime {

namespace {

using communicator_detail::fnv1a;

void checkMpi(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw Error(blinkSystemError, std::string(what) + " failed");
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
        pace_between_nodes_ = env::getChoice("BLINK_PACE_BETWEEN_NODES") == "1";
        pace_piece_bytes_ = static_cast<std::size_t>(env::getInt("BLINK_PACE_PIECE_BYTES"));
        leaders_mpi_ = env::getChoice("BLINK_LEADERS_MPI") != "0";
      } catch (const Error& e) {
        failure = std::make_unique<Error>(e);
      }
      agreeAllOk(comm_, failure.get(), "loading the topology", timeout_s_, blinkInvalidUsage);
    }
    {
      // Which path a call takes depends on these settings: they must be the same
      // everywhere, or ranks would wait on different paths.
      constexpr int kSettings = 9;
      const char* names[kSettings] = {"BLINK_ONE_SHOT_MAX_BYTES",
                                      "BLINK_SHM_DIRECT_MIN_BYTES",
                                      "BLINK_SHM_SINGLE_COPY",
                                      "BLINK_SHM_STAGING_BYTES",
                                      "BLINK_ALGO",
                                      "BLINK_TRANSPORT",
                                      "BLINK_PACE_BETWEEN_NODES",
                                      "BLINK_PACE_PIECE_BYTES",
                                      "BLINK_LEADERS_MPI"};
      const std::uint64_t values[kSettings] = {node_.board_capacity,
                                               node_.direct_min,
                                               fnv1a(env::getChoice("BLINK_SHM_SINGLE_COPY")),
                                               staging_max_,
                                               fnv1a(forced_text_),
                                               fnv1a(transports_.describe()),
                                               pace_between_nodes_ ? 1u : 0u,
                                               pace_piece_bytes_,
                                               leaders_mpi_ ? 1u : 0u};
      std::uint64_t mine[2 * kSettings], all[2 * kSettings] = {};
      for (std::size_t i = 0; i < kSettings; ++i) {
        mine[2 * i] = values[i];
        mine[2 * i + 1] = ~values[i];  // the maximum of both is the minimum of the first
      }
      allreduceWithin(mine, all, 2 * kSettings, MPI_UINT64_T, MPI_MAX, comm_, timeout_s_,
                      "agreeing on the BLINK_* settings of the paths");
      for (std::size_t i = 0; i < kSettings; ++i) {
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
    host_of.reserve(static_cast<std::size_t>(layout_.size));
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
      if (transports_.between_chosen_by_default) {
        for (const transport::TransportEntry& entry : transport::transportRegistry()) {
          if (!entry.leaders_alternative || entry.name == between_nodes_->name()) continue;
          try {
            rounds_alternatives_.push_back(make(&entry));
          } catch (const CollectiveError& e) {
            // Every rank together: the leaders go without this one.
            if (layout_.rank == 0) {
              BLINK_LOG(Info, "node leaders: " << entry.name << " is not measured for their "
                                               << "rounds: " << e.what());
            }
          }
        }
      }
      if (pace_between_nodes_) paceBetweenNodes();
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
    if (leaders_comm_ != MPI_COMM_NULL) PMPI_Comm_free(&leaders_comm_);
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
  if (leaders_comm_ != MPI_COMM_NULL) PMPI_Comm_free(&leaders_comm_);
  if (node_comm_ != MPI_COMM_NULL) PMPI_Comm_free(&node_comm_);
  if (comm_ != MPI_COMM_NULL) PMPI_Comm_free(&comm_);
}

void Communicator::paceBetweenNodes() {
  if (between_nodes_ == within_node_) {
    // One object serves both reaches (BLINK_TRANSPORT=pmpi): pacing it would split
    // the messages within nodes too, for nothing.
    between_note_ += " (not paced: the same transport serves streams within nodes)";
    return;
  }
  for (auto& owned : transport_objects_) {
    if (owned.get() != between_nodes_) continue;
    owned = std::make_unique<transport::PacedTransport>(std::move(owned), layout_.node_of_rank,
                                                        pace_piece_bytes_);
    between_nodes_ = owned.get();
    return;
  }
}

}  // namespace blink::runtime
