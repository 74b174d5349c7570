#include "transport/ucx/nic_list.hpp"

#include "topology/host_nics.hpp"

namespace blink::transport {

std::vector<Nic> discoverNics() {
  std::vector<Nic> nics;
  for (const topo::HostNic& nic : topo::hostNics()) {
    nics.push_back(Nic{nic.device, nic.gbps, nic.speed_source});
  }
  if (nics.empty()) nics.push_back(Nic{"", 0.0, "unknown"});
  return nics;
}

}  // namespace blink::transport
