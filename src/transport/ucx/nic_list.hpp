// The network devices UCX sends on, one per "NIC" of the inter-node phase, in the
// order of topology/host_nics.hpp (NIC k here is NIC "nic<k>" of the job's graph).
#pragma once

#include <string>
#include <vector>

namespace blink::transport {

struct Nic {
  std::string device;        // as UCX_NET_DEVICES takes it; "" for UCX's own choice
  double gbps = 0.0;         // per direction, 0 when unknown
  std::string speed_source;  // "sysfs", "unknown"
};

// Never empty: without devices (or BLINK_UCX_NICS=all), one Nic with device ""
// (UCX chooses).
std::vector<Nic> discoverNics();

}  // namespace blink::transport
