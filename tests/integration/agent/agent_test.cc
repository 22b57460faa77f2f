#include <gtest/gtest.h>
TEST(AgentPlaceholder, Builds) {}
