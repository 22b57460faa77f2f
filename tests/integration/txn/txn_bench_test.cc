// `farmem bench txn` against two real nodes: a short SmallBank run conserves the money, a
// short TATP run keeps its record counts and a short TPC-C run (one warehouse, smaller
// NON-STANDARD item and customer counts so that loading over TCP stays quick) meets the
// consistency conditions 1-4 with every transaction type committed (the benchmark checks and
// prints them; exit 1 if not).
#include <regex>
#include <string>

#include "txn_fixture.h"

namespace farmem::testing {
namespace {

class TxnBenchTest : public TxnTest {
 protected:
  // TPC-C's order tables are sized for the run (and buckets are power-of-two blocks).
  uint64_t node_capacity_bytes() const override { return 1ull << 30; }
  std::string run_bench(const std::string& workload, const std::string& scale, int* rc,
                        const std::string& extra = "",
                        const std::string& shape = " --duration 1 --threads 2 --coroutines 4") {
    const std::string cmd = "UCX_TLS=" + GetParam().tls + " " + FARMEM_CLI_BIN +
                            " bench txn --servers " + servers_[0]->address() + "," +
                            servers_[1]->address() + " --workload " + workload + " --scale " +
                            scale + shape + extra + " 2>&1";
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

TEST_P(TxnBenchTest, TpccMeetsItsConsistencyConditions) {
  int rc = -1;
  // Every type must commit, and the order tables (sized for --tpcc-orders-per-s over the run)
  // must neither fill up nor outgrow the test nodes' memory. Shared memory commits thousands of
  // NewOrders a second: a short run with room for 8,000/s. TCP commits about a hundred, with
  // OrderStatus, Delivery and StockLevel at 4% each: a longer run with two coroutines (fewer
  // conflicts) so that each of those commits dozens of times.
  const bool tcp = GetParam().tls == "tcp";
  const std::string out =
      run_bench("tpcc", "1", &rc,
                std::string(" --tpcc-items 1000 --tpcc-customers 30 --tpcc-orders-per-s ") +
                    (tcp ? "3000" : "8000"),
                tcp ? " --duration 3 --threads 1 --coroutines 2"
                    : " --duration 1 --threads 2 --coroutines 4");
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("tpcc consistency conditions 1-4 (1 warehouses): OK"), std::string::npos)
      << out;
  EXPECT_NE(out.find("NON-STANDARD"), std::string::npos) << out;
  for (const char* type : {"NewOrder", "Payment", "OrderStatus", "Delivery", "StockLevel"}) {
    std::smatch m;
    const std::regex line(std::string("  ") + type + R"( +commits/s= *([0-9.]+) )");
    ASSERT_TRUE(std::regex_search(out, m, line)) << type << "\n" << out;
    EXPECT_GT(std::stod(m[1].str()), 0.0) << type << " committed nothing\n" << out;
  }
}

INSTANTIATE_TEST_SUITE_P(Transports, TxnBenchTest, ::testing::ValuesIn(all_transports()),
                         transport_name);

}  // namespace
}  // namespace farmem::testing
