// Fuzz target: the importer of NCCL's topology XML (topology/nccl_xml.cpp), on any
// bytes. What it imports must be a topology Blink's own format can hold.
#include "fuzz_support.hpp"
#include "topology/nccl_xml.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace blink;
  const std::string origin = "fuzz-input.xml";
  const std::string xml(fuzz::asText(data, size));
  const auto topology = fuzz::readOrReject(
      [&] { return topo::importNcclXmlString(xml, origin, fuzz::linkTable()); }, origin);
  if (topology) fuzz::checkJsonRoundTrip(*topology);
  return 0;
}
