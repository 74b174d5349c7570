// The network devices of this machine that UCX can send on, one per "NIC" of the
// inter-node phase: the active InfiniBand/RoCE ports (UCX names them mlx5_0:1) when
// there are any, else the IPv4 interfaces that are up (eth0), loopback excluded.
// BLINK_UCX_NICS names them instead (UCX_NET_DEVICES syntax, comma-separated), or
// `all` for one context over whatever UCX picks by itself.
#pragma once

#include <string>
#include <vector>

namespace blink::transport {

struct Nic {
  std::string device;        // as UCX_NET_DEVICES takes it; "" for UCX's own choice
  double gbps = 0.0;         // per direction, 0 when unknown
  std::string speed_source;  // "sysfs", "unknown"
};

// `sysfs_root` is /sys except in tests. Never empty: without devices, one Nic with
// device "" (UCX chooses).
std::vector<Nic> discoverNics(const std::string& sysfs_root = "/sys");

}  // namespace blink::transport
