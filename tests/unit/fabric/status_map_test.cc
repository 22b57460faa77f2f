// Unit tests for the UCX -> farmem status translation (farmem/fabric/status_map.h).
#include "farmem/fabric/status_map.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace farmem::fabric {
namespace {

struct Case {
  ucs_status_t ucs;
  StatusCode code;
};

TEST(StatusMapTest, MapsUcsCodesToFarmemCodes) {
  const std::vector<Case> cases = {
      {UCS_OK, StatusCode::kOk},
      {UCS_ERR_TIMED_OUT, StatusCode::kTimedOut},
      {UCS_ERR_ENDPOINT_TIMEOUT, StatusCode::kPeerFailed},
      {UCS_ERR_CONNECTION_RESET, StatusCode::kPeerFailed},
      {UCS_ERR_UNREACHABLE, StatusCode::kPeerFailed},
      {UCS_ERR_REJECTED, StatusCode::kPeerFailed},
      {UCS_ERR_NOT_CONNECTED, StatusCode::kPeerFailed},
      {UCS_ERR_IO_ERROR, StatusCode::kPeerFailed},
      {UCS_ERR_CANCELED, StatusCode::kCancelled},
      {UCS_ERR_NO_MEMORY, StatusCode::kResourceExhausted},
      {UCS_ERR_NO_RESOURCE, StatusCode::kResourceExhausted},
      {UCS_ERR_EXCEEDS_LIMIT, StatusCode::kResourceExhausted},
      {UCS_ERR_INVALID_PARAM, StatusCode::kInvalidArgument},
      {UCS_ERR_INVALID_ADDR, StatusCode::kInvalidArgument},
      {UCS_ERR_UNSUPPORTED, StatusCode::kInternal},
      {UCS_ERR_NO_ELEM, StatusCode::kInternal},
      {UCS_ERR_BUSY, StatusCode::kInternal},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(ucs_status_string(c.ucs));
    EXPECT_EQ(map_ucs_code(c.ucs), c.code);
  }
}

TEST(StatusMapTest, UnknownCodesMapToInternal) {
  EXPECT_EQ(map_ucs_code(static_cast<ucs_status_t>(-999)), StatusCode::kInternal);
}

TEST(StatusMapTest, FromUcsOkIsOkWithoutMessage) {
  Status s = from_ucs(UCS_OK, "ucp_put_nbx");
  EXPECT_TRUE(s.ok());
  EXPECT_TRUE(s.message().empty());
}

TEST(StatusMapTest, FromUcsPrefixesTheOperationToTheUcxDescription) {
  Status s = from_ucs(UCS_ERR_NO_MEMORY, "ucp_mem_map");
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(s.message(), std::string("ucp_mem_map: ") + ucs_status_string(UCS_ERR_NO_MEMORY));
}

TEST(StatusMapTest, FromUcsTimeoutAndPeerFailure) {
  Status t = from_ucs(UCS_ERR_TIMED_OUT, "read");
  EXPECT_EQ(t.code(), StatusCode::kTimedOut);
  EXPECT_EQ(t.message().substr(0, 6), "read: ");
  Status p = from_ucs(UCS_ERR_CONNECTION_RESET, "am send");
  EXPECT_EQ(p.code(), StatusCode::kPeerFailed);
  EXPECT_NE(p.message().find(ucs_status_string(UCS_ERR_CONNECTION_RESET)), std::string_view::npos);
}

}  // namespace
}  // namespace farmem::fabric
