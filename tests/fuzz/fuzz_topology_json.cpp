// Fuzz target: Blink's JSON topology reader (topology/topology_json.cpp), on any
// bytes. Accepted files must survive an export/import round trip unchanged.
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace blink;
  const std::string origin = "fuzz-input.json";
  const auto topology = fuzz::readOrReject(
      [&] { return topo::fromJson(fuzz::asText(data, size), origin, fuzz::linkTable()); }, origin);
  if (topology) fuzz::checkJsonRoundTrip(*topology);
  return 0;
}
