// Which of a peer's addresses the sockets transport dials (transport/socket/tcp_address.hpp).
#include <gtest/gtest.h>

#include <algorithm>

#include "transport/socket/tcp_address.hpp"

namespace blink::transport {
namespace {

constexpr std::uint32_t ip(unsigned a, unsigned b, unsigned c, unsigned d) {
  return (a << 24) | (b << 16) | (c << 8) | d;
}
constexpr std::uint32_t k24 = 0xffffff00u;
constexpr std::uint32_t k16 = 0xffff0000u;

TEST(ChooseAddress, TakesThePeersAddressInASubnetThisHostHas) {
  const std::vector<Ipv4Interface> mine = {{ip(10, 1, 0, 1), k24, {}}, {ip(10, 2, 0, 1), k24, {}}};
  const std::vector<Ipv4Interface> peer = {{ip(192, 168, 5, 7), k24, {}},
                                           {ip(10, 2, 0, 9), k24, {}}};
  EXPECT_EQ(chooseAddress(mine, peer), 1);
}

TEST(ChooseAddress, KeepsThePeersOrderAmongSharedSubnets) {
  // The peer lists its plan NIC first: that one, though both are reachable.
  const std::vector<Ipv4Interface> mine = {{ip(10, 1, 0, 1), k24, {}}, {ip(10, 2, 0, 1), k24, {}}};
  const std::vector<Ipv4Interface> peer = {{ip(10, 2, 0, 9), k24, {}}, {ip(10, 1, 0, 9), k24, {}}};
  EXPECT_EQ(chooseAddress(mine, peer), 0);
}

TEST(ChooseAddress, NeverDialsAnAddressThisHostHasItself) {
  // docker0 is 172.17.0.1 on every host: dialling it would reach this host.
  const std::vector<Ipv4Interface> mine = {{ip(172, 17, 0, 1), k16, {}},
                                           {ip(10, 1, 0, 1), k24, {}}};
  const std::vector<Ipv4Interface> peer = {{ip(172, 17, 0, 1), k16, {}},
                                           {ip(10, 1, 0, 2), k24, {}}};
  EXPECT_EQ(chooseAddress(mine, peer), 1);
}

TEST(ChooseAddress, FallsBackToTheFirstRoutedAddress) {
  // No subnet in common (hosts behind routers): the first address not this host's.
  const std::vector<Ipv4Interface> mine = {{ip(172, 17, 0, 1), k16, {}},
                                           {ip(10, 1, 0, 1), k24, {}}};
  const std::vector<Ipv4Interface> peer = {
      {ip(172, 17, 0, 1), k16, {}}, {ip(10, 9, 0, 2), k24, {}}, {ip(10, 8, 0, 2), k24, {}}};
  EXPECT_EQ(chooseAddress(mine, peer), 1);
}

TEST(ChooseAddress, NoneWhereEveryAddressIsThisHosts) {
  const std::vector<Ipv4Interface> mine = {{ip(10, 1, 0, 1), k24, {}}};
  EXPECT_EQ(chooseAddress(mine, {{ip(10, 1, 0, 1), k24, {}}}), -1);
  EXPECT_EQ(chooseAddress(mine, {}), -1);
}

TEST(ChooseAddress, AnInterfaceWithoutMaskMatchesNoSubnet) {
  const std::vector<Ipv4Interface> mine = {{ip(10, 1, 0, 1), 0, {}}, {ip(10, 2, 0, 1), k24, {}}};
  const std::vector<Ipv4Interface> peer = {{ip(10, 3, 0, 5), k24, {}}, {ip(10, 2, 0, 5), k24, {}}};
  EXPECT_EQ(chooseAddress(mine, peer), 1);
}

TEST(DottedAddress, WritesEachByte) {
  EXPECT_EQ(dottedAddress(ip(10, 77, 0, 255)), "10.77.0.255");
  EXPECT_EQ(dottedAddress(0), "0.0.0.0");
}

TEST(UpInterfaces, PutsThePreferredAddressFirst) {
  const auto all = upIpv4AddressesPreferredFirst("");
  if (all.size() < 2) GTEST_SKIP() << "needs two IPv4 interfaces that are up";
  const auto last = all.back().address;
  const auto preferred = upIpv4AddressesPreferredFirst(dottedAddress(last));
  ASSERT_EQ(preferred.size(), all.size());
  EXPECT_EQ(preferred.front().address, last);
}

// The NIC list (topology/host_nics.hpp) and the addresses published here come from
// one scan: each interface once, with its first address, in the same order.
TEST(UpInterfaces, TheNicListNamesEachInterfaceOnceWithItsFirstAddress) {
  const auto addresses = topo::upIpv4Addresses();
  const auto interfaces = topo::upIpv4Interfaces();
  std::vector<std::pair<std::string, std::string>> want;
  for (const auto& a : addresses) {
    EXPECT_NE(a.netmask, 0u) << a.name;
    if (want.empty() || want.back().first != a.name) {
      want.emplace_back(a.name, dottedAddress(a.address));
    }
  }
  EXPECT_EQ(interfaces, want);
  EXPECT_TRUE(std::is_sorted(interfaces.begin(), interfaces.end()));
}

}  // namespace
}  // namespace blink::transport
