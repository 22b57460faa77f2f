// Unit tests for parse_bytes and parse_host_port.
#include "farmem/common/units.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace farmem {
namespace {

struct BytesCase {
  const char* text;
  uint64_t expected;
};

TEST(ParseBytesTest, AcceptsPlainIntegersAndEverySuffix) {
  const std::vector<BytesCase> cases = {
      {"0", 0},
      {"4096", 4096},
      {"7b", 7},
      {"7B", 7},
      {"1k", 1ull << 10},
      {"1K", 1ull << 10},
      {"2KB", 2ull << 10},
      {"3KiB", 3ull << 10},
      {"3kib", 3ull << 10},
      {"64MiB", 64ull << 20},
      {"64mb", 64ull << 20},
      {"5m", 5ull << 20},
      {"1G", 1ull << 30},
      {"1gb", 1ull << 30},
      {"2GiB", 2ull << 30},
      {"1T", 1ull << 40},
      {"1tb", 1ull << 40},
      {"256TiB", 256ull << 40},
  };
  for (const BytesCase& c : cases) {
    SCOPED_TRACE(c.text);
    Result<uint64_t> r = parse_bytes(c.text);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_EQ(*r, c.expected);
  }
}

TEST(ParseBytesTest, TrimsSurroundingWhitespace) {
  Result<uint64_t> r = parse_bytes("  16KiB \t\n");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(*r, 16ull << 10);
}

TEST(ParseBytesTest, AcceptsTheLargestValueThatFits) {
  Result<uint64_t> r = parse_bytes("18446744073709551615");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, UINT64_MAX);
  Result<uint64_t> t = parse_bytes("16777215T");  // (2^24 - 1) * 2^40 < 2^64
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(*t, ((1ull << 24) - 1) << 40);
}

TEST(ParseBytesTest, RejectsMalformedInputWithInvalidArgument) {
  const std::vector<std::string> bad = {
      "",      "   ",  "abc", "MiB",   "-1",   "+5",  "1.5G",
      "1 MiB", "1PiB", "1x",  "1KiBs", "0x10", "1e3", "G1",
  };
  for (const std::string& text : bad) {
    SCOPED_TRACE("'" + text + "'");
    Result<uint64_t> r = parse_bytes(text);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_FALSE(r.status().message().empty());
  }
}

TEST(ParseBytesTest, RejectsOverflow) {
  // 2^24 TiB = 2^64 overflows.
  Result<uint64_t> r = parse_bytes("16777216T");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("overflow"), std::string_view::npos);
  // A number that does not fit 64 bits at all.
  Result<uint64_t> big = parse_bytes("18446744073709551616");
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), StatusCode::kInvalidArgument);
}

TEST(ParseBytesTest, UnknownSuffixIsNamedInTheMessage) {
  Result<uint64_t> r = parse_bytes("12parsecs");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("parsecs"), std::string_view::npos);
}

TEST(ParseHostPortTest, SplitsHostAndPort) {
  Result<HostPort> r = parse_host_port("127.0.0.1:7000");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->host, "127.0.0.1");
  EXPECT_EQ(r->port, 7000);
}

TEST(ParseHostPortTest, AcceptsHostnamesAndPortBounds) {
  Result<HostPort> low = parse_host_port("memnode-1.example:1");
  ASSERT_TRUE(low.ok());
  EXPECT_EQ(low->host, "memnode-1.example");
  EXPECT_EQ(low->port, 1);
  Result<HostPort> high = parse_host_port("localhost:65535");
  ASSERT_TRUE(high.ok());
  EXPECT_EQ(high->host, "localhost");
  EXPECT_EQ(high->port, 65535);
}

TEST(ParseHostPortTest, SplitsAtTheLastColon) {
  // IPv6-looking hosts keep their inner colons.
  Result<HostPort> r = parse_host_port("::1:7000");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->host, "::1");
  EXPECT_EQ(r->port, 7000);
}

TEST(ParseHostPortTest, RejectsMalformedInputWithInvalidArgument) {
  const std::vector<std::string> bad = {
      "",           "localhost",     ":7000",      "localhost:", "localhost:0",
      "host:65536", "host:99999999", "host:-1",    "host:abc",   "host:70x",
      "host:7000 ", "host: 7000",    "host:+7000",
  };
  for (const std::string& text : bad) {
    SCOPED_TRACE("'" + text + "'");
    Result<HostPort> r = parse_host_port(text);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(text), std::string_view::npos);
  }
}

}  // namespace
}  // namespace farmem
