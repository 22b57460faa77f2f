#include "test_seed.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

namespace farmem::testing {
namespace {

uint64_t parse_seed_or_die() {
  const char* text = std::getenv("FARMEM_TEST_SEED");
  if (text == nullptr || *text == '\0') return kDefaultTestSeed;
  if (std::strcmp(text, "random") == 0) {
    std::random_device rd;
    return (static_cast<uint64_t>(rd()) << 32) | rd();
  }
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text, &end, 0);
  if (errno != 0 || end == text || *end != '\0' || text[0] == '-') {
    std::fprintf(stderr,
                 "FARMEM_TEST_SEED='%s' is not an unsigned 64-bit number (decimal, 0x hex) or "
                 "'random'\n",
                 text);
    std::abort();
  }
  return v;
}

uint64_t process_seed() {
  static const uint64_t seed = parse_seed_or_die();
  return seed;
}

std::string current_test_name() {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  if (info == nullptr) return "(outside a test)";
  return std::string(info->test_suite_name()) + "." + info->name();
}

// Whether the running test has called test_seed(); reset when each test starts.
std::atomic<bool> used_in_test{false};

class SeedListener : public ::testing::EmptyTestEventListener {
 public:
  // A malformed FARMEM_TEST_SEED stops the binary before the first test, not inside one.
  void OnTestProgramStart(const ::testing::UnitTest&) override { (void)process_seed(); }
  void OnTestStart(const ::testing::TestInfo&) override { used_in_test.store(false); }
  void OnTestEnd(const ::testing::TestInfo& info) override {
    if (!used_in_test.load() || !info.result()->Failed()) return;
    std::printf(
        "[   SEED   ] %s.%s failed with seed=%llu; replay: FARMEM_TEST_SEED=%llu "
        "--gtest_filter=%s.%s\n",
        info.test_suite_name(), info.name(), static_cast<unsigned long long>(process_seed()),
        static_cast<unsigned long long>(process_seed()), info.test_suite_name(), info.name());
    std::fflush(stdout);
  }
};

// Registered before main() (gtest_main) runs the tests; GoogleTest owns the listener.
const bool kListenerRegistered = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new SeedListener);
  return true;
}();

}  // namespace

uint64_t test_seed() {
  const uint64_t seed = process_seed();
  if (!used_in_test.exchange(true)) {
    std::printf("[   SEED   ] %s seed=%llu (replay: FARMEM_TEST_SEED=%llu)\n",
                current_test_name().c_str(), static_cast<unsigned long long>(seed),
                static_cast<unsigned long long>(seed));
    std::fflush(stdout);
  }
  return seed;
}

}  // namespace farmem::testing
