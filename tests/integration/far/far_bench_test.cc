// `farmem bench far frontend` against a real node: every backend and both request shapes (the
// issue's one lookup per request and AIFM's 32) run to the end. The benchmark checks each
// request (every key found, the values summing to the request's number) and exits 1 on a wrong
// or missing value, so a clean exit means every answer of every backend was right.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "far_fixture.h"

namespace farmem::testing {
namespace {

class FarBenchTest : public FarTest {
 protected:
  // Runs the front end (small: 256 objects of 8 KiB, 8,192 keys, one second) and returns its
  // JSON record.
  nlohmann::json frontend(const std::string& args) {
    const std::string json = ::testing::TempDir() + "/far_frontend_" + GetParam().name + "_" +
                             std::to_string(::getpid()) + ".json";
    std::remove(json.c_str());
    const std::string cmd = "UCX_TLS=" + GetParam().tls + " " + FARMEM_CLI_BIN +
                            " bench far frontend --servers " + server_->address() +
                            " --objects 256 --keys 8192 --duration 1 --coroutines 4 --out " + json +
                            " " + args + " 2>&1";
    std::string out;
    const int rc = run_command(cmd, &out);
    EXPECT_EQ(rc, 0) << cmd << "\n" << out;
    std::ifstream in(json);
    if (!in) {
      ADD_FAILURE() << "no JSON from: " << cmd << "\n" << out;
      return {};
    }
    nlohmann::json j = nlohmann::json::parse(in, nullptr, false);  // one record (one run)
    std::remove(json.c_str());
    if (!j.is_object()) {
      ADD_FAILURE() << "not one JSON record from: " << cmd << "\n" << out;
      return nlohmann::json::object();
    }
    return j;
  }
};

TEST_P(FarBenchTest, FrontEndRunsOnEveryBackendWithBothRequestShapes) {
  start(1 << 20);
  for (const char* shape : {"--keys-per-request 1", "--keys-per-request 32"}) {
    for (const char* backend : {"--backend local", "--backend far --local-memory 25%",
                                "--backend paged --local-memory 25% --page-bytes 4096",
                                "--backend far --local-memory 10%"}) {
      SCOPED_TRACE(std::string(shape) + " " + backend);
      nlohmann::json r = frontend(std::string(shape) + " " + backend);
      EXPECT_EQ(r.value("app", ""), "frontend") << r.dump();
      EXPECT_GT(r.value("ops_per_s", 0.0), 0.0) << r.dump();
      EXPECT_GT(r.value("p99_us", 0.0), 0.0) << r.dump();
      EXPECT_EQ(r.value("keys", 0), 8192) << r.dump();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Transports, FarBenchTest, ::testing::ValuesIn(all_transports()),
                         transport_name);

}  // namespace
}  // namespace farmem::testing
