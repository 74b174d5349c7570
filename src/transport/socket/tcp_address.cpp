#include "transport/socket/tcp_address.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>

namespace blink::transport {

std::vector<Ipv4Interface> upIpv4AddressesPreferredFirst(const std::string& preferred) {
  std::vector<Ipv4Interface> out = topo::upIpv4Addresses();
  in_addr first{};
  if (!preferred.empty() && inet_pton(AF_INET, preferred.c_str(), &first) == 1) {
    const std::uint32_t want = ntohl(first.s_addr);
    std::stable_partition(out.begin(), out.end(),
                          [&](const Ipv4Interface& e) { return e.address == want; });
  }
  return out;
}

int chooseAddress(const std::vector<Ipv4Interface>& mine, const std::vector<Ipv4Interface>& peer) {
  auto isMine = [&](std::uint32_t address) {
    return std::any_of(mine.begin(), mine.end(),
                       [&](const Ipv4Interface& m) { return m.address == address; });
  };
  auto sharesSubnet = [&](const Ipv4Interface& p) {
    return std::any_of(mine.begin(), mine.end(), [&](const Ipv4Interface& m) {
      return m.netmask != 0 && (m.address & m.netmask) == (p.address & m.netmask);
    });
  };
  int first_other = -1;
  for (std::size_t k = 0; k < peer.size(); ++k) {
    if (isMine(peer[k].address)) continue;
    if (sharesSubnet(peer[k])) return static_cast<int>(k);
    if (first_other < 0) first_other = static_cast<int>(k);
  }
  return first_other;
}

}  // namespace blink::transport
