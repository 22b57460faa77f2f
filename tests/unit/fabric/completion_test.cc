// Unit tests for fabric::Completion: counting pending operations and keeping the first failure.
#include "farmem/fabric/completion.h"

#include <gtest/gtest.h>

namespace farmem::fabric {
namespace {

int notified = 0;
void count_notify(Completion* /*c*/) { ++notified; }

TEST(CompletionTest, NotifiesWhenTheLastOperationCompletesAndKeepsTheFirstFailure) {
  notified = 0;
  Completion c;
  c.notify = &count_notify;
  c.remaining = 3;
  c.complete_one(OkStatus());
  c.complete_one(TimedOut("first"));
  EXPECT_EQ(notified, 0);
  c.complete_one(PeerFailed("second"));
  EXPECT_EQ(notified, 1);
  EXPECT_EQ(c.remaining, 0u);
  EXPECT_EQ(c.status.code(), StatusCode::kTimedOut);
}

// One completion more than was counted would wrap the count and never notify: it stops the
// process instead.
TEST(CompletionDeathTest, CompletingMoreThanWasCountedAborts) {
  Completion c;
  EXPECT_DEATH(c.complete_one(OkStatus()), "completed twice");
}

}  // namespace
}  // namespace farmem::fabric
