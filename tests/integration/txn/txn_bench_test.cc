// `farmem bench txn` against two real nodes: a short SmallBank run conserves the money and a
// short TATP run keeps its record counts (the benchmark checks and prints them; exit 1 if not).
#include <string>

#include "txn_fixture.h"

namespace farmem::testing {
namespace {

class TxnBenchTest : public TxnTest {
 protected:
  std::string run_bench(const std::string& workload, const std::string& scale, int* rc) {
    const std::string cmd = "UCX_TLS=" + GetParam().tls + " " + FARMEM_CLI_BIN +
                            " bench txn --servers " + servers_[0]->address() + "," +
                            servers_[1]->address() + " --workload " + workload + " --scale " +
                            scale + " --duration 1 --threads 2 --coroutines 4 2>&1";
    std::string out;
    *rc = run_command(cmd, &out);
    return out;
  }
};

TEST_P(TxnBenchTest, SmallBankConservesMoney) {
  int rc = -1;
  const std::string out = run_bench("smallbank", "0.01", &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("conserved"), std::string::npos) << out;
  EXPECT_NE(out.find("replicas=2"), std::string::npos) << out;
}

TEST_P(TxnBenchTest, TatpKeepsItsRecordCounts) {
  int rc = -1;
  const std::string out = run_bench("tatp", "0.005", &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("tatp record counts"), std::string::npos) << out;
  EXPECT_NE(out.find(": OK"), std::string::npos) << out;
}

INSTANTIATE_TEST_SUITE_P(Transports, TxnBenchTest, ::testing::ValuesIn(all_transports()),
                         transport_name);

}  // namespace
}  // namespace farmem::testing
