#include "transport/socket/tcp_address.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <algorithm>

namespace blink::transport {

std::vector<Ipv4Interface> upIpv4InterfacesWithMasks(const std::string& preferred) {
  std::vector<Ipv4Interface> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (const ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    if ((i->ifa_flags & IFF_UP) == 0 || (i->ifa_flags & IFF_RUNNING) == 0) continue;
    if ((i->ifa_flags & IFF_LOOPBACK) != 0) continue;
    Ipv4Interface entry;
    entry.address = ntohl(reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr);
    if (i->ifa_netmask != nullptr) {
      entry.netmask = ntohl(reinterpret_cast<const sockaddr_in*>(i->ifa_netmask)->sin_addr.s_addr);
    }
    out.push_back(entry);
  }
  freeifaddrs(list);
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

std::string dottedAddress(std::uint32_t address) {
  return std::to_string(address >> 24) + "." + std::to_string((address >> 16) & 255) + "." +
         std::to_string((address >> 8) & 255) + "." + std::to_string(address & 255);
}

}  // namespace blink::transport
