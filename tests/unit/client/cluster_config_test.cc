// Unit tests for client::ClusterConfig::from_toml_string and from_server_list.
#include "farmem/client/cluster_config.h"

#include <gtest/gtest.h>

#include <string>

namespace farmem::client {
namespace {

Result<ClusterConfig> Parse(const std::string& text) {
  return ClusterConfig::from_toml_string(text);
}

constexpr const char* kOneNode = "[[memnode]]\naddress = \"127.0.0.1:7000\"\n";

void ExpectInvalid(const std::string& text, std::string_view message_part) {
  SCOPED_TRACE(text);
  Result<ClusterConfig> r = Parse(text);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find(message_part), std::string_view::npos)
      << r.status().message();
}

TEST(ClusterConfigTest, SingleNodeWithDefaultOptions) {
  Result<ClusterConfig> r = Parse(kOneNode);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_EQ(r->memnodes.size(), 1u);
  EXPECT_EQ(r->memnodes[0].host, "127.0.0.1");
  EXPECT_EQ(r->memnodes[0].port, 7000);
  const ClientOptions& o = r->options;
  EXPECT_EQ(o.op_timeout_ms, 5000u);
  EXPECT_EQ(o.connect_timeout_ms, 5000u);
  EXPECT_EQ(o.max_coroutines, 4096u);
  EXPECT_EQ(o.max_inflight, 16384u);
  EXPECT_EQ(o.throttle, runtime::ThrottleMode::kOff);
  EXPECT_EQ(o.throttle_cap, 16u);
  EXPECT_TRUE(o.backoff);
  EXPECT_EQ(o.chunk_bytes, 1ull << 20);
  EXPECT_TRUE(o.direct_access);
  EXPECT_EQ(o.tls, "");
  EXPECT_EQ(o.net_devices, "");
}

TEST(ClusterConfigTest, NodesKeepTheirOrder) {
  Result<ClusterConfig> r = Parse(R"(
    [[memnode]]
    address = "node-a:7000"
    [[memnode]]
    address = "node-b:7001"
    [[memnode]]
    address = "10.1.2.3:9000"
  )");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_EQ(r->memnodes.size(), 3u);
  EXPECT_EQ(r->memnodes[0].host, "node-a");
  EXPECT_EQ(r->memnodes[1].host, "node-b");
  EXPECT_EQ(r->memnodes[1].port, 7001);
  EXPECT_EQ(r->memnodes[2].host, "10.1.2.3");
  EXPECT_EQ(r->memnodes[2].port, 9000);
}

TEST(ClusterConfigTest, EveryClientKeyIsRead) {
  Result<ClusterConfig> r = Parse(std::string(kOneNode) + R"(
    [client]
    op_timeout_ms = 250
    connect_timeout_ms = 1500
    max_coroutines = 128
    max_inflight = 512
    throttle = "fixed"
    throttle_cap = 8
    backoff = false
    chunk_bytes = "4MiB"
    direct_access = false
    tls = "tcp"
    net_devices = "eth0"
  )");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const ClientOptions& o = r->options;
  EXPECT_EQ(o.op_timeout_ms, 250u);
  EXPECT_EQ(o.connect_timeout_ms, 1500u);
  EXPECT_EQ(o.max_coroutines, 128u);
  EXPECT_EQ(o.max_inflight, 512u);
  EXPECT_EQ(o.throttle, runtime::ThrottleMode::kFixed);
  EXPECT_EQ(o.throttle_cap, 8u);
  EXPECT_FALSE(o.backoff);
  EXPECT_EQ(o.chunk_bytes, 4ull << 20);
  EXPECT_FALSE(o.direct_access);
  EXPECT_EQ(o.tls, "tcp");
  EXPECT_EQ(o.net_devices, "eth0");
}

TEST(ClusterConfigTest, EmptyClientTableKeepsDefaults) {
  Result<ClusterConfig> r = Parse(std::string(kOneNode) + "[client]\n");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->options.op_timeout_ms, 5000u);
  EXPECT_EQ(r->options.chunk_bytes, 1ull << 20);
}

TEST(ClusterConfigTest, EveryThrottleModeParses) {
  struct Case {
    const char* text;
    runtime::ThrottleMode mode;
  };
  for (Case c :
       {Case{"off", runtime::ThrottleMode::kOff}, Case{"fixed", runtime::ThrottleMode::kFixed},
        Case{"adaptive", runtime::ThrottleMode::kAdaptive}}) {
    Result<ClusterConfig> r =
        Parse(std::string(kOneNode) + "[client]\nthrottle = \"" + c.text + "\"\n");
    ASSERT_TRUE(r.ok()) << c.text << ": " << r.status().to_string();
    EXPECT_EQ(r->options.throttle, c.mode);
  }
}

TEST(ClusterConfigTest, BadThrottleValuesAreErrors) {
  std::string base = std::string(kOneNode) + "[client]\n";
  ExpectInvalid(base + "throttle = \"turbo\"\n", "turbo");
  ExpectInvalid(base + "throttle = \"Adaptive\"\n", "off|fixed|adaptive");
  ExpectInvalid(base + "throttle = 1\n", "client.throttle must be a string");
  ExpectInvalid(base + "throttle_cap = 0\n", "client.throttle_cap");
  ExpectInvalid(base + "throttle_cap = 1000001\n", "client.throttle_cap");
  ExpectInvalid(base + "throttle_cap = \"16\"\n", "client.throttle_cap must be an integer");
}

TEST(ClusterConfigTest, ChunkBytesAcceptsStringOrIntegerWithin4KiBTo1GiB) {
  std::string base = std::string(kOneNode) + "[client]\n";
  Result<ClusterConfig> a = Parse(base + "chunk_bytes = 4096\n");
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  EXPECT_EQ(a->options.chunk_bytes, 4096u);
  Result<ClusterConfig> b = Parse(base + "chunk_bytes = \"1GiB\"\n");
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  EXPECT_EQ(b->options.chunk_bytes, 1ull << 30);
  ExpectInvalid(base + "chunk_bytes = 4095\n", "chunk_bytes");
  ExpectInvalid(base + "chunk_bytes = \"2GiB\"\n", "chunk_bytes");
  ExpectInvalid(base + "chunk_bytes = -4096\n", "chunk_bytes");
  ExpectInvalid(base + "chunk_bytes = \"big\"\n", "big");
}

TEST(ClusterConfigTest, IntegerOptionRangesAreEnforced) {
  std::string base = std::string(kOneNode) + "[client]\n";
  ExpectInvalid(base + "op_timeout_ms = 0\n", "client.op_timeout_ms");
  ExpectInvalid(base + "op_timeout_ms = 3600001\n", "client.op_timeout_ms");
  ExpectInvalid(base + "connect_timeout_ms = 0\n", "client.connect_timeout_ms");
  ExpectInvalid(base + "max_coroutines = 0\n", "client.max_coroutines");
  ExpectInvalid(base + "max_coroutines = 1000001\n", "client.max_coroutines");
  ExpectInvalid(base + "max_inflight = 15\n", "client.max_inflight");
  ExpectInvalid(base + "max_inflight = 1000001\n", "client.max_inflight");
  ExpectInvalid(base + "op_timeout_ms = 1.5\n", "client.op_timeout_ms must be an integer");
  Result<ClusterConfig> edges = Parse(base +
                                      "op_timeout_ms = 1\nconnect_timeout_ms = 3600000\n"
                                      "max_coroutines = 1\nmax_inflight = 16\n");
  ASSERT_TRUE(edges.ok()) << edges.status().to_string();
  EXPECT_EQ(edges->options.op_timeout_ms, 1u);
  EXPECT_EQ(edges->options.connect_timeout_ms, 3'600'000u);
  EXPECT_EQ(edges->options.max_coroutines, 1u);
  EXPECT_EQ(edges->options.max_inflight, 16u);
}

TEST(ClusterConfigTest, DirectAccessIsABoolean) {
  std::string base = std::string(kOneNode) + "[client]\n";
  Result<ClusterConfig> on = Parse(base + "direct_access = true\n");
  ASSERT_TRUE(on.ok()) << on.status().to_string();
  EXPECT_TRUE(on->options.direct_access);
  Result<ClusterConfig> off = Parse(base + "direct_access = false\n");
  ASSERT_TRUE(off.ok()) << off.status().to_string();
  EXPECT_FALSE(off->options.direct_access);
  ExpectInvalid(base + "direct_access = \"false\"\n", "client.direct_access must be true or false");
  ExpectInvalid(base + "direct_access = 0\n", "client.direct_access must be true or false");
  ExpectInvalid(base + "direct_access = \"off\"\n", "client.direct_access must be true or false");
  ExpectInvalid(base + "direct = true\n", "unknown key client.direct");
}

TEST(ClusterConfigTest, WrongTypesForStringAndBoolKeysAreErrors) {
  std::string base = std::string(kOneNode) + "[client]\n";
  ExpectInvalid(base + "backoff = \"yes\"\n", "client.backoff must be true or false");
  ExpectInvalid(base + "tls = 3\n", "client.tls must be a string");
  ExpectInvalid(base + "net_devices = [\"eth0\"]\n", "client.net_devices must be a string");
}

// TOML integers and booleans are distinct types: `backoff = 1` or `max_coroutines = true` must be
// rejected rather than converted.
TEST(ClusterConfigTest, IntegersAndBooleansAreNotInterchangeable) {
  std::string base = std::string(kOneNode) + "[client]\n";
  ExpectInvalid(base + "backoff = 1\n", "client.backoff must be true or false");
  ExpectInvalid(base + "backoff = 0\n", "client.backoff must be true or false");
  ExpectInvalid(base + "max_coroutines = true\n", "client.max_coroutines must be an integer");
  ExpectInvalid(base + "chunk_bytes = true\n", "client.chunk_bytes must be a size");
}

TEST(ClusterConfigTest, BadAddressesAreErrors) {
  ExpectInvalid("[[memnode]]\naddress = \"localhost\"\n", "localhost");
  ExpectInvalid("[[memnode]]\naddress = \"localhost:0\"\n", "invalid port");
  ExpectInvalid("[[memnode]]\naddress = \"localhost:70000\"\n", "invalid port");
  ExpectInvalid("[[memnode]]\naddress = \":7000\"\n", "host:port");
  ExpectInvalid("[[memnode]]\naddress = 7000\n", "needs address");
  ExpectInvalid("[[memnode]]\n", "needs address");
  // One bad node spoils the whole config.
  ExpectInvalid(std::string(kOneNode) + "[[memnode]]\naddress = \"x:\"\n", "x:");
}

TEST(ClusterConfigTest, UnknownKeysAndSectionsAreErrors) {
  ExpectInvalid("[[memnode]]\naddress = \"a:1\"\nport = 2\n", "unknown key memnode.port");
  ExpectInvalid(std::string(kOneNode) + "[client]\nop_timeout = 5\n",
                "unknown key client.op_timeout");
  ExpectInvalid(std::string(kOneNode) + "[server]\nx = 1\n", "unknown config section 'server'");
  ExpectInvalid(std::string("verbose = true\n") + kOneNode, "unknown config section 'verbose'");
}

TEST(ClusterConfigTest, MemnodesMustBeAnArrayOfTables) {
  ExpectInvalid("", "no [[memnode]]");
  ExpectInvalid("[client]\nop_timeout_ms = 5\n", "no [[memnode]]");
  ExpectInvalid("[memnode]\naddress = \"a:1\"\n", "no [[memnode]]");
  ExpectInvalid("memnode = [\"a:1\"]\n", "must be a table");
}

TEST(ClusterConfigTest, InvalidTomlIsAnError) {
  ExpectInvalid("[[memnode]\naddress = \"a:1\"\n", "not valid TOML");
  ExpectInvalid("[[memnode]]\naddress = a:1\n", "not valid TOML");
}

TEST(ClusterConfigTest, ServerListParsesCommaSeparatedNodes) {
  Result<ClusterConfig> r = ClusterConfig::from_server_list("a:1,b:2,10.0.0.1:7000");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_EQ(r->memnodes.size(), 3u);
  EXPECT_EQ(r->memnodes[0].host, "a");
  EXPECT_EQ(r->memnodes[0].port, 1);
  EXPECT_EQ(r->memnodes[1].host, "b");
  EXPECT_EQ(r->memnodes[1].port, 2);
  EXPECT_EQ(r->memnodes[2].host, "10.0.0.1");
  EXPECT_EQ(r->memnodes[2].port, 7000);
  EXPECT_EQ(r->options.op_timeout_ms, ClientOptions().op_timeout_ms);
}

TEST(ClusterConfigTest, ServerListSkipsEmptyItems) {
  Result<ClusterConfig> r = ClusterConfig::from_server_list(",a:1,,b:2,");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_EQ(r->memnodes.size(), 2u);
  EXPECT_EQ(r->memnodes[0].host, "a");
  EXPECT_EQ(r->memnodes[1].host, "b");
}

TEST(ClusterConfigTest, ServerListSingleNode) {
  Result<ClusterConfig> r = ClusterConfig::from_server_list("localhost:7000");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_EQ(r->memnodes.size(), 1u);
  EXPECT_EQ(r->memnodes[0].host, "localhost");
}

TEST(ClusterConfigTest, ServerListRejectsBadAddressesAndEmptyLists) {
  for (const char* bad : {"a:1,b", "a:1,b:0", "a:1,:5", "a:99999", "nohost"}) {
    Result<ClusterConfig> r = ClusterConfig::from_server_list(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
  }
  for (const char* empty : {"", ",", ",,,"}) {
    Result<ClusterConfig> r = ClusterConfig::from_server_list(empty);
    ASSERT_FALSE(r.ok()) << "'" << empty << "'";
    EXPECT_NE(r.status().message().find("at least one memory node"), std::string_view::npos);
  }
}

TEST(ClusterConfigTest, ValidateRequiresANodeAndASaneChunkSize) {
  ClusterConfig c;
  EXPECT_EQ(c.validate().code(), StatusCode::kInvalidArgument);
  c.memnodes.push_back(HostPort{"h", 1});
  EXPECT_TRUE(c.validate().ok());
  c.options.chunk_bytes = 1024;
  EXPECT_EQ(c.validate().code(), StatusCode::kInvalidArgument);
}

TEST(ClusterConfigTest, DownNodesParseAndMustBeListed) {
  const std::string two =
      "[[memnode]]\naddress = \"127.0.0.1:7000\"\n[[memnode]]\naddress = \"127.0.0.1:7001\"\n";
  auto r = Parse(two + "[client]\ndown_nodes = \"127.0.0.1:7001=3\"\n");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_EQ(r->options.down_nodes.size(), 1u);
  EXPECT_EQ(r->options.down_nodes[0].address.port, 7001);
  EXPECT_EQ(r->options.down_nodes[0].node_id, 3);
  ExpectInvalid(two + "[client]\ndown_nodes = \"127.0.0.1:7002=3\"\n", "not one of the listed");
  ExpectInvalid(two + "[client]\ndown_nodes = \"127.0.0.1:7001\"\n", "host:port=ID");
  ExpectInvalid(two + "[client]\ndown_nodes = \"127.0.0.1:7001=x\"\n", "0..65535");
  ExpectInvalid(two + "[client]\ndown_nodes = \"127.0.0.1:7000=1,127.0.0.1:7001=1\"\n",
                "named twice");
  ExpectInvalid(two + "[client]\ndown_nodes = \"127.0.0.1:7000=1,127.0.0.1:7001=2\"\n",
                "every listed memory node is down");
  auto none = parse_down_nodes("");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

}  // namespace
}  // namespace farmem::client
