// Unit tests for WorkloadSpec, the YCSB core workloads and the name lookups.
#include "farmem/bench/workload/workload_spec.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

namespace farmem::bench::workload {
namespace {

struct Mix {
  const char* name;
  double read, update, insert, scan, rmw;
  bool latest;
};

TEST(WorkloadSpecTest, CoreWorkloadsHaveTheYcsbMixes) {
  const Mix expected[] = {
      {"a", 0.5, 0.5, 0, 0, 0, false},   {"b", 0.95, 0.05, 0, 0, 0, false},
      {"c", 1.0, 0, 0, 0, 0, false},     {"d", 0.95, 0, 0.05, 0, 0, true},
      {"e", 0, 0, 0.05, 0.95, 0, false}, {"f", 0.5, 0, 0, 0, 0.5, false},
  };
  auto all = core_workloads();
  ASSERT_EQ(all.size(), 6u);
  for (size_t i = 0; i < 6; ++i) {
    const Mix& m = expected[i];
    SCOPED_TRACE(m.name);
    auto spec = workload_by_name(m.name);
    ASSERT_TRUE(spec.ok()) << spec.status().to_string();
    EXPECT_EQ(spec->name, m.name);
    EXPECT_EQ(all[i].name, m.name);
    EXPECT_FALSE(spec->description.empty());
    EXPECT_DOUBLE_EQ(spec->read_proportion, m.read);
    EXPECT_DOUBLE_EQ(spec->update_proportion, m.update);
    EXPECT_DOUBLE_EQ(spec->insert_proportion, m.insert);
    EXPECT_DOUBLE_EQ(spec->scan_proportion, m.scan);
    EXPECT_DOUBLE_EQ(spec->read_modify_write_proportion, m.rmw);
    EXPECT_EQ(spec->latest_reads, m.latest);
    EXPECT_EQ(spec->min_scan_length, 1u);
    EXPECT_EQ(spec->max_scan_length, 100u);
    double sum = 0;
    for (int t = 0; t < kOpTypeCount; ++t) sum += spec->proportion(static_cast<OpType>(t));
    EXPECT_DOUBLE_EQ(sum, 1.0);
    EXPECT_TRUE(validate_workload(*spec).ok());
  }
}

TEST(WorkloadSpecTest, NamesAreCaseInsensitiveAndAcceptTheWorkloadPrefix) {
  for (const char* name : {"A", "workloadA", "WorkloadA", "WORKLOADA", "workloada"}) {
    auto spec = workload_by_name(name);
    ASSERT_TRUE(spec.ok()) << name;
    EXPECT_EQ(spec->name, "a");
  }
  auto f = workload_by_name("F");
  ASSERT_TRUE(f.ok());
  EXPECT_DOUBLE_EQ(f->read_modify_write_proportion, 0.5);
  // w, the write-only shape (not a core workload): 100% update.
  auto w = workload_by_name("W");
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->name, "w");
  EXPECT_DOUBLE_EQ(w->update_proportion, 1.0);
  EXPECT_DOUBLE_EQ(w->read_proportion, 0.0);
  EXPECT_TRUE(validate_workload(*w).ok());
}

TEST(WorkloadSpecTest, UnknownNamesAreInvalidArgumentWithTheChoices) {
  for (const char* name : {"", "g", "aa", "workload", "workloadg", " a", "1"}) {
    auto spec = workload_by_name(name);
    ASSERT_FALSE(spec.ok()) << "'" << name << "'";
    EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument);
    const std::string message(spec.status().message());
    EXPECT_NE(message.find("a, b, c, d, e, f"), std::string::npos) << message;
    EXPECT_NE(message.find(std::string("'").append(name).append("'")), std::string::npos)
        << message;
  }
}

TEST(WorkloadSpecTest, OpTypeAndDistributionNames) {
  EXPECT_EQ(op_type_name(OpType::kRead), "read");
  EXPECT_EQ(op_type_name(OpType::kUpdate), "update");
  EXPECT_EQ(op_type_name(OpType::kInsert), "insert");
  EXPECT_EQ(op_type_name(OpType::kScan), "scan");
  EXPECT_EQ(op_type_name(OpType::kReadModifyWrite), "read_modify_write");
  EXPECT_EQ(distribution_name(Distribution::kZipfian), "zipfian");
  EXPECT_EQ(distribution_name(Distribution::kUniform), "uniform");
  for (Distribution d : {Distribution::kZipfian, Distribution::kUniform}) {
    auto back = distribution_by_name(distribution_name(d));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, d);
  }
  auto upper = distribution_by_name("Zipfian");
  ASSERT_TRUE(upper.ok());
  EXPECT_EQ(*upper, Distribution::kZipfian);
  auto bad = distribution_by_name("latest");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
}

TEST(WorkloadSpecTest, ValidateRejectsBadMixes) {
  WorkloadSpec spec;
  spec.name = "x";
  EXPECT_FALSE(validate_workload(spec).ok());  // all zero
  spec.read_proportion = 1.0;
  EXPECT_TRUE(validate_workload(spec).ok());
  spec.update_proportion = -0.1;
  EXPECT_EQ(validate_workload(spec).code(), StatusCode::kInvalidArgument);
  spec.update_proportion = std::numeric_limits<double>::infinity();
  EXPECT_FALSE(validate_workload(spec).ok());
  spec.update_proportion = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(validate_workload(spec).ok());
  spec.update_proportion = 0;
  spec.scan_proportion = 0.5;
  spec.min_scan_length = 0;
  EXPECT_FALSE(validate_workload(spec).ok());
  spec.min_scan_length = 20;
  spec.max_scan_length = 10;
  EXPECT_FALSE(validate_workload(spec).ok());
  spec.max_scan_length = 20;
  EXPECT_TRUE(validate_workload(spec).ok());
  spec.scan_proportion = 0;
  spec.min_scan_length = 0;  // irrelevant without scans
  EXPECT_TRUE(validate_workload(spec).ok());
}

}  // namespace
}  // namespace farmem::bench::workload
