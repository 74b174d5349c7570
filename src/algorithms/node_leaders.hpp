// Small collectives across nodes in a few message latencies: the one-shot board
// (shm_one_shot.hpp) gathers or reduces within each node onto its leader (local
// rank 0), the leaders exchange between them, and the board spreads the result within
// each node again. A plan pays a message latency per step of its trees within and
// between nodes; here a call pays at most two board synchronisations and the rounds
// between nodes, and moves whole buffers, so the planner picks it for small messages
// only (its cost model is predictSeconds below).
//
// Between the leaders, one of three shapes per collective (Shape):
// - one round: each leader sends its message to (or receives from) every other at
//   once and combines in node order (N(N-1) messages for AllReduce, AllGather and
//   ReduceScatter; N-1 for Broadcast and Reduce);
// - log rounds: recursive doubling for AllReduce, ReduceScatter (an AllReduce of the
//   whole buffer) and AllGather (each round exchanges the node blocks gathered so far),
//   a binomial tree for Broadcast and Reduce; with a node count N that is not a power
//   of two p, the leaders p..N-1 first hand their data to leaders 0..N-p-1 and get the
//   result from them at the end (two more rounds);
// - via the first leader (AllReduce, AllGather, ReduceScatter): every leader sends to
//   node 0's leader, which combines in node order and sends the result back to each:
//   two rounds, 2(N-1) messages.
// The shape is set per collective (setShape); the runtime picks the cheapest under
// a cost of rounds and messages whose two constants it measures at set-up
// (cheapest(); runtime/communicator_plan_cache.cpp). Where the CPUs are few and shared
// (emulated hosts on one machine), each message's kernel work costs more than a round's
// latency, and fewer messages win over fewer rounds.
// A fourth way, where the runtime measures it faster for a collective (useMpi): the
// MPI library's own collective among the leaders (PMPI_* on a communicator of the
// leaders, rank = node index; a standard two-level design: board, MPI among leaders,
// board). It applies to reductions with an MPI twin of type and op, and to a Reduce
// whose root is its node's leader; elsewhere the call takes the collective's shape.
// Its wait is MPI's own (no Blink deadline). In a rooted call (Broadcast,
// Reduce) the root itself speaks for its node, so no board phase carries the data
// between it and its leader. In ReduceScatter each rank takes its block from the
// leader's result on the board. The Mpi way gives each leader only its node's blocks
// (MPI_Reduce_scatter); equal nodes take MPI_Allgather and MPI_Reduce_scatter_block,
// not the v forms; a rank alone on its node hands MPI the caller's buffers; so a job
// of one rank per node makes exactly the MPI call it replaces, and the leaders' price
// is measured (runtime/algorithm_choice.hpp). Messages travel on the transport
// between nodes (transport.hpp streams, one channel of their own), so they take UCX or PMPI as the
// plans' streams do; where the transport moves a round at once (PMPI: one
// MPI_Testsome per poll for all its messages, not one MPI_Test each), a round goes
// that way.
//
// Combinations run in a fixed order: node order in one round, "lower node first" in
// recursive doubling, relative to the root in a binomial Reduce; so every leader, and
// through the board every rank, gets the same bits for a given node layout (and root).
//
// Every rank of the communicator must make the same calls in the same order; every
// wait ends after the timeout with an error that names the rank waited for.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/shm_one_shot.hpp"
#include "common/combine.hpp"
#include "topology/topology.hpp"
#include "transport/transport.hpp"

namespace blink::algorithms {

// MPI's twins of a reduction's type and op (MPI_DATATYPE_NULL: none), for the Mpi way.
struct MpiReduction {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_Op op = MPI_OP_NULL;
  int element_bytes = 1;  // MPI_Type_size of type, known to the caller (no call per call)
};

class NodeLeaders {
 public:
  // Node sets are bit sets of one word.
  static constexpr int kMaxNodes = 64;
  // The channel of the leaders' streams: far above any plan's channels, within
  // MPI_TAG_UB's guaranteed minimum and UCX's 16 channel bits.
  static constexpr int kChannel = 32000;
  // Up to this many nodes the leaders exchange in one round, each with every other at
  // once, unless setShape says otherwise; beyond, in log rounds.
  static constexpr int kOneRoundMaxNodes = 8;

  enum class Shape { OneRound, LogRounds, ViaFirstLeader, Mpi };
  static const char* toString(Shape shape);
  // What a round and a message (its send and receive, the kernel's work on both
  // sides included) cost between the leaders.
  struct ShapeCosts {
    double round_seconds = 0.0;
    double message_seconds = 0.0;
  };
  // The shapes of Blink's own that apply to a collective (via the first leader is one
  // round for the rooted ones, so it is not offered there); not Mpi.
  static std::vector<Shape> shapesFor(plan::Collective collective);
  // Rounds, and messages among all leaders, of a shape on `nodes` nodes.
  static int rounds(Shape shape, plan::Collective collective, int nodes);
  static int messages(Shape shape, plan::Collective collective, int nodes);
  static double predictLeadersSeconds(Shape shape, plan::Collective collective, int nodes,
                                      const ShapeCosts& costs);
  // The shape of least predicted time (ties: the order of Shape).
  static Shape cheapest(plan::Collective collective, int nodes, const ShapeCosts& costs);
  // The two constants from the measured times of one collective under several shapes
  // (a constant common to all, the board phases, fitted alongside); false where the
  // times do not determine them.
  static bool fitCosts(plan::Collective collective, int nodes, const std::vector<Shape>& shapes,
                       const std::vector<double>& seconds, ShapeCosts& costs);

  struct Layout {
    int rank = 0;                         // in the communicator
    std::vector<int> node_of_rank;        // node index (0..nodes-1) of every rank
    std::vector<int> local_rank_of_rank;  // its rank within its node
  };

  // `board` serves this rank's node (not owned; may be null where the node has one
  // rank), `between` carries the leaders' messages (not owned; its streams must be
  // made with streamsNeeded() first). Every collective starts with one round up to
  // kOneRoundMaxNodes nodes, log rounds beyond.
  NodeLeaders(ShmOneShot* board, transport::Transport& between, Layout layout, std::size_t capacity,
              double timeout_seconds);

  using MpiReduction = algorithms::MpiReduction;

  // Every rank of the communicator must set the same shapes.
  void setShape(plan::Collective collective, Shape shape);
  // The leaders' communicator for the Mpi way (rank = node index; MPI_COMM_NULL on the
  // other ranks, which call this too; not owned), and where it is taken.
  void setLeadersComm(MPI_Comm leaders);
  void useMpi(plan::Collective collective, bool use);
  bool usesMpi(plan::Collective collective) const {
    return use_mpi_[static_cast<std::size_t>(collective)];
  }
  // The MPI library's own collective on every rank of `whole` (the communicator the
  // layout describes, in its rank order; not owned), no board and no leaders: where it
  // measured faster than both ways through the leaders (several ranks per node on few
  // cores, where MPI's own waits may cost less than a board's). Where set, it takes
  // precedence over useMpi; a reduction still needs its MPI twins.
  void setWholeComm(MPI_Comm whole);
  void useMpiOnAll(plan::Collective collective, bool use);
  bool usesMpiOnAll(plan::Collective collective) const {
    return use_mpi_on_all_[static_cast<std::size_t>(collective)];
  }
  Shape shape(plan::Collective collective) const {
    return shapes_[static_cast<std::size_t>(collective)];
  }
  int nodes() const { return nodes_; }

  // The streams this rank needs on the transport between nodes: one each way to every
  // other node's leader, and for a leader to every rank of the other nodes (the root
  // of a rooted call speaks for its node).
  std::vector<transport::StreamKey> streamsNeeded() const;

  // The cost model: board phases priced as ShmOneShot's on each node's host-memory
  // paths, rounds between nodes at the route's latency and bandwidth
  // (host_memory_model.hpp). `bytes` as for ShmOneShot::traffic; `root` a plan rank.
  // Negative, with why_not set, where it does not apply.
  static double predictSeconds(const topo::Topology& topology, plan::Collective collective,
                               std::uint64_t bytes, int root, std::string& why_not);
  // Rounds between the leaders of `nodes` nodes, and whether that is one round (of a
  // message to or from every other node at once).
  static int rounds(plan::Collective collective, int nodes);
  static bool oneRound(int nodes);
  static int largestPowerOfTwoUpTo(int n);
  static int log2Ceil(int n);

  // As ShmOneShot's; `root` is a communicator rank. bytes (the whole buffer of
  // AllGather and ReduceScatter) <= capacity.
  // `mpi`: the reduction's MPI twins, for the Mpi way.
  void allReduce(const std::byte* in, std::byte* out, std::size_t bytes, const Combine& combine,
                 MpiReduction mpi = {});
  void broadcast(const std::byte* in, std::byte* out, std::size_t bytes, int root);
  void reduce(const std::byte* in, std::byte* out, std::size_t bytes, const Combine& combine,
              int root, MpiReduction mpi = {});
  void allGather(const std::byte* in, std::byte* out, std::size_t block_bytes);
  void reduceScatter(const std::byte* in, std::byte* out, std::size_t block_bytes,
                     const Combine& combine, MpiReduction mpi = {});
  // Whether the last call moved anything over the transport between nodes (the Mpi way
  // does not), so that only then is the transport settled: UCX's settle re-arms its
  // workers, system calls that cost a small call several microseconds.
  bool lastCallUsedTransport() const { return shape_ != Shape::Mpi; }

 private:
  bool leader() const { return local_rank_ == 0; }
  bool alone() const { return local_size_ == 1; }
  Shape shape_ = Shape::OneRound;  // of the call in progress
  // One message to or from the speaker of `node` (callLeaders).
  // Trivial, so that the arrays of them a small call puts on its stack cost nothing to
  // make (every element used is assigned whole).
  struct Part {
    int node;
    const std::byte* send;
    std::byte* recv;
    std::size_t bytes;
  };
  // Moves every part at once; returns when all are done.
  void exchangeAll(const Part* sends, int send_count, const Part* recvs, int recv_count);
  // Sends `send_bytes` to the leader of node `to` and receives `recv_bytes` from the
  // leader of node `from` (-1: no such part), both at once.
  void exchange(int to, const std::byte* send, std::size_t send_bytes, int from, std::byte* recv,
                std::size_t recv_bytes);
  // Where node n's message lands in a one-round exchange (`many_`).
  std::byte* slot(int node, std::size_t bytes) const;
  // The nodes' contributions combined in node order into `into` (own: this node's).
  void combineInNodeOrder(const std::byte* own, std::byte* into, std::size_t bytes,
                          const Combine& combine) const;
  // Recursive doubling among the leaders on acc (bytes); the result may end in the
  // other working buffer: returns where it is.
  std::byte* leadersAllReduce(std::byte* acc, std::size_t bytes, const Combine& combine);
  // The bytes of the node blocks in `nodes` (a bit set), packed in node order.
  std::size_t pack(std::uint64_t nodes, const std::byte* all, std::byte* packed) const;
  void unpack(std::uint64_t nodes, const std::byte* packed, std::byte* all) const;
  // `mpi_fits`: the Mpi way can serve this call (every rank the same).
  void begin(plan::Collective collective, const char* name, std::size_t bytes,
             bool mpi_fits = true);
  // ReduceScatter the Mpi way, from the node's sum in work_a_ (on the leader).
  void mpiReduceScatter(std::byte* out, std::size_t block_bytes);
  // Elements of the reduction's MPI type in `bytes`.
  int elements(std::size_t bytes) const;
  // The call on every rank of whole_comm_ when useMpiOnAll chose it (and the reduction
  // has MPI twins): true when it was made. `bytes` as the caller's (AllGather and
  // ReduceScatter: a block); `root` a comm rank or -1.
  bool mpiOnAll(plan::Collective collective, const char* name, const std::byte* in, std::byte* out,
                std::size_t bytes, int root, const MpiReduction& mpi);
  // The collective's MPI call on the caller's buffers on `comm`, whose rank order is
  // the layout's (whole_comm_, or leaders_comm_ where every node has one rank in
  // order; for AllReduce, where ranks do not matter, any leaders_comm_); a reduction
  // with mpi_reduction_'s twins. `bytes` and `root` as mpiOnAll's.
  void mpiOnCallersBuffers(plan::Collective collective, const std::byte* in, std::byte* out,
                           std::size_t bytes, int root, MPI_Comm comm);
  // Throws where a PMPI_* call among the leaders failed.
  void mpiDone(int status, const char* what) const;
  // Who speaks for each node between nodes in this call: its leader, but the root
  // itself for its node in a rooted call (-1: none), which saves a board phase there.
  void callLeaders(int root);

  ShmOneShot* board_;
  transport::Transport& between_;
  Layout layout_;
  int nodes_ = 0, node_ = 0, local_rank_ = 0, local_size_ = 0;
  std::vector<int> leader_of_;                  // comm rank of each node's leader
  std::vector<int> call_leader_;                // who speaks for each node in this call
  std::vector<transport::WholeMessage> whole_;  // exchangeAll's, one per part at most
  int call_root_node_ = -1;                     // the node whose speaker a root replaced, if any
  std::vector<int> ranks_on_;                   // ranks of each node
  std::vector<std::size_t> first_block_;        // each node's first block in node order
  bool equal_nodes_ = true;                     // every node has as many ranks
  bool every_node_alone_ = false;               // one rank per node: the leaders' comm is the comm
  bool ranks_in_node_order_ = true;             // rank r is block r in node order
  std::size_t block_bytes_ = 0;                 // of the AllGather in progress
  std::size_t capacity_ = 0;
  double timeout_seconds_ = 300.0;
  std::array<Shape, 5> shapes_{};  // by plan::Collective
  std::array<bool, 5> use_mpi_{};
  bool mpi_ready_ = false;  // setLeadersComm was called
  MPI_Comm leaders_comm_ = MPI_COMM_NULL;
  std::array<bool, 5> use_mpi_on_all_{};
  MPI_Comm whole_comm_ = MPI_COMM_NULL;
  MpiReduction mpi_reduction_;                      // of the call in progress
  std::vector<int> gather_counts_, gather_displs_;  // of an AllGather the Mpi way
  std::vector<std::byte> work_a_, work_b_, packed_;
  // The other nodes' messages of a one-round exchange; pages touched only when used.
  std::unique_ptr<std::byte[]> many_;
  const char* collective_ = "";
  std::size_t bytes_ = 0;
  std::uint64_t call_ = 0;
};

}  // namespace blink::algorithms
