// Unit tests for memnode::ServerConfig::from_toml_string and validate().
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "farmem/memnode/config.h"

namespace farmem::memnode {
namespace {

Result<ServerConfig> Parse(const std::string& text) { return ServerConfig::from_toml_string(text); }

void ExpectInvalid(const std::string& text, std::string_view message_part) {
  SCOPED_TRACE(text);
  Result<ServerConfig> r = Parse(text);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find(message_part), std::string_view::npos)
      << r.status().message();
}

TEST(ServerConfigTest, EmptyMemnodeTableGivesDefaults) {
  Result<ServerConfig> r = Parse("[memnode]\n");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ServerConfig defaults;
  EXPECT_EQ(r->node_id, 0);
  EXPECT_EQ(r->listen, "127.0.0.1");  // loopback unless told otherwise
  EXPECT_EQ(r->port, 7000);
  EXPECT_EQ(r->max_sessions, 1024u);
  EXPECT_EQ(r->door_timeout_ms, 2000u);
  EXPECT_EQ(r->cluster_key_file, "");
  EXPECT_EQ(r->capacity_bytes, 1ull << 30);
  EXPECT_EQ(r->workers, 1u);
  EXPECT_EQ(r->idle_spin_us, 200u);
  EXPECT_EQ(r->tls, "");
  EXPECT_EQ(r->node_id, defaults.node_id);
  EXPECT_EQ(r->capacity_bytes, defaults.capacity_bytes);
  EXPECT_TRUE(defaults.validate().ok());
}

TEST(ServerConfigTest, EveryKeyIsRead) {
  Result<ServerConfig> r = Parse(R"(
    # a full config
    [memnode]
    node_id = 12
    listen = "10.0.0.5"
    port = 7100
    capacity = "64MiB"
    workers = 4
    idle_spin_us = 0
    tls = "rc,sm"
  )");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->node_id, 12);
  EXPECT_EQ(r->listen, "10.0.0.5");
  EXPECT_EQ(r->port, 7100);
  EXPECT_EQ(r->capacity_bytes, 64ull << 20);
  EXPECT_EQ(r->workers, 4u);
  EXPECT_EQ(r->idle_spin_us, 0u);
  EXPECT_EQ(r->tls, "rc,sm");
}

TEST(ServerConfigTest, CapacityAcceptsAStringOrAnInteger) {
  Result<ServerConfig> s = Parse("[memnode]\ncapacity = \"2g\"\n");
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_EQ(s->capacity_bytes, 2ull << 30);
  Result<ServerConfig> i = Parse("[memnode]\ncapacity = 1048576\n");
  ASSERT_TRUE(i.ok()) << i.status().to_string();
  EXPECT_EQ(i->capacity_bytes, 1ull << 20);
}

TEST(ServerConfigTest, CapacityBoundsAre64KiBAnd256TiB) {
  EXPECT_TRUE(Parse("[memnode]\ncapacity = \"64KiB\"\n").ok());
  EXPECT_TRUE(Parse("[memnode]\ncapacity = \"256TiB\"\n").ok());
  ExpectInvalid("[memnode]\ncapacity = 65535\n", "64 KiB");
  ExpectInvalid("[memnode]\ncapacity = \"257TiB\"\n", "256 TiB");
}

TEST(ServerConfigTest, BadCapacityValuesAreErrors) {
  ExpectInvalid("[memnode]\ncapacity = 0\n", "positive");
  ExpectInvalid("[memnode]\ncapacity = -5\n", "positive");
  ExpectInvalid("[memnode]\ncapacity = \"lots\"\n", "memnode.capacity");
  ExpectInvalid("[memnode]\ncapacity = \"1PiB\"\n", "memnode.capacity");
  ExpectInvalid("[memnode]\ncapacity = [1]\n", "memnode.capacity");
  ExpectInvalid("[memnode]\ncapacity = 2021-01-01\n", "memnode.capacity");
}

TEST(ServerConfigTest, IntegerKeysAcceptTheirRangeBounds) {
  Result<ServerConfig> low = Parse(
      "[memnode]\nnode_id = 0\nport = 0\nworkers = 1\n"
      "idle_spin_us = 0\n");
  ASSERT_TRUE(low.ok()) << low.status().to_string();
  EXPECT_EQ(low->port, 0);
  Result<ServerConfig> high = Parse(
      "[memnode]\nnode_id = 65535\nport = 65520\nworkers = 16\n"
      "idle_spin_us = 10000000\n");
  ASSERT_TRUE(high.ok()) << high.status().to_string();
  EXPECT_EQ(high->node_id, 65535);
  EXPECT_EQ(high->port, 65520);
  EXPECT_EQ(high->workers, 16u);
  EXPECT_EQ(high->idle_spin_us, 10'000'000u);
}

TEST(ServerConfigTest, OutOfRangeIntegersAreErrors) {
  ExpectInvalid("[memnode]\nnode_id = -1\n", "memnode.node_id");
  ExpectInvalid("[memnode]\nnode_id = 65536\n", "memnode.node_id");
  ExpectInvalid("[memnode]\nport = -1\n", "memnode.port");
  ExpectInvalid("[memnode]\nport = 65536\n", "memnode.port");
  ExpectInvalid("[memnode]\nworkers = 0\n", "memnode.workers");
  ExpectInvalid("[memnode]\nworkers = 17\n", "memnode.workers");
  ExpectInvalid("[memnode]\nidle_spin_us = -1\n", "memnode.idle_spin_us");
  ExpectInvalid("[memnode]\nidle_spin_us = 10000001\n", "memnode.idle_spin_us");
}

TEST(ServerConfigTest, OnePortServesEveryWorker) {
  // The door is one port whatever the worker count.
  EXPECT_TRUE(Parse("[memnode]\nport = 65535\nworkers = 16\n").ok());
  EXPECT_TRUE(Parse("[memnode]\nport = 0\nworkers = 16\n").ok());
  ExpectInvalid("[memnode]\nport = 65536\n", "out of range");
  ExpectInvalid("[memnode]\nport = -5\n", "out of range");
}

TEST(ServerConfigTest, SessionAndDoorBoundsAreChecked) {
  auto r = Parse(
      "[memnode]\nmax_sessions = 8\ndoor_timeout_ms = 50\n"
      "cluster_key_file = \"/etc/farmem/key\"\n");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->max_sessions, 8u);
  EXPECT_EQ(r->door_timeout_ms, 50u);
  EXPECT_EQ(r->cluster_key_file, "/etc/farmem/key");
  ExpectInvalid("[memnode]\nmax_sessions = 0\n", "out of range");
  ExpectInvalid("[memnode]\nmax_sessions = 65537\n", "out of range");
  ExpectInvalid("[memnode]\ndoor_timeout_ms = 5\n", "out of range");
  ExpectInvalid("[memnode]\ncluster_key = \"secret\"\n", "unknown key memnode.cluster_key");
}

TEST(ServerConfigTest, ClusterKeyComesFromAFileWithoutItsNewline) {
  char path[] = "/tmp/farmem-key-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, "s3cret\n", 7), 7);
  close(fd);
  ServerConfig c;
  c.cluster_key_file = path;
  ASSERT_TRUE(c.load_cluster_key().ok());
  EXPECT_EQ(c.cluster_key, "s3cret");
  c.cluster_key_file = std::string(path) + ".missing";
  EXPECT_EQ(c.load_cluster_key().code(), StatusCode::kInvalidArgument);
  unlink(path);
}

TEST(ServerConfigTest, WrongValueTypesAreErrors) {
  ExpectInvalid("[memnode]\nnode_id = \"3\"\n", "memnode.node_id must be an integer");
  ExpectInvalid("[memnode]\nworkers = 1.5\n", "memnode.workers must be an integer");
  ExpectInvalid("[memnode]\nlisten = 5\n", "memnode.listen must be a string");
  ExpectInvalid("[memnode]\ntls = false\n", "memnode.tls must be a string");
}

// TOML booleans are not integers: `port = true` must not silently become port 1.
TEST(ServerConfigTest, BooleansAreNotAcceptedAsIntegers) {
  ExpectInvalid("[memnode]\nport = true\n", "memnode.port must be an integer");
  ExpectInvalid("[memnode]\nnode_id = false\n", "memnode.node_id must be an integer");
  ExpectInvalid("[memnode]\nworkers = true\n", "memnode.workers must be an integer");
  ExpectInvalid("[memnode]\ncapacity = true\n", "memnode.capacity must be a size");
}

TEST(ServerConfigTest, UnknownKeyIsAnError) {
  ExpectInvalid("[memnode]\ncapacityy = \"1GiB\"\n", "unknown key memnode.capacityy");
  ExpectInvalid("[memnode]\nport = 7000\nthreads = 2\n", "memnode.threads");
}

TEST(ServerConfigTest, UnknownSectionIsAnError) {
  ExpectInvalid("[memnode]\n[client]\nop_timeout_ms = 5\n", "unknown config section 'client'");
  ExpectInvalid("[memnodes]\nport = 1\n", "memnodes");
  ExpectInvalid("node_id = 1\n[memnode]\n", "node_id");  // a top-level key
}

TEST(ServerConfigTest, MissingMemnodeTableIsAnError) {
  ExpectInvalid("", "[memnode]");
  ExpectInvalid("# only a comment\n", "[memnode]");
  ExpectInvalid("memnode = 5\n", "[memnode]");
}

TEST(ServerConfigTest, InvalidTomlIsAnErrorWithALineNumber) {
  ExpectInvalid("[memnode]\nport = \n", "not valid TOML");
  ExpectInvalid("[memnode\n", "not valid TOML");
  ExpectInvalid("[memnode]\nport = 7000\nport = 7001\n", "not valid TOML");  // duplicate key
  Result<ServerConfig> r = Parse("[memnode]\nnode_id = 1\nlisten = \"unterminated\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("line 3"), std::string_view::npos) << r.status().message();
}

TEST(ServerConfigTest, ValidateChecksAProgrammaticConfig) {
  ServerConfig c;
  EXPECT_TRUE(c.validate().ok());
  c.capacity_bytes = 1024;
  EXPECT_EQ(c.validate().code(), StatusCode::kInvalidArgument);
  c.capacity_bytes = (1ull << 48) + 1;
  EXPECT_EQ(c.validate().code(), StatusCode::kInvalidArgument);
  c.capacity_bytes = 1ull << 48;
  EXPECT_TRUE(c.validate().ok());
  c.workers = 0;
  EXPECT_EQ(c.validate().code(), StatusCode::kInvalidArgument);
  c.workers = 17;
  EXPECT_EQ(c.validate().code(), StatusCode::kInvalidArgument);
  c.workers = 16;
  c.port = 65535;
  EXPECT_TRUE(c.validate().ok());
  c.max_sessions = 0;
  EXPECT_EQ(c.validate().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace farmem::memnode

namespace farmem::memnode {
namespace {

TEST(ServerConfigTest, ADataDirectoryMakesTheNodeDurableAtPowerUnlessToldProcess) {
  Result<ServerConfig> none = Parse("[memnode]\n");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->durability, storage::Durability::kVolatile);
  Result<ServerConfig> power = Parse("[memnode]\ndata_dir = \"/var/lib/farmem\"\n");
  ASSERT_TRUE(power.ok()) << power.status().to_string();
  EXPECT_EQ(power->data_dir, "/var/lib/farmem");
  EXPECT_EQ(power->durability, storage::Durability::kPower);
  Result<ServerConfig> process =
      Parse("[memnode]\ndata_dir = \"d\"\ndurability = \"process\"\ncheckpoint_log = \"1MiB\"\n");
  ASSERT_TRUE(process.ok()) << process.status().to_string();
  EXPECT_EQ(process->durability, storage::Durability::kProcess);
  EXPECT_EQ(process->checkpoint_log_bytes, 1u << 20);
}

TEST(ServerConfigTest, DurabilityWithoutADirectoryOrVolatileWithOneIsRefused) {
  ExpectInvalid("[memnode]\ndurability = \"power\"\n", "needs a data directory");
  ExpectInvalid("[memnode]\ndata_dir = \"d\"\ndurability = \"volatile\"\n", "durable");
  ExpectInvalid("[memnode]\ndata_dir = \"d\"\ndurability = \"disk\"\n", "power");
  ExpectInvalid("[memnode]\ndata_dir = \"d\"\ncheckpoint_log = \"4KiB\"\n", "64 KiB");
}

TEST(ServerConfigTest, ARegionFileIsForVolatileNodesOnly) {
  ServerConfig c;
  c.region_file = "/tmp/region.map";
  EXPECT_TRUE(c.validate().ok());
  c.data_dir = "d";
  c.durability = storage::Durability::kPower;
  const Status s = c.validate();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("not a durability mode"), std::string::npos) << s.to_string();
}

}  // namespace
}  // namespace farmem::memnode
