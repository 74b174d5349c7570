#include "topology/link_table.hpp"

#include <charconv>
#include <cmath>

#include "common/env.hpp"
#include "common/error.hpp"

namespace blink::topo {

std::string LinkTable::pcieName(int gen, int width) {
  return "pcie" + std::to_string(gen) + "x" + std::to_string(width);
}

LinkTable LinkTable::builtin() {
  LinkTable t;
  auto add = [&](std::string name, LinkKind kind, double gbps, double lat, std::string what) {
    t.generations_.push_back({std::move(name), kind, gbps, lat, std::move(what), false});
  };
  // NVLink: GB/s per link per direction.
  add("nvlink1", LinkKind::NvLink, 20.0, 0.7, "NVLink 1.0 (P100)");
  add("nvlink2", LinkKind::NvLink, 25.0, 0.7, "NVLink 2.0 (V100)");
  add("nvlink3", LinkKind::NvLink, 25.0, 0.7, "NVLink 3.0 (A100)");
  add("nvlink4", LinkKind::NvLink, 25.0, 0.7, "NVLink 4.0 (H100)");
  add("nvlink5", LinkKind::NvLink, 50.0, 0.7, "NVLink 5.0 (B200)");
  // PCIe: per-lane payload rate per direction (8, 16, 32 GT/s with 128b/130b).
  const double transfers_per_ns[] = {0.0, 0.0, 0.0, 8.0, 16.0, 32.0};
  for (int gen = 3; gen <= 5; ++gen) {
    const double lane_gbps = transfers_per_ns[gen] * (128.0 / 130.0) / 8.0;
    for (int width : {1, 2, 4, 8, 16}) {
      add(pcieName(gen, width), LinkKind::Pcie, lane_gbps * width, 1.0,
          "PCIe gen" + std::to_string(gen) + " x" + std::to_string(width));
    }
  }
  // CPU socket interconnects.
  add("qpi", LinkKind::Smp, 19.2, 0.3, "Intel QPI 9.6 GT/s");
  add("upi", LinkKind::Smp, 20.8, 0.3, "Intel UPI 10.4 GT/s");
  add("xgmi", LinkKind::Smp, 32.0, 0.3, "AMD Infinity Fabric (socket to socket)");
  // Networks: GB/s per port per direction.
  add("ib-edr", LinkKind::Network, 12.5, 2.0, "InfiniBand EDR 100 Gb/s");
  add("ib-hdr", LinkKind::Network, 25.0, 2.0, "InfiniBand HDR 200 Gb/s");
  add("ib-ndr", LinkKind::Network, 50.0, 2.0, "InfiniBand NDR 400 Gb/s");
  add("ib-xdr", LinkKind::Network, 100.0, 2.0, "InfiniBand XDR 800 Gb/s");
  add("eth-10g", LinkKind::Network, 1.25, 10.0, "Ethernet 10 Gb/s");
  add("eth-25g", LinkKind::Network, 3.125, 8.0, "Ethernet 25 Gb/s");
  add("eth-100g", LinkKind::Network, 12.5, 5.0, "Ethernet 100 Gb/s");
  add("eth-200g", LinkKind::Network, 25.0, 5.0, "Ethernet 200 Gb/s");
  add("eth-400g", LinkKind::Network, 50.0, 5.0, "Ethernet 400 Gb/s");
  // Host memory between processes of one node.
  add("shm", LinkKind::SharedMemory, 10.0, 0.5, "shared memory copy between processes");
  return t;
}

LinkTable LinkTable::fromEnvironment() {
  LinkTable t = builtin();
  if (auto spec = env::get("BLINK_LINK_GBPS")) t.applyOverrides(*spec);
  return t;
}

bool LinkTable::contains(std::string_view name) const {
  for (const auto& g : generations_) {
    if (g.name == name) return true;
  }
  return false;
}

const LinkGeneration& LinkTable::get(std::string_view name) const {
  for (const auto& g : generations_) {
    if (g.name == name) return g;
  }
  std::string known;
  for (const auto& g : generations_) known += (known.empty() ? "" : ", ") + g.name;
  throw Error(blinkInvalidInput,
              "unknown link generation '" + std::string(name) + "' (known: " + known + ")");
}

Link LinkTable::makeLink(std::string_view generation, int multiplicity) const {
  const LinkGeneration& g = get(generation);
  Link link;
  link.kind = g.kind;
  link.gbps = g.gbps;
  link.multiplicity = multiplicity;
  link.latency_us = g.latency_us;
  link.generation = g.name;
  link.source = g.overridden ? LinkSource::Override : LinkSource::Table;
  return link;
}

void LinkTable::applyOverrides(std::string_view spec) {
  std::string_view rest = spec;
  while (!rest.empty()) {
    auto comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    auto eq = item.find('=');
    if (eq == std::string_view::npos) {
      throw Error(blinkInvalidInput, "link bandwidth override '" + std::string(item) +
                                         "' is not NAME=GBPS (e.g. nvlink2=22.5)");
    }
    std::string name(item.substr(0, eq));
    std::string value(item.substr(eq + 1));
    double gbps = 0.0;
    auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), gbps);
    // The range every link must keep (Topology::addLink), said here where it is typed.
    if (ec != std::errc() || ptr != value.data() + value.size() || !(gbps >= kMinLaneGbps) ||
        !(gbps <= kMaxLaneGbps)) {
      throw Error(blinkInvalidInput, "link bandwidth override '" + std::string(item) + "': '" +
                                         value + "' is not a number of GB/s in 0.001..10000");
    }
    (void)get(name);  // throws for an unknown generation
    for (auto& g : generations_) {
      if (g.name == name) {
        g.gbps = gbps;
        g.overridden = true;
      }
    }
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
}

}  // namespace blink::topo
