// Bandwidth and latency of each link generation (NVLink 1-5, PCIe gen 3-5 at each
// width, CPU interconnects, InfiniBand and Ethernet rates). Discovery and the zoo
// take link speeds from here; users override them (BLINK_LINK_GBPS, or the
// --link-gbps option of the tools) with what they measured.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "topology/topology.hpp"

namespace blink::topo {

struct LinkGeneration {
  std::string name;  // "nvlink2", "pcie4x16", "ib-hdr", ...
  LinkKind kind;
  double gbps;              // per lane, per direction, GB/s
  double latency_us;        // one-way, small message
  std::string what;         // "NVLink 2.0 (V100)"
  bool overridden = false;  // gbps comes from BLINK_LINK_GBPS / --link-gbps
};

class LinkTable {
 public:
  // The built-in table (payload rates: PCIe after 128b/130b encoding, NVLink per link).
  static LinkTable builtin();
  // The built-in table with the overrides of BLINK_LINK_GBPS applied.
  static LinkTable fromEnvironment();

  // Throws blinkInvalidInput naming the unknown generation and listing known ones.
  const LinkGeneration& get(std::string_view name) const;
  bool contains(std::string_view name) const;
  // A Link of this generation with `multiplicity` lanes; its source is Override when
  // the generation's speed was overridden, else Table.
  Link makeLink(std::string_view generation, int multiplicity = 1) const;
  // "nvlink2=22.5,pcie3x16=12": sets the per-lane bandwidth of each named generation.
  // Throws blinkInvalidInput on an unknown name or a non-positive/non-numeric value.
  void applyOverrides(std::string_view spec);
  const std::vector<LinkGeneration>& all() const { return generations_; }

  // The PCIe generation name for gen (3..5) and width (1,2,4,8,16): "pcie3x16".
  static std::string pcieName(int gen, int width);

 private:
  std::vector<LinkGeneration> generations_;
};

}  // namespace blink::topo
