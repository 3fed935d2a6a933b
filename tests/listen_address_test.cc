// Listening addresses: parsing with the flag named in errors, and which pairs overlap (the
// admin service must never land on the clients' port).
#include <gtest/gtest.h>

#include "server/listen_address.h"

namespace xlate::server {
namespace {

TEST(ListenAddress, ParsesHostsAndPorts) {
  auto v4 = parse_listen_address("127.0.0.1:56051", "--admin_address");
  ASSERT_TRUE(v4.ok());
  EXPECT_EQ(v4->host, "127.0.0.1");
  EXPECT_EQ(v4->port, 56051);
  auto v6 = parse_listen_address("[::1]:0", "--admin_address");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 0);
  auto name = parse_listen_address("LocalHost:9", "--admin_address");
  ASSERT_TRUE(name.ok());
  EXPECT_EQ(name->host, "localhost");
}

TEST(ListenAddress, BadAddressesNameTheFlagAndTheForm) {
  for (const char* bad : {"127.0.0.1", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:-1",
                          "::1:50051", "[::1:50051", "host:port"}) {
    auto parsed = parse_listen_address(bad, "--admin_address");
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_NE(parsed.status().message().find("--admin_address"), std::string::npos);
    EXPECT_NE(parsed.status().message().find("HOST:PORT"), std::string::npos);
  }
}

TEST(ListenAddress, OverlapsOnTheSameHostOrAWildcard) {
  EXPECT_TRUE(hosts_overlap("127.0.0.1", "127.0.0.1"));
  EXPECT_TRUE(hosts_overlap("0.0.0.0", "127.0.0.1"));
  EXPECT_TRUE(hosts_overlap("10.1.2.3", "0.0.0.0"));
  EXPECT_TRUE(hosts_overlap("::", "::1"));
  EXPECT_TRUE(hosts_overlap("", "10.1.2.3"));
  EXPECT_TRUE(hosts_overlap("localhost", "127.0.0.1"));
  EXPECT_TRUE(hosts_overlap("::1", "localhost"));
  EXPECT_FALSE(hosts_overlap("127.0.0.1", "10.1.2.3"));
  EXPECT_FALSE(hosts_overlap("localhost", "10.1.2.3"));
}

TEST(ListenAddress, LoopbackHosts) {
  EXPECT_TRUE(is_loopback_host("127.0.0.1"));
  EXPECT_TRUE(is_loopback_host("127.3.2.1"));
  EXPECT_TRUE(is_loopback_host("::1"));
  EXPECT_TRUE(is_loopback_host("localhost"));
  EXPECT_FALSE(is_loopback_host("0.0.0.0"));
  EXPECT_FALSE(is_loopback_host("10.0.0.1"));
  EXPECT_FALSE(is_loopback_host("::"));
}

}  // namespace
}  // namespace xlate::server
