// Fuzz target: planning on whatever the readers accept. The input is four bytes of
// call parameters followed by a topology, Blink JSON (first non-blank character
// '{') or NCCL XML (anything else):
//   byte 0: the collective (mod 5: broadcast, reduce, allgather, reducescatter,
//           allreduce), then (byte 0 / 5) bit 0: pack with the paper's MWU instead
//           of the exact method, bit 1: minimise the tree count (tolerance 0.05);
//   byte 1: the root rank (mod the GPU count);
//   bytes 2-3: the element count per rank segment, 1 + (big-endian value mod 4096).
// The planner builds every candidate (packed trees, hierarchical, ring, double
// binary tree), simulates them and keeps the fastest; the symbolic executor must
// then prove that the chosen plan, and each of Blink's own candidates, computes its
// collective. Planning may refuse a
// topology it cannot serve (unreachable GPUs, ...) with a blink::Error, but never
// with blinkInternalError, which marks a broken invariant.
//
// Planning time grows fast with the graph, and the planning budget that bounds it
// (BLINK_PLAN_BUDGET_MS) is not there yet: topologies over kMaxGpus GPUs or
// kMaxLinks links are skipped so that each input stays well under libFuzzer's
// -timeout.
#include <cctype>
#include <cmath>
#include <utility>
#include <vector>

#include "fuzz_support.hpp"
#include "plan/planner.hpp"
#include "plan/symbolic_executor.hpp"
#include "topology/nccl_xml.hpp"

namespace {

constexpr std::size_t kParameterBytes = 4;
constexpr std::size_t kMaxGpus = 24;
constexpr std::size_t kMaxLinks = 200;
constexpr std::uint64_t kMaxElements = 4096;

constexpr blink::plan::Collective kCollectives[] = {
    blink::plan::Collective::Broadcast, blink::plan::Collective::Reduce,
    blink::plan::Collective::AllGather, blink::plan::Collective::ReduceScatter,
    blink::plan::Collective::AllReduce};

bool looksLikeJson(std::string_view text) {
  for (char c : text) {
    if (!std::isspace(static_cast<unsigned char>(c))) return c == '{';
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace blink;
  if (size < kParameterBytes) return 0;
  const std::string_view text = fuzz::asText(data + kParameterBytes, size - kParameterBytes);
  const bool json = looksLikeJson(text);
  const std::string origin = json ? "fuzz-input.json" : "fuzz-input.xml";
  const auto topology = fuzz::readOrReject(
      [&] {
        return json ? topo::fromJson(text, origin, fuzz::linkTable())
                    : topo::importNcclXmlString(std::string(text), origin, fuzz::linkTable());
      },
      origin);
  if (!topology) return 0;
  const std::size_t gpus = topology->gpus().size();
  if (gpus == 0 || gpus > kMaxGpus || topology->numLinks() > kMaxLinks) return 0;

  const plan::Collective collective = kCollectives[data[0] % std::size(kCollectives)];
  const int root_rank = static_cast<int>(data[1] % gpus);
  const std::uint64_t elements = 1 + ((std::uint64_t{data[2]} << 8 | data[3]) % kMaxElements);
  const bool segmented =
      collective == plan::Collective::AllGather || collective == plan::Collective::ReduceScatter;
  plan::PlannerOptions options;
  const unsigned packing = data[0] / std::size(kCollectives);
  if (packing & 1u) options.pack.method = treegen::Method::Mwu;
  if (packing & 2u) {
    options.pack.minimize = true;
    options.pack.tolerance = 0.05;
  }
  const std::uint64_t bytes =
      elements * static_cast<std::uint64_t>(options.lower.element_size) * (segmented ? gpus : 1);

  plan::Choice choice;
  std::vector<std::pair<plan::Plan, double>> blink_plans;
  try {
    choice = plan::choosePlan(collective, *topology, bytes, root_rank, options);
    // The baselines often win at these sizes; Blink's own plans must be right too.
    // (The trees come from the cache the first call filled.)
    blink_plans = plan::blinkCandidates(collective, *topology, bytes, root_rank, options);
  } catch (const Error& e) {
    if (e.status() == blinkInternalError) {
      fuzz::finding(std::string("planning broke an invariant: ") + e.what() + "\n" +
                    fuzz::describe(*topology));
    }
    return 0;
  }
  const plan::SymbolicResult proof = plan::runSymbolic(choice.plan);
  if (!proof.ok) {
    fuzz::finding("the planner chose a wrong plan (" + choice.why + "): " + proof.error + "\n" +
                  fuzz::describe(*topology));
  }
  for (const auto& [candidate, seconds] : blink_plans) {
    const plan::SymbolicResult candidate_proof = plan::runSymbolic(candidate);
    if (!candidate_proof.ok) {
      fuzz::finding("the planner's candidate " + candidate.algorithm +
                    " is wrong: " + candidate_proof.error + "\n" + fuzz::describe(*topology));
    }
  }
  // One GPU moves nothing; any more must take some time.
  if (!std::isfinite(choice.seconds) || choice.seconds < 0.0 ||
      (gpus > 1 && choice.seconds == 0.0)) {
    fuzz::finding("the chosen plan's predicted time is " + std::to_string(choice.seconds) + " (" +
                  choice.why + ")\n" + fuzz::describe(*topology));
  }
  return 0;
}
