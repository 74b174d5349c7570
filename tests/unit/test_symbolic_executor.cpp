// runSymbolic on hand-built plans: correct chain broadcast, ring AllReduce /
// ReduceScatter / AllGather, tree Reduce are accepted; broken variants (missing
// receive, deadlock, mismatched range, double or missing contribution, send of
// undefined data, wrong channel, reduction into undefined data, misplaced copy) are
// rejected with a precise message.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "plan/symbolic_executor.hpp"

namespace {

using namespace blink::plan;

Plan makePlan(Collective c, int n, std::uint64_t bytes, int root = 0, int element_size = 1) {
  Plan p;
  p.collective = c;
  p.algorithm = "hand";
  p.topology = "test";
  p.num_ranks = n;
  p.root = root;
  p.bytes = bytes;
  p.chunk_bytes = bytes;
  p.element_size = element_size;
  for (int r = 0; r < n; ++r) p.rank_gpu.push_back(r);
  p.routes = {{0, 1}};
  p.ranks.resize(static_cast<std::size_t>(n));
  return p;
}

int add(Plan& p, int rank, Step s) {
  auto& steps = p.ranks[static_cast<std::size_t>(rank)].steps;
  steps.push_back(std::move(s));
  return static_cast<int>(steps.size()) - 1;
}

int send(Plan& p, int rank, int peer, std::uint64_t off, std::uint64_t bytes,
         std::vector<int> deps = {}, int channel = 0) {
  Step s;
  s.kind = StepKind::Send;
  s.peer = peer;
  s.channel = channel;
  s.offset = off;
  s.bytes = bytes;
  s.route = 0;
  s.deps = std::move(deps);
  return add(p, rank, std::move(s));
}

int recv(Plan& p, int rank, int peer, std::uint64_t off, std::uint64_t bytes, bool reduce = false,
         std::vector<int> deps = {}, int channel = 0) {
  Step s;
  s.kind = reduce ? StepKind::RecvReduce : StepKind::Recv;
  s.peer = peer;
  s.channel = channel;
  s.offset = off;
  s.bytes = bytes;
  s.deps = std::move(deps);
  return add(p, rank, std::move(s));
}

int copy(Plan& p, int rank, std::uint64_t from, std::uint64_t to, std::uint64_t bytes,
         std::vector<int> deps = {}) {
  Step s;
  s.kind = StepKind::Copy;
  s.source_offset = from;
  s.offset = to;
  s.bytes = bytes;
  s.deps = std::move(deps);
  return add(p, rank, std::move(s));
}

// 0 -> 1 -> 2, two chunks of 64 bytes, rank 1 forwards each chunk once it has it.
Plan chainBroadcast() {
  Plan p = makePlan(Collective::Broadcast, 3, 128);
  p.chunk_bytes = 64;
  send(p, 0, 1, 0, 64);
  send(p, 0, 1, 64, 64);
  const int r0 = recv(p, 1, 0, 0, 64);
  const int r1 = recv(p, 1, 0, 64, 64);
  send(p, 1, 2, 0, 64, {r0});
  send(p, 1, 2, 64, 64, {r1});
  recv(p, 2, 1, 0, 64);
  recv(p, 2, 1, 64, 64);
  return p;
}

// Ring over n ranks, each segment cut into `chunks` pieces. Reduce-scatter: at step
// k rank r sends segment r-k-1 to r+1 and reduces segment r-k-2 from r-1, so rank r
// ends owning segment r; allgather: at step k rank r sends segment r-k, receives r-k-1.
Plan ring(Collective c, int n, std::uint64_t bytes, int element_size = 1, int chunks = 1) {
  Plan p = makePlan(c, n, bytes, -1, element_size);
  const bool rs = c != Collective::AllGather;
  const bool ag = c != Collective::ReduceScatter;
  auto mod = [n](int x) { return ((x % n) + n) % n; };
  // Piece j of segment s: element-aligned split.
  auto piece = [&](int s, int j, std::uint64_t& off, std::uint64_t& len) {
    const std::uint64_t es = static_cast<std::uint64_t>(element_size);
    const std::uint64_t elems = p.segmentBytes(s) / es;
    const auto cj = static_cast<std::uint64_t>(chunks);
    const auto uj = static_cast<std::uint64_t>(j);
    const std::uint64_t b = elems * uj / cj, e = elems * (uj + 1) / cj;
    off = p.segmentOffset(s) + b * es;
    len = (e - b) * es;
  };
  for (int r = 0; r < n; ++r) {
    const int next = mod(r + 1), prev = mod(r - 1);
    std::vector<int> last(static_cast<std::size_t>(chunks), -1);  // last recv of chunk j
    auto deps = [&](int j) {
      return last[static_cast<std::size_t>(j)] < 0
                 ? std::vector<int>{}
                 : std::vector<int>{last[static_cast<std::size_t>(j)]};
    };
    if (rs) {
      for (int k = 0; k + 1 < n; ++k) {
        for (int j = 0; j < chunks; ++j) {
          std::uint64_t off = 0, len = 0;
          piece(mod(r - k - 1), j, off, len);
          send(p, r, next, off, len, deps(j));
          piece(mod(r - k - 2), j, off, len);
          last[static_cast<std::size_t>(j)] = recv(p, r, prev, off, len, true);
        }
      }
    }
    if (ag) {
      for (int k = 0; k + 1 < n; ++k) {
        for (int j = 0; j < chunks; ++j) {
          std::uint64_t off = 0, len = 0;
          piece(mod(r - k), j, off, len);
          send(p, r, next, off, len, deps(j));
          piece(mod(r - k - 1), j, off, len);
          last[static_cast<std::size_t>(j)] = recv(p, r, prev, off, len, false);
        }
      }
    }
  }
  return p;
}

// Reduce to 0 over the tree 3 -> 1 -> 0 <- 2, two chunks of 32 bytes.
Plan treeReduce(bool forward_without_dep = false, bool rank2_sends_twice = false) {
  Plan p = makePlan(Collective::Reduce, 4, 64, 0);
  p.chunk_bytes = 32;
  send(p, 3, 1, 0, 32);
  send(p, 3, 1, 32, 32);
  const int a = recv(p, 1, 3, 0, 32, true);
  const int b = recv(p, 1, 3, 32, 32, true);
  send(p, 1, 0, 0, 32, forward_without_dep ? std::vector<int>{} : std::vector<int>{a});
  send(p, 1, 0, 32, 32, {b});
  send(p, 2, 0, 0, 32);
  send(p, 2, 0, 32, 32);
  if (rank2_sends_twice) send(p, 2, 0, 0, 32);
  recv(p, 0, 1, 0, 32, true);
  recv(p, 0, 1, 32, 32, true);
  recv(p, 0, 2, 0, 32, true);
  recv(p, 0, 2, 32, 32, true);
  if (rank2_sends_twice) recv(p, 0, 2, 0, 32, true);
  return p;
}

void expectOk(const Plan& p) {
  const SymbolicResult r = runSymbolic(p);
  EXPECT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.steps_run, p.numSteps());
}

// Rejected, with every fragment in the message.
void expectError(const Plan& p, const std::vector<std::string>& fragments) {
  const SymbolicResult r = runSymbolic(p);
  ASSERT_FALSE(r.ok);
  for (const auto& f : fragments) {
    EXPECT_NE(r.error.find(f), std::string::npos) << "missing \"" << f << "\" in: " << r.error;
  }
}

TEST(SymbolicExecutor, ChainBroadcastPipelined) {
  expectOk(chainBroadcast());
}

TEST(SymbolicExecutor, RingAllReduce2And4Ranks) {
  expectOk(ring(Collective::AllReduce, 2, 64));
  expectOk(ring(Collective::AllReduce, 4, 64));
  // Uneven segments (10 elements of 4 bytes over 4 ranks: 3, 3, 2, 2) and chunks.
  expectOk(ring(Collective::AllReduce, 4, 40, 4, 2));
  expectOk(ring(Collective::AllReduce, 3, std::uint64_t{4} * 17, 4, 3));
}

TEST(SymbolicExecutor, RingReduceScatterAndAllGather) {
  expectOk(ring(Collective::ReduceScatter, 4, 40, 4));
  expectOk(ring(Collective::AllGather, 4, 40, 4));
  expectOk(ring(Collective::AllGather, 2, 64, 1, 4));
}

TEST(SymbolicExecutor, TreeReduce) {
  expectOk(treeReduce());
}

TEST(SymbolicExecutor, AllReduceRingIsNotAnAllGather) {
  // The same steps promise different things: a ReduceScatter-only ring is no AllReduce.
  Plan p = ring(Collective::ReduceScatter, 4, 64);
  p.collective = Collective::AllReduce;
  expectError(p, {"rank 0 ends with bytes", "expected {rank 0, rank 1, rank 2, rank 3}"});
}

TEST(SymbolicExecutor, ZeroBytesIsOkForEveryCollective) {
  for (Collective c : {Collective::Broadcast, Collective::Reduce, Collective::AllGather,
                       Collective::ReduceScatter, Collective::AllReduce}) {
    for (int n : {1, 2, 5}) {
      const Plan p = makePlan(c, n, 0, 0);
      const SymbolicResult r = runSymbolic(p);
      EXPECT_TRUE(r.ok) << toString(c) << " n=" << n << ": " << r.error;
      EXPECT_EQ(r.steps_run, 0u);
      // An empty buffer promises nothing, whatever the root says.
      EXPECT_TRUE(runSymbolic(makePlan(c, n, 0, -1)).ok) << toString(c);
    }
  }
}

TEST(SymbolicExecutor, MissingReceiveIsALeftoverMessage) {
  Plan p = chainBroadcast();
  p.ranks[2].steps.pop_back();
  expectError(p,
              {"rank 1 sends 2 message(s) to rank 2 on channel 0", "rank 2 receives 1 from rank 1",
               "rank 1 step 3 (send to rank 2, channel 0, bytes [64, 128))", "leftover"});
}

TEST(SymbolicExecutor, MissingSendIsADeadlock) {
  Plan p = chainBroadcast();
  p.ranks[0].steps.pop_back();
  expectError(p, {"rank 0 sends 1 message(s) to rank 1", "rank 1 receives 2",
                  "rank 1 step 1 (recv from rank 0, channel 0, bytes [64, 128))", "never sent"});
}

TEST(SymbolicExecutor, CyclicWaitIsADeadlock) {
  Plan p = makePlan(Collective::AllReduce, 2, 8);
  // Each rank first waits for the other's message, then sends its own after it.
  const int a = recv(p, 0, 1, 0, 8, true);
  send(p, 0, 1, 0, 8, {a});
  const int b = recv(p, 1, 0, 0, 8, true);
  send(p, 1, 0, 0, 8, {b});
  expectError(p, {"deadlock after 0 of 4 steps",
                  "rank 0 step 0 (recv-reduce from rank 1, channel 0, bytes [0, 8)) waits for "
                  "message #0 from rank 1 step 1",
                  "rank 1 step 0 (recv-reduce from rank 0"});
}

TEST(SymbolicExecutor, DeadlockAfterSomeProgress) {
  Plan p = makePlan(Collective::AllReduce, 3, 8);
  send(p, 0, 1, 0, 8);
  const int a = recv(p, 1, 0, 0, 8, true);
  // Ranks 1 and 2 then each wait for the other before sending.
  const int b = recv(p, 1, 2, 0, 8, true, {a});
  send(p, 1, 2, 0, 8, {b});
  const int c = recv(p, 2, 1, 0, 8, true);
  send(p, 2, 1, 0, 8, {c});
  const SymbolicResult r = runSymbolic(p);
  ASSERT_FALSE(r.ok);
  EXPECT_EQ(r.steps_run, 2u);
  EXPECT_NE(r.error.find("deadlock after 2 of 6 steps: rank 1 step 1 (recv-reduce from rank 2"),
            std::string::npos)
      << r.error;
  EXPECT_NE(r.error.find("rank 2 step 0 (recv-reduce from rank 1, channel 0, bytes [0, 8)) waits "
                         "for message #0 from rank 1 step 2"),
            std::string::npos)
      << r.error;
  EXPECT_EQ(r.error.find("rank 0 step"), std::string::npos) << r.error;  // rank 0 finished
}

TEST(SymbolicExecutor, MismatchedRange) {
  Plan p = chainBroadcast();
  p.ranks[2].steps[1].offset = 0;  // receives chunk 1 into chunk 0's place
  expectError(
      p, {"rank 2 step 1 (recv from rank 1, channel 0, bytes [0, 64))", "does not match message #1",
          "rank 1 step 3 (send to rank 2", "with range [64, 128)"});
}

TEST(SymbolicExecutor, ContributionCountedTwice) {
  expectError(treeReduce(false, true),
              {"rank 0 ends with bytes [0, 32) = {rank 0, rank 1, rank 2 x2, rank 3}",
               "expected {rank 0, rank 1, rank 2, rank 3}"});
}

TEST(SymbolicExecutor, ContributionMissing) {
  // Rank 1 forwards chunk 0 before it has reduced rank 3's part into it.
  expectError(treeReduce(true), {"rank 0 ends with bytes [0, 32) = {rank 0, rank 1, rank 2}",
                                 "expected {rank 0, rank 1, rank 2, rank 3}"});
  // A ring AllReduce whose last allgather hop is dropped on both ends.
  Plan p = ring(Collective::AllReduce, 4, 64);
  for (auto& rank : p.ranks) rank.steps.resize(rank.steps.size() - 2);
  expectError(p, {"rank 0 ends with bytes", "expected {rank 0, rank 1, rank 2, rank 3}"});
}

TEST(SymbolicExecutor, SendOfDataNotYetReceived) {
  Plan p = chainBroadcast();
  p.ranks[1].steps[2].deps.clear();  // forwards chunk 0 without waiting for it
  expectError(p, {"rank 1 step 2 (send to rank 2, channel 0, bytes [0, 64))",
                  "sends undefined data at bytes [0, 64)"});
}

TEST(SymbolicExecutor, WrongChannel) {
  Plan p = chainBroadcast();
  p.ranks[2].steps[0].channel = 1;
  expectError(p, {"rank 1 sends 2 message(s) to rank 2 on channel 0",
                  "rank 2 receives 1 from rank 1 on channel 0",
                  "rank 1 -> rank 2 channel 1: 0 sent, 1 received"});
}

TEST(SymbolicExecutor, ReduceIntoUndefinedData) {
  Plan p = chainBroadcast();
  p.ranks[2].steps[0].kind = StepKind::RecvReduce;
  expectError(p, {"rank 2 step 0 (recv-reduce from rank 1, channel 0, bytes [0, 64))",
                  "reduces into undefined data at bytes [0, 64)"});
}

TEST(SymbolicExecutor, BroadcastLeavesARankWithout) {
  Plan p = chainBroadcast();
  p.ranks[2].steps.clear();
  p.ranks[1].steps.resize(2);
  expectError(p, {"rank 2 ends with bytes [0, 128) = undefined", "expected {rank 0}"});
}

TEST(SymbolicExecutor, CopiesTrackWhereDataCameFrom) {
  // Rank 1 fills its second half with a copy of the first, then overwrites it with
  // the right data: correct.
  Plan ok = makePlan(Collective::Broadcast, 2, 64);
  send(ok, 0, 1, 0, 32);
  send(ok, 0, 1, 32, 32);
  const int a = recv(ok, 1, 0, 0, 32);
  const int c = copy(ok, 1, 0, 32, 32, {a});
  recv(ok, 1, 0, 32, 32, false, {c});
  expectOk(ok);

  // Without the second message the second half holds the first half's data.
  Plan wrong = makePlan(Collective::Broadcast, 2, 64);
  send(wrong, 0, 1, 0, 32);
  const int w = recv(wrong, 1, 0, 0, 32);
  copy(wrong, 1, 0, 32, 32, {w});
  expectError(wrong, {"rank 1 ends with bytes [32, 64) = {rank 0} from 32 bytes earlier",
                      "expected {rank 0}"});

  // Reducing moved data with data in its place.
  Plan mixed = makePlan(Collective::AllReduce, 2, 64);
  const int m = copy(mixed, 0, 0, 32, 32);
  recv(mixed, 0, 1, 32, 32, true, {m});
  send(mixed, 1, 0, 32, 32);
  expectError(mixed, {"rank 0 step 1 (recv-reduce from rank 1, channel 0, bytes [32, 64))",
                      "combines data from different places at bytes [32, 64)"});

  // Overlapping copy: [0, 48) -> [16, 64) leaves [16, 64) shifted by 16.
  Plan overlap = makePlan(Collective::AllReduce, 1, 64);
  copy(overlap, 0, 0, 16, 48);
  expectError(overlap, {"rank 0 ends with bytes [16, 64) = {rank 0} from 16 bytes earlier"});

  Plan self = makePlan(Collective::AllReduce, 1, 64);
  copy(self, 0, 0, 0, 64);
  expectOk(self);
}

TEST(SymbolicExecutor, StructuralProblemsAreReported) {
  Plan p = chainBroadcast();
  p.ranks[1].steps[2].route = -1;
  expectError(p, {"rank 1 step 2", "send without a valid route"});
  Plan q = chainBroadcast();
  q.root = 7;
  expectError(q, {"root 7 out of range"});
}

TEST(SymbolicExecutor, LargeRingRunsEveryStep) {
  // 8 ranks, 1000 chunks per segment: 8 * 2 * 7 * 1000 * 2 = 224k steps. How fast it
  // runs is perf's business (a timed assertion here failed on loaded machines); a
  // run that went quadratic would meet the ctest timeout.
  const Plan p = ring(Collective::AllReduce, 8, std::uint64_t{8} * 1000 * 4, 4, 1000);
  ASSERT_EQ(p.numSteps(), 224000u);
  const SymbolicResult r = runSymbolic(p);
  EXPECT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.steps_run, p.numSteps());
}

}  // namespace
