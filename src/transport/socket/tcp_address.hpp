// Which of a peer's IPv4 addresses a TCP connection goes to. Every rank publishes
// the addresses of its interfaces that are up (loopback excluded), the one of the
// NIC its plan sends through first; the connecting rank picks the first of them in a
// subnet it has an address in itself, else the first at all, and never one of its
// own addresses: a bridge such as docker0 has the same address on every host, so a
// connection there would reach the connecting host itself.
#pragma once

#include <string>
#include <vector>

#include "topology/host_nics.hpp"

namespace blink::transport {

using topo::dottedAddress;
using topo::Ipv4Interface;

// The IPv4 interfaces that are up, loopback excluded, `preferred` (a dotted address,
// "" for none) first where it is one of them.
std::vector<Ipv4Interface> upIpv4AddressesPreferredFirst(const std::string& preferred);

// The index in `peer` to connect to, or -1 where every address is one of `mine`.
int chooseAddress(const std::vector<Ipv4Interface>& mine, const std::vector<Ipv4Interface>& peer);

}  // namespace blink::transport
