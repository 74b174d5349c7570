// The flow-level simulator against closed forms: one transfer, shared links (max-min
// fairness, weighted by channel shares), a pipelined chain broadcast, the ring
// AllReduce, copies, and the errors.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/error.hpp"
#include "gpu_topologies.hpp"
#include "plan/plan.hpp"
#include "plan/simulator.hpp"
#include "topology/topology.hpp"

namespace {

using namespace blink;
using plan::Plan;
using plan::SimOptions;
using plan::Step;
using plan::StepKind;

constexpr double kGB = 1e9;
constexpr double kUs = 1e-6;

void expectRel(double actual, double expected, double rel = 1e-6) {
  EXPECT_NEAR(actual, expected, rel * expected) << "expected " << expected << ", got " << actual;
}

blinkResult_t statusOf(auto&& body, std::string* message = nullptr) {
  try {
    body();
  } catch (const Error& e) {
    if (message != nullptr) *message = e.what();
    return e.status();
  }
  return blinkSuccess;
}

topo::Link nvlink(double gbps, double latency_us, int multiplicity = 1) {
  topo::Link l;
  l.kind = topo::LinkKind::NvLink;
  l.gbps = gbps;
  l.latency_us = latency_us;
  l.multiplicity = multiplicity;
  return l;
}

// n GPUs, gpu_index i at vertex i, no links.
topo::Topology gpus(int n) {
  topo::Topology t("gpus");
  test::addGpus(t, n);
  return t;
}

topo::Topology chain(int n, double gbps, double latency_us) {
  topo::Topology t = gpus(n);
  for (int i = 0; i + 1 < n; ++i) {
    t.addDuplexLink(static_cast<topo::Vertex>(i), static_cast<topo::Vertex>(i + 1),
                    nvlink(gbps, latency_us));
  }
  return t;
}

topo::Topology ring(int n, double gbps, double latency_us) {
  topo::Topology t = gpus(n);
  for (int i = 0; i < (n == 2 ? 1 : n); ++i) {  // two GPUs: one cable
    t.addDuplexLink(static_cast<topo::Vertex>(i), static_cast<topo::Vertex>((i + 1) % n),
                    nvlink(gbps, latency_us));
  }
  return t;
}

Plan emptyPlan(int n, std::uint64_t bytes) {
  Plan p;
  p.collective = plan::Collective::Broadcast;
  p.algorithm = "test";
  p.num_ranks = n;
  p.root = 0;
  p.bytes = bytes;
  p.chunk_bytes = bytes;
  for (int r = 0; r < n; ++r) p.rank_gpu.push_back(r);
  p.ranks.resize(static_cast<std::size_t>(n));
  return p;
}

int addRoute(Plan& p, std::vector<topo::Vertex> vertices) {
  p.routes.push_back(std::move(vertices));
  return static_cast<int>(p.routes.size()) - 1;
}

// Appends a step to rank r; returns its index.
int add(Plan& p, int r, StepKind kind, int peer, std::uint64_t bytes, std::vector<int> deps = {},
        int route = -1, int channel = 0, std::uint64_t offset = 0) {
  Step s;
  s.kind = kind;
  s.peer = peer;
  s.channel = channel;
  s.offset = offset;
  s.bytes = bytes;
  s.route = route;
  s.deps = std::move(deps);
  auto& steps = p.ranks[static_cast<std::size_t>(r)].steps;
  steps.push_back(std::move(s));
  return static_cast<int>(steps.size()) - 1;
}

int send(Plan& p, int r, int peer, std::uint64_t bytes, int route, std::vector<int> deps = {},
         int channel = 0) {
  return add(p, r, StepKind::Send, peer, bytes, std::move(deps), route, channel);
}

int recv(Plan& p, int r, int peer, std::uint64_t bytes, std::vector<int> deps = {},
         int channel = 0) {
  return add(p, r, StepKind::Recv, peer, bytes, std::move(deps), -1, channel);
}

SimOptions overhead(double us) {
  SimOptions o;
  o.step_overhead_us = us;
  return o;
}

TEST(Simulator, SingleTransferIsSizeOverBandwidthPlusLatencyPlusOverhead) {
  const double B = 25.0, a = 3.0, o = 1.5;
  const std::uint64_t S = 100'000'000;
  const topo::Topology t = chain(2, B, a);
  Plan p = emptyPlan(2, S);
  send(p, 0, 1, S, addRoute(p, {0, 1}));
  recv(p, 1, 0, S);
  const auto result = plan::simulate(p, t, overhead(o));
  const double expected = static_cast<double>(S) / (B * kGB) + (a + o) * kUs;
  expectRel(result.seconds, expected);
  EXPECT_EQ(result.transfers, 1u);
  expectRel(result.busiest_link_utilisation, static_cast<double>(S) / (B * kGB) / expected);

  // The default overhead is 1 us.
  expectRel(plan::simulate(p, t).seconds, static_cast<double>(S) / (B * kGB) + (a + 1.0) * kUs);
}

TEST(Simulator, HopUsesEveryLinkBetweenThePairAndItsMultiplicity) {
  const double B = 20.0, P = 12.0;
  const std::uint64_t S = 64'000'000;
  topo::Topology t = gpus(2);
  t.addLink(0, 1, nvlink(B, 2.0, 2));
  topo::Link pcie;
  pcie.kind = topo::LinkKind::Pcie;
  pcie.gbps = P;
  pcie.latency_us = 4.0;
  t.addLink(0, 1, pcie);
  Plan p = emptyPlan(2, S);
  send(p, 0, 1, S, addRoute(p, {0, 1}));
  recv(p, 1, 0, S);
  // Striped over both links: the slower link's latency applies.
  expectRel(plan::simulate(p, t, overhead(0)).seconds,
            static_cast<double>(S) / ((2 * B + P) * kGB) + 4.0 * kUs);
}

TEST(Simulator, TwoTransfersSharingOneLinkEachGetHalf) {
  const double B = 10.0;
  const std::uint64_t S = 50'000'000;
  const topo::Topology t = chain(3, B, 0.0);
  {
    Plan p = emptyPlan(2, S);
    const int route = addRoute(p, {0, 1});
    send(p, 0, 1, S, route);
    send(p, 0, 1, S, route);
    recv(p, 1, 0, S);
    recv(p, 1, 0, S);
    const auto result = plan::simulate(p, t, overhead(0));
    expectRel(result.seconds, 2.0 * static_cast<double>(S) / (B * kGB));
    EXPECT_EQ(result.transfers, 2u);
    expectRel(result.busiest_link_utilisation, 1.0);
  }
  {
    // S and 2S: B/2 each until the small one ends at 2S/B, then B for the rest.
    Plan p = emptyPlan(2, 2 * S);
    const int route = addRoute(p, {0, 1});
    send(p, 0, 1, S, route);
    send(p, 0, 1, 2 * S, route);
    recv(p, 1, 0, S);
    recv(p, 1, 0, 2 * S);
    expectRel(plan::simulate(p, t, overhead(0)).seconds, 3.0 * static_cast<double>(S) / (B * kGB));
  }
  {
    // 0 -> 1 -> 2 and 1 -> 2 share the hop 1 -> 2.
    Plan p = emptyPlan(3, S);
    send(p, 0, 2, S, addRoute(p, {0, 1, 2}));
    send(p, 1, 2, S, addRoute(p, {1, 2}));
    recv(p, 2, 0, S);
    recv(p, 2, 1, S);
    expectRel(plan::simulate(p, t, overhead(0)).seconds, 2.0 * static_cast<double>(S) / (B * kGB));
  }
}

TEST(Simulator, SharesAreMaxMinFair) {
  // 0 -> 1 has B, 1 -> 2 has 3B. f1: 0->1, f2: 0->1->2, f3: 1->2. The bottleneck
  // 0 -> 1 gives f1 and f2 B/2 each; f3 gets what is left of 1 -> 2: 2.5 B.
  const double B = 8.0;
  const std::uint64_t S = 40'000'000;
  topo::Topology t = gpus(3);
  t.addLink(0, 1, nvlink(B, 0.0));
  t.addLink(1, 2, nvlink(3 * B, 0.0));
  Plan p = emptyPlan(3, 3 * S);
  send(p, 0, 1, S, addRoute(p, {0, 1}));
  send(p, 0, 2, S, addRoute(p, {0, 1, 2}));
  send(p, 1, 2, 5 * S / 2, addRoute(p, {1, 2}));
  recv(p, 1, 0, S);
  recv(p, 2, 0, S);
  recv(p, 2, 1, 5 * S / 2);
  const auto result = plan::simulate(p, t, overhead(0));
  expectRel(result.seconds, 2.0 * static_cast<double>(S) / (B * kGB));
  expectRel(result.busiest_link_utilisation, 1.0);
}

TEST(Simulator, ChannelSharesDivideALinkInProportion) {
  // One 10 GB/s link; channel 0 (share 3) moves 3S, channel 1 (share 1) moves S.
  // Under the shares both run at their proportions and end together at 4S/B; under
  // equal shares channel 1 ends at 2S/B and channel 0 at the same 4S/B.
  const double B = 10.0;
  const std::uint64_t S = 25'000'000;
  const topo::Topology t = chain(2, B, 0.0);
  Plan p = emptyPlan(2, 4 * S);
  const int route = addRoute(p, {0, 1});
  send(p, 0, 1, 3 * S, route, {}, 0);
  send(p, 0, 1, S, route, {}, 1);
  recv(p, 1, 0, 3 * S, {}, 0);
  recv(p, 1, 0, S, {}, 1);
  const double all = 4.0 * static_cast<double>(S) / (B * kGB);
  {
    Plan shared = p;
    shared.channel_shares = {3.0, 1.0};
    const auto result = plan::simulate(shared, t, overhead(0));
    expectRel(result.seconds, all);
    ASSERT_EQ(result.channel_seconds.size(), 2u);
    expectRel(result.channel_seconds[0], all);
    expectRel(result.channel_seconds[1], all);
  }
  {
    const auto result = plan::simulate(p, t, overhead(0));
    expectRel(result.seconds, all);
    ASSERT_EQ(result.channel_seconds.size(), 2u);
    expectRel(result.channel_seconds[0], all);
    expectRel(result.channel_seconds[1], all / 2);
  }
}

TEST(Simulator, SharesAreWeightedMaxMinFair) {
  // 0 -> 1 has B, 1 -> 2 has 2B. f1: 0->1 (share 1), f2: 0->1->2 (share 3), f3:
  // 1->2 (share 1). Filling by share: 0 -> 1 fills first, at B/4 per unit of share
  // (f1 B/4, f2 3B/4; 1 -> 2 would fill at 2B/4); f3 gets what f2 leaves of 1 -> 2:
  // 5B/4. (Equal shares would give f1 and f2 B/2 each.)
  const double B = 8.0;
  const std::uint64_t S = 40'000'000;
  topo::Topology t = gpus(3);
  t.addLink(0, 1, nvlink(B, 0.0));
  t.addLink(1, 2, nvlink(2 * B, 0.0));
  Plan p = emptyPlan(3, 5 * S);
  p.channel_shares = {1.0, 3.0, 1.0};
  send(p, 0, 1, S, addRoute(p, {0, 1}), {}, 0);
  send(p, 0, 2, 3 * S, addRoute(p, {0, 1, 2}), {}, 1);
  send(p, 1, 2, 5 * S, addRoute(p, {1, 2}), {}, 2);
  recv(p, 1, 0, S, {}, 0);
  recv(p, 2, 0, 3 * S, {}, 1);
  recv(p, 2, 1, 5 * S, {}, 2);
  const auto result = plan::simulate(p, t, overhead(0));
  // S at B/4, 3S at 3B/4 and 5S at 5B/4: all end at 4S/B.
  expectRel(result.seconds, 4.0 * static_cast<double>(S) / (B * kGB));
  ASSERT_EQ(result.channel_seconds.size(), 3u);
  for (double c : result.channel_seconds) expectRel(c, result.seconds);
}

TEST(Simulator, AFlowEndingMovesRatesBeyondItsOwnHops) {
  // 0 -> 1 has B, 1 -> 2 has 2B. f1: 0->1 (S), f2: 0->1->2 (4S), f3: 1->2 (6S).
  // Until f1 ends at 2S/B: f1 = f2 = B/2, f3 = 1.5B. Then f2 = B, and f3, which
  // shares no hop with f1, drops to B: both end at 5S/B. (Rates recomputed only
  // around f1's hop would leave f3 at 1.5B and overload 1 -> 2.)
  const double B = 10.0;
  const std::uint64_t S = 10'000'000;
  topo::Topology t = gpus(3);
  t.addLink(0, 1, nvlink(B, 0.0));
  t.addLink(1, 2, nvlink(2 * B, 0.0));
  Plan p = emptyPlan(3, 6 * S);
  send(p, 0, 1, S, addRoute(p, {0, 1}), {}, 0);
  send(p, 0, 2, 4 * S, addRoute(p, {0, 1, 2}), {}, 1);
  send(p, 1, 2, 6 * S, addRoute(p, {1, 2}), {}, 2);
  recv(p, 1, 0, S, {}, 0);
  recv(p, 2, 0, 4 * S, {}, 1);
  recv(p, 2, 1, 6 * S, {}, 2);
  const auto result = plan::simulate(p, t, overhead(0));
  const double unit = static_cast<double>(S) / (B * kGB);
  expectRel(result.seconds, 5.0 * unit);
  ASSERT_EQ(result.channel_seconds.size(), 3u);
  expectRel(result.channel_seconds[0], 2.0 * unit);
  expectRel(result.channel_seconds[1], 5.0 * unit);
  expectRel(result.channel_seconds[2], 5.0 * unit);
  expectRel(result.busiest_link_utilisation, 1.0);
}

TEST(Simulator, BadChannelSharesThrow) {
  const topo::Topology t = chain(2, 10.0, 1.0);
  Plan p = emptyPlan(2, 1000);
  send(p, 0, 1, 1000, addRoute(p, {0, 1}), {}, 1);
  recv(p, 1, 0, 1000, {}, 1);
  p.channel_shares = {1.0};  // channel 1 has none
  std::string message;
  EXPECT_EQ(statusOf([&] { plan::simulate(p, t); }, &message), blinkInvalidInput);
  EXPECT_NE(message.find("has no share"), std::string::npos) << message;
  p.channel_shares = {1.0, 0.0};
  EXPECT_EQ(statusOf([&] { plan::simulate(p, t); }), blinkInvalidInput);
  p.channel_shares = {1.0, 2.0};
  EXPECT_EQ(statusOf([&] { plan::simulate(p, t); }), blinkSuccess);
  // The structural check agrees, and the shares are part of the plan's hash.
  EXPECT_NO_THROW(plan::validateStructure(p));
  Plan q = p;
  q.channel_shares = {1.0, 3.0};
  EXPECT_NE(p.hash(), q.hash());
  q.channel_shares = {1.0};
  EXPECT_THROW(plan::validateStructure(q), Error);
}

// Rank 0 sends k chunks of c bytes down the chain 0 -> 1 -> ... -> n-1, one after
// the other; every middle rank forwards chunk j once it has it and has sent j-1.
Plan chainBroadcast(int n, int k, std::uint64_t c) {
  Plan p = emptyPlan(n, c * static_cast<std::uint64_t>(k));
  p.chunk_bytes = c;
  std::vector<int> hop;
  for (int i = 0; i + 1 < n; ++i) {
    hop.push_back(addRoute(p, {static_cast<topo::Vertex>(i), static_cast<topo::Vertex>(i + 1)}));
  }
  for (int j = 0; j < k; ++j) {
    const std::uint64_t offset = c * static_cast<std::uint64_t>(j);
    for (int i = 0; i < n; ++i) {
      int got = -1;
      if (i > 0) got = add(p, i, StepKind::Recv, i - 1, c, {}, -1, 0, offset);
      if (i + 1 < n) {
        std::vector<int> deps;
        if (got >= 0) deps.push_back(got);
        const int steps = static_cast<int>(p.ranks[static_cast<std::size_t>(i)].steps.size());
        if (j > 0) deps.push_back(i == 0 ? steps - 1 : steps - 2);  // the previous send
        add(p, i, StepKind::Send, i + 1, c, deps, hop[static_cast<std::size_t>(i)], 0, offset);
      }
    }
  }
  return p;
}

TEST(Simulator, PipelinedChainBroadcast) {
  const double B = 20.0, a = 2.0;
  const std::uint64_t c = 4'000'000;
  for (int n : {2, 3, 5}) {
    for (int k : {1, 4, 8}) {
      const topo::Topology t = chain(n, B, a);
      const Plan p = chainBroadcast(n, k, c);
      const auto result = plan::simulate(p, t, overhead(0));
      expectRel(result.seconds, (k + n - 2) * (static_cast<double>(c) / (B * kGB) + a * kUs));
      EXPECT_EQ(result.transfers, static_cast<std::size_t>(k * (n - 1)));
    }
  }
}

TEST(Simulator, LargePipelinedChainBroadcastIsFast) {
  // 100k transfers.
  const double B = 25.0, a = 1.0;
  const std::uint64_t c = 64 * 1024;
  const int n = 6, k = 20000;
  const topo::Topology t = chain(n, B, a);
  const Plan p = chainBroadcast(n, k, c);
  const auto result = plan::simulate(p, t, overhead(0));
  EXPECT_EQ(result.transfers, 100000u);
  expectRel(result.seconds, (k + n - 2) * (static_cast<double>(c) / (B * kGB) + a * kUs));
}

// The standard ring AllReduce: n-1 reduce-scatter steps then n-1 allgather steps;
// at each step rank r sends one segment to r+1 and receives one from r-1.
Plan ringAllReduce(int n, std::uint64_t bytes) {
  Plan p = emptyPlan(n, bytes);
  p.collective = plan::Collective::AllReduce;
  p.algorithm = "ring";
  p.element_size = 4;
  std::vector<int> right;
  for (int r = 0; r < n; ++r) {
    right.push_back(
        addRoute(p, {static_cast<topo::Vertex>(r), static_cast<topo::Vertex>((r + 1) % n)}));
  }
  auto mod = [n](int x) { return ((x % n) + n) % n; };
  for (int r = 0; r < n; ++r) {
    for (int s = 0; s < 2 * (n - 1); ++s) {
      const bool reduce = s < n - 1;
      const int u = reduce ? s : s - (n - 1);
      const int out = reduce ? mod(r - u) : mod(r + 1 - u);
      const int in = reduce ? mod(r - u - 1) : mod(r - u);
      std::vector<int> deps;
      if (s > 0) deps.push_back(2 * s - 1);  // the previous receive
      add(p, r, StepKind::Send, (r + 1) % n, p.segmentBytes(out), deps,
          right[static_cast<std::size_t>(r)], 0, p.segmentOffset(out));
      add(p, r, reduce ? StepKind::RecvReduce : StepKind::Recv, mod(r - 1), p.segmentBytes(in),
          deps, -1, 0, p.segmentOffset(in));
    }
  }
  plan::validateStructure(p);
  return p;
}

TEST(Simulator, RingAllReduce) {
  const double B = 25.0, a = 5.0;
  for (int n : {2, 4, 8}) {
    const std::uint64_t S = 4ull * 1'000'000 * static_cast<std::uint64_t>(n);
    const Plan p = ringAllReduce(n, S);
    const double segment = static_cast<double>(S) / n / (B * kGB);
    {
      const auto result = plan::simulate(p, ring(n, B, a), overhead(0));
      const double expected = 2.0 * (n - 1) * (segment + a * kUs);
      expectRel(result.seconds, expected);
      expectRel(result.seconds,
                2.0 * (n - 1) / n * static_cast<double>(S) / (B * kGB) + 2.0 * (n - 1) * a * kUs);
      EXPECT_EQ(result.transfers, static_cast<std::size_t>(2 * n * (n - 1)));
      expectRel(result.busiest_link_utilisation, 2.0 * (n - 1) * segment / expected);
    }
    // No latency: every ring link is busy all the time.
    expectRel(plan::simulate(p, ring(n, B, 0.0), overhead(0)).busiest_link_utilisation, 1.0);
    // The overhead is paid once per step.
    expectRel(plan::simulate(p, ring(n, B, a), overhead(2.0)).seconds,
              2.0 * (n - 1) * (segment + (a + 2.0) * kUs));
  }
}

TEST(Simulator, CopiesRunAtTheFastestLinkOfTheGpu) {
  const std::uint64_t S = 30'000'000;
  {
    topo::Topology t = gpus(3);
    t.addDuplexLink(0, 1, nvlink(10.0, 1.0));
    t.addLink(2, 0, nvlink(15.0, 1.0, 2));  // 30 GB/s into GPU 0
    Plan p = emptyPlan(2, 2 * S);
    const int copy = add(p, 0, StepKind::Copy, -1, S);
    send(p, 0, 1, S, addRoute(p, {0, 1}), {copy});
    recv(p, 1, 0, S);
    const auto result = plan::simulate(p, t, overhead(0));
    expectRel(result.seconds, static_cast<double>(S) / (30.0 * kGB) +
                                  static_cast<double>(S) / (10.0 * kGB) + 1.0 * kUs);
    EXPECT_EQ(result.transfers, 1u);
  }
  {
    // A GPU without links copies at 10 GB/s; copies use no links.
    const topo::Topology t = gpus(1);
    Plan p = emptyPlan(1, 2 * S);
    const int first = add(p, 0, StepKind::Copy, -1, S);
    add(p, 0, StepKind::Copy, -1, S, {first});
    const auto result = plan::simulate(p, t);
    expectRel(result.seconds, 2.0 * static_cast<double>(S) / (10.0 * kGB));
    EXPECT_EQ(result.transfers, 0u);
    EXPECT_EQ(result.busiest_link_utilisation, 0.0);
  }
}

TEST(Simulator, TransferWaitsForBothSides) {
  // Rank 1's receive waits on a local copy, so the data starts moving only then.
  const double B = 10.0, a = 3.0, o = 0.5;
  const std::uint64_t S = 20'000'000, C = 5'000'000;
  const topo::Topology t = chain(2, B, a);
  Plan p = emptyPlan(2, S);
  send(p, 0, 1, S, addRoute(p, {0, 1}));
  const int copy = add(p, 1, StepKind::Copy, -1, C);
  recv(p, 1, 0, S, {copy});
  expectRel(
      plan::simulate(p, t, overhead(o)).seconds,
      static_cast<double>(C) / (B * kGB) + (a + o) * kUs + static_cast<double>(S) / (B * kGB));
}

TEST(Simulator, EmptyAndZeroBytePlans) {
  const topo::Topology t = chain(2, 10.0, 2.0);
  EXPECT_EQ(plan::simulate(emptyPlan(2, 0), t).seconds, 0.0);
  Plan p = emptyPlan(2, 0);
  send(p, 0, 1, 0, addRoute(p, {0, 1}));
  recv(p, 1, 0, 0);
  expectRel(plan::simulate(p, t, overhead(1.0)).seconds, 3.0 * kUs);
}

TEST(Simulator, IsDeterministic) {
  const Plan p = ringAllReduce(8, 8 * 4 * 12345);
  const topo::Topology t = ring(8, 25.0, 1.0);
  const auto a = plan::simulate(p, t);
  const auto b = plan::simulate(p, t);
  EXPECT_EQ(a.seconds, b.seconds);
  EXPECT_EQ(a.busiest_link_utilisation, b.busiest_link_utilisation);
}

TEST(Simulator, HopWithoutLinkThrows) {
  const topo::Topology t = chain(3, 10.0, 1.0);
  Plan p = emptyPlan(3, 1000);
  send(p, 0, 2, 1000, addRoute(p, {0, 2}));
  recv(p, 2, 0, 1000);
  std::string message;
  EXPECT_EQ(statusOf([&] { plan::simulate(p, t); }, &message), blinkInvalidInput);
  EXPECT_NE(message.find("gpu0 -> gpu2"), std::string::npos) << message;
  EXPECT_NE(message.find("no link"), std::string::npos) << message;

  p.routes[0] = {0, 7};  // not a vertex
  EXPECT_EQ(statusOf([&] { plan::simulate(p, t); }), blinkInvalidInput);
}

TEST(Simulator, DeadlockThrows) {
  // Each rank receives before it sends.
  const topo::Topology t = chain(2, 10.0, 1.0);
  Plan p = emptyPlan(2, 1000);
  for (int r = 0; r < 2; ++r) {
    const int got = recv(p, r, 1 - r, 1000);
    send(p, r, 1 - r, 1000,
         addRoute(p, {static_cast<topo::Vertex>(r), static_cast<topo::Vertex>(1 - r)}), {got});
  }
  std::string message;
  EXPECT_EQ(statusOf([&] { plan::simulate(p, t); }, &message), blinkInvalidInput);
  EXPECT_NE(message.find("deadlock"), std::string::npos) << message;
}

TEST(Simulator, MatchingIsFifoPerChannel) {
  // Rank 0 sends on channel 0 then (after it) on channel 1; rank 1 receives channel 1
  // first. Matched per channel, the first receive waits for the second send, which
  // waits for the first send, whose receive waits for the first receive: deadlock.
  const topo::Topology t = chain(2, 10.0, 1.0);
  Plan p = emptyPlan(2, 1000);
  const int route = addRoute(p, {0, 1});
  const int first = send(p, 0, 1, 500, route, {}, 0);
  send(p, 0, 1, 500, route, {first}, 1);
  const int got = recv(p, 1, 0, 500, {}, 1);
  recv(p, 1, 0, 500, {got}, 0);
  EXPECT_EQ(statusOf([&] { plan::simulate(p, t); }), blinkInvalidInput);

  // The same on one channel matches in order and completes.
  p.ranks[0].steps[1].channel = 0;
  p.ranks[1].steps[0].channel = 0;
  expectRel(plan::simulate(p, t, overhead(0)).seconds, 2.0 * (500.0 / (10.0 * kGB) + kUs));

  // A send without a receive is reported.
  p.ranks[1].steps.pop_back();
  std::string message;
  EXPECT_EQ(statusOf([&] { plan::simulate(p, t); }, &message), blinkInvalidInput);
  EXPECT_NE(message.find("no matching receive"), std::string::npos) << message;
}

}  // namespace
