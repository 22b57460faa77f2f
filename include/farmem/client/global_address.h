// GlobalAddress: a location in the cluster's far memory, {node id, offset in that node's
// exported region}, held packed in 64 bits exactly as it travels and is stored remotely
// (docs/formats/global_address.md):
//   bits 0..47  offset (bytes from the start of the node's region)
//   bits 48..63 node id (the memory node's configured node_id)
// The packed value 0 is the null address (node 0, offset 0 lies in the reserved region header
// and is never allocated). Thread safety: a value type.
#pragma once

#include <cstdint>
#include <functional>

namespace farmem {

class GlobalAddress {
 public:
  static constexpr uint64_t kOffsetBits = 48;
  static constexpr uint64_t kOffsetMask = (1ull << kOffsetBits) - 1;

  constexpr GlobalAddress() = default;
  constexpr GlobalAddress(uint16_t node, uint64_t offset)
      : bits_((static_cast<uint64_t>(node) << kOffsetBits) | (offset & kOffsetMask)) {}

  constexpr uint16_t node() const { return static_cast<uint16_t>(bits_ >> kOffsetBits); }
  constexpr uint64_t offset() const { return bits_ & kOffsetMask; }
  constexpr uint64_t pack() const { return bits_; }
  static constexpr GlobalAddress unpack(uint64_t v) {
    GlobalAddress a;
    a.bits_ = v;
    return a;
  }
  constexpr bool is_null() const { return bits_ == 0; }
  // Precondition: offset() + delta stays below 2^48 (callers check region bounds anyway).
  constexpr GlobalAddress operator+(uint64_t delta) const { return unpack(bits_ + delta); }
  friend constexpr bool operator==(GlobalAddress, GlobalAddress) = default;

 private:
  uint64_t bits_ = 0;
};

static_assert(sizeof(GlobalAddress) == 8);
static_assert(GlobalAddress(3, 0x1234).pack() == 0x0003000000001234ull);
static_assert(GlobalAddress::unpack(0x0003000000001234ull) == GlobalAddress(3, 0x1234));
static_assert(GlobalAddress(3, 0x1234).node() == 3 && GlobalAddress(3, 0x1234).offset() == 0x1234);

}  // namespace farmem

template <>
struct std::hash<farmem::GlobalAddress> {
  size_t operator()(const farmem::GlobalAddress& a) const noexcept {
    return std::hash<uint64_t>()(a.pack());
  }
};
