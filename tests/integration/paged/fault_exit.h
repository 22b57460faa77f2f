// The end a process must come to when a page fault cannot be served (its memory node or agent
// dead, or stopped past the op deadline; docs/modules/paged.md "Failure"): exit
// paged::kFaultExitStatus after one "farmem paged: fatal:" line naming the page's offset and
// node, with no wrong data read before it. Shared by the paged and agent failure rows.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <string>

#include "farmem/paged/page_manager.h"
#include "harness.h"

namespace farmem::testing {

// `status`: the process's wait_exit() result (-1: it hangs). Sets *output to what it printed.
// Use as ASSERT_NO_FATAL_FAILURE(expect_fault_exit(*child, status, &out)).
inline void expect_fault_exit(const ChildProcess& c, int status, std::string* output) {
  *output = c.output();
  ASSERT_NE(status, -1) << "the faulting process hangs: " << *output;
  ASSERT_TRUE(WIFEXITED(status)) << *output;
  EXPECT_EQ(WEXITSTATUS(status), paged::kFaultExitStatus) << *output;
  EXPECT_NE(output->find("farmem paged: fatal:"), std::string::npos) << *output;
  EXPECT_NE(output->find(" offset "), std::string::npos) << *output;
  EXPECT_NE(output->find(" node "), std::string::npos) << *output;
  EXPECT_EQ(output->find("wrong data"), std::string::npos) << *output;
}

}  // namespace farmem::testing
