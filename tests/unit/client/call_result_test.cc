// Unit tests for call_result: a call's reply slot reads back as its result, as the procedure's
// error (code and message), or, when its header is malformed, as kProtocolError.
#include "farmem/client/call_result.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "farmem/fabric/wire.h"

namespace farmem::client {
namespace {

std::string slot(uint16_t code, uint16_t reserved, uint32_t bytes, std::string_view body,
                 size_t slot_bytes = 64) {
  std::string s(slot_bytes, '\0');
  const wire::CallReplyHeader h{code, reserved, bytes};
  std::memcpy(s.data(), &h, sizeof(h));
  std::memcpy(s.data() + sizeof(h), body.data(), body.size());
  return s;
}

TEST(CallResultTest, ResultErrorAndMalformedSlots) {
  const std::string ok = slot(0, 0, 5, "hello");
  auto r = call_result(ok.data(), ok.size());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "hello");
  const std::string busy = slot(static_cast<uint16_t>(StatusCode::kBusy), 0, 4, "nope");
  r = call_result(busy.data(), busy.size());
  EXPECT_EQ(r.status().code(), StatusCode::kBusy);
  EXPECT_EQ(r.status().message(), "nope");
  const std::string malformed[] = {
      slot(0, 1, 0, ""),       // reserved not 0
      slot(200, 0, 0, ""),     // unknown status code
      slot(0, 0, 57, "", 64),  // longer than the slot
  };
  for (const std::string& m : malformed) {
    EXPECT_EQ(call_result(m.data(), m.size()).status().code(), StatusCode::kProtocolError);
  }
  EXPECT_EQ(call_result(ok.data(), 4).status().code(), StatusCode::kProtocolError);
}

}  // namespace
}  // namespace farmem::client
