// Remote layout of the one-sided B+tree (Sherman's B-link design; SMART-BT). Byte-level spec:
// docs/formats/btree.md. Everything is little-endian and lives in memory-node regions, owned by
// the tree's objects (ds/common/far_object.h); pages are spread over every node.
//
//   TreeMeta   64 B, the named root "btree/<name>" points to it: {root page, magic, version,
//              page size, inline value limit, tree id}. The root word changes by CAS only.
//   Page       page_bytes (default 1024): PageHeader{64} low fence, high fence,
//              u16 offset[count], entries in key order. [low, high) is the page's key range
//              (B-link fences); `sibling` is the next page of the same level.
//   leaf entry     u16 key_bytes | u16 vinfo | key | inline value (vinfo bytes) or, when
//                  vinfo = kOutOfPlace, u64 KV block address + u32 value bytes
//   internal entry u16 key_bytes | u16 0 | key | u64 child   (child0 in the header covers
//                  [low, first key))
//
// A page is read without any lock and validated by its checksum (XXH3-64 of bytes
// [24, 64 + used)); the first 24 bytes are the lock word (the holder's session id), the redo
// word (a complete copy of the image being written, so a holder that dies mid-write is
// repaired by whoever takes its lock over) and the checksum itself.
//
// Thread safety: constants and pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace farmem::ds::btree {

inline constexpr uint32_t kMetaMagic = 0x4D52544Du;  // "MTRM"
inline constexpr uint32_t kPageMagic = 0x50525442u;  // "BTRP"
inline constexpr uint32_t kLayoutVersion = 1;
inline constexpr uint32_t kMaxKeyBytes = 256;
inline constexpr uint32_t kMaxValueBytes = 256 * 1024;
inline constexpr uint32_t kDefaultPageBytes = 1024;
inline constexpr uint32_t kMinPageBytes = 1024;
inline constexpr uint32_t kMaxPageBytes = 16384;  // ObjectHeap's largest small class
inline constexpr uint32_t kDefaultInlineValueBytes = 128;
inline constexpr uint32_t kMaxLevels = 32;
inline constexpr uint16_t kInfinite = 0xFFFF;    // a fence length: -inf (low) or +inf (high)
inline constexpr uint16_t kOutOfPlace = 0xFFFF;  // leaf vinfo: the value is in a KV block
inline constexpr uint8_t kPageDead = 1;          // flags bit 0: unlinked, go back to the root

struct TreeMeta {
  uint64_t root;                // packed GlobalAddress of the root page (CAS on root growth)
  uint32_t magic;               // kMetaMagic
  uint32_t version;             // kLayoutVersion
  uint32_t page_bytes;          // kMinPageBytes..kMaxPageBytes, a power of two
  uint32_t inline_value_bytes;  // values up to this many bytes are stored in the leaf
  uint64_t tree_id;             // random, stamped into every page
  uint64_t reserved[4];
};
static_assert(sizeof(TreeMeta) == 64);
static_assert(offsetof(TreeMeta, page_bytes) == 16);
static_assert(offsetof(TreeMeta, tree_id) == 24);
static_assert(std::is_trivially_copyable_v<TreeMeta>);

struct PageHeader {
  uint64_t lock;      // 0 = free, else the holder's session id on the page's node
  uint64_t redo;      // 0, or packed GlobalAddress of the image being written (same node)
  uint64_t checksum;  // XXH3-64 of bytes [24, 64 + used)
  uint32_t magic;     // kPageMagic
  uint8_t level;      // 0 = leaf
  uint8_t flags;      // kPageDead
  uint16_t count;     // entries
  uint64_t sibling;   // packed GlobalAddress of the right neighbour at this level, 0 = none
  uint64_t child0;    // internal pages: the child covering [low, first key); leaves: 0
  uint16_t low_len;   // bytes of the low fence, kInfinite = -inf
  uint16_t high_len;  // bytes of the high fence, kInfinite = +inf
  uint16_t used;      // bytes after the header: fences, offsets and entries
  uint16_t reserved;  // 0
  uint64_t tree_id;   // TreeMeta::tree_id
};
static_assert(sizeof(PageHeader) == 64);
static_assert(offsetof(PageHeader, redo) == 8);
static_assert(offsetof(PageHeader, checksum) == 16);
static_assert(offsetof(PageHeader, magic) == 24);
static_assert(offsetof(PageHeader, sibling) == 32);
static_assert(offsetof(PageHeader, child0) == 40);
static_assert(offsetof(PageHeader, low_len) == 48);
static_assert(offsetof(PageHeader, used) == 52);
static_assert(offsetof(PageHeader, tree_id) == 56);
static_assert(std::is_trivially_copyable_v<PageHeader>);

inline constexpr uint32_t kChecksumFrom = 24;  // the checksum covers [24, 64 + used)
static_assert(kChecksumFrom == offsetof(PageHeader, magic));
// A write-back stores bytes [kWriteBackFrom, 64 + used) of the image (the checksum onward; its
// redo copy holds the same bytes from its start); the lock and redo words before them are
// written on their own.
inline constexpr uint32_t kLockWordAt = offsetof(PageHeader, lock);
inline constexpr uint32_t kRedoWordAt = offsetof(PageHeader, redo);
inline constexpr uint32_t kWriteBackFrom = offsetof(PageHeader, checksum);
static_assert(kLockWordAt == 0 && kRedoWordAt == 8 && kWriteBackFrom == 16);
inline constexpr size_t write_back_bytes(uint32_t used) {
  return sizeof(PageHeader) - kWriteBackFrom + used;
}
inline constexpr uint32_t kEntryHeaderBytes = 4;
inline constexpr uint32_t kOutOfPlaceBytes = 12;  // u64 block + u32 value bytes
inline constexpr uint32_t kChildBytes = 8;
// Inside an entry: u16 key_bytes at 0, u16 vinfo at kEntryVinfoAt, the key at kEntryHeaderBytes;
// an out-of-place tail (after the key) holds the u64 block at 0, the u32 value bytes at
// kOutOfPlaceSizeAt.
inline constexpr uint32_t kEntryVinfoAt = 2;
inline constexpr uint32_t kOutOfPlaceSizeAt = 8;
static_assert(kEntryVinfoAt + sizeof(uint16_t) == kEntryHeaderBytes);
static_assert(kOutOfPlaceSizeAt + sizeof(uint32_t) == kOutOfPlaceBytes);

// The first 8 bytes of a key as a big-endian integer (zero-padded): keys compare like these
// integers first, then byte by byte when the prefixes are equal.
inline uint64_t key_prefix(std::string_view k) {
  uint64_t v = 0;
  if (k.size() >= 8) {
    std::memcpy(&v, k.data(), 8);
    return __builtin_bswap64(v);
  }
  // Short keys (truncated separators): byte by byte, no call to a variable-length memcpy.
  for (size_t i = 0; i < k.size(); ++i) v |= uint64_t{static_cast<uint8_t>(k[i])} << (56 - 8 * i);
  return v;
}
// Lexicographic comparison of unsigned bytes (<0, 0, >0), fast for keys that differ early.
inline int compare_keys(std::string_view a, std::string_view b) {
  const uint64_t x = key_prefix(a), y = key_prefix(b);
  if (x != y) return x < y ? -1 : 1;
  return a.compare(b);
}

// Whether n is a page size a tree may have: a power of two in kMinPageBytes..kMaxPageBytes.
inline constexpr bool valid_page_bytes(uint32_t n) {
  return n >= kMinPageBytes && n <= kMaxPageBytes && (n & (n - 1)) == 0;
}
static_assert(valid_page_bytes(kDefaultPageBytes) && !valid_page_bytes(1000));

inline constexpr uint32_t fence_bytes(uint16_t len) { return len == kInfinite ? 0 : len; }
// Bytes of a leaf entry with a key of k bytes and an inline value of v bytes (or out of place).
inline constexpr uint32_t leaf_entry_bytes(uint32_t k, uint32_t v, bool out_of_place) {
  return kEntryHeaderBytes + k + (out_of_place ? kOutOfPlaceBytes : v);
}
inline constexpr uint32_t internal_entry_bytes(uint32_t k) {
  return kEntryHeaderBytes + k + kChildBytes;
}
// The largest inline value a page of page_bytes accepts: one entry with the largest key must
// fit beside two largest fences and its offset, so every split can always make progress.
inline constexpr uint32_t max_inline_value_bytes(uint32_t page_bytes) {
  return page_bytes - sizeof(PageHeader) - 2 * kMaxKeyBytes - 2 - kEntryHeaderBytes - kMaxKeyBytes;
}
static_assert(max_inline_value_bytes(1024) == 186);
static_assert(kDefaultInlineValueBytes <= max_inline_value_bytes(kDefaultPageBytes));
static_assert(sizeof(PageHeader) + 2 * kMaxKeyBytes + 2 + internal_entry_bytes(kMaxKeyBytes) <=
              kMinPageBytes);

// A validated, read-only view of a page image (what a reader fetched, or a cached copy).
class PageView {
 public:
  PageView() = default;
  enum class Check {
    kWhole,    // a whole page of the tree (it may be dead: check dead())
    kTorn,     // read while being written: read again
    kForeign,  // not a page of this tree (a stale pointer to reused memory)
  };
  // Checks the image: magic and tree id (else kForeign), sane lengths, offsets inside the page
  // and the checksum (else kTorn). verify_checksum = false only for images already checked
  // (cached copies).
  Check parse(const char* image, uint32_t page_bytes, uint64_t tree_id,
              bool verify_checksum = true);

  // Every entry's offset and lengths lie inside the page (the diagnostic walk checks this).
  bool check_entries() const;
  const PageHeader& header() const { return h_; }
  uint8_t level() const { return h_.level; }
  bool leaf() const { return h_.level == 0; }
  bool dead() const { return (h_.flags & kPageDead) != 0; }
  uint16_t count() const { return h_.count; }
  uint64_t sibling() const { return h_.sibling; }
  bool low_infinite() const { return h_.low_len == kInfinite; }
  bool high_infinite() const { return h_.high_len == kInfinite; }
  std::string_view low() const { return low_; }
  std::string_view high() const { return high_; }
  // key < low (the page cannot hold it: a stale pointer), key >= high (move right).
  bool below(std::string_view key) const { return !low_infinite() && key < low_; }
  bool beyond(std::string_view key) const { return !high_infinite() && key >= high_; }

  std::string_view key(uint32_t i) const;
  // Leaf entries.
  bool out_of_place(uint32_t i) const;
  std::string_view inline_value(uint32_t i) const;
  uint64_t block(uint32_t i) const;
  uint32_t block_value_bytes(uint32_t i) const;
  // The bytes of entry i as stored (header, key, value part).
  std::string_view raw(uint32_t i) const;
  // Internal entries.
  uint64_t child(uint32_t i) const;
  // The first entry whose key is >= key (count() if none).
  uint32_t lower_bound(std::string_view key) const;
  // Internal pages: the child covering key (precondition: low <= key < high).
  uint64_t child_for(std::string_view key) const;
  const char* image() const { return image_; }

 private:
  uint16_t offset(uint32_t i) const {
    uint16_t o;
    std::memcpy(&o, image_ + offsets_at_ + 2 * i, 2);
    return o;
  }
  const char* image_ = nullptr;
  PageHeader h_{};
  std::string_view low_, high_;
  uint32_t offsets_at_ = 0;
};

// XXH3-64 over [24, 64 + used) of an image whose header is filled in.
uint64_t page_checksum(const char* image);

// A page a writer is building: header fields, fences and raw entries (views into buffers that
// outlive the draft), in key order.
struct PageDraft {
  uint8_t level = 0;
  uint8_t flags = 0;
  uint64_t sibling = 0;
  uint64_t child0 = 0;
  uint64_t tree_id = 0;
  bool low_infinite = true;
  bool high_infinite = true;
  std::string_view low, high;
  std::vector<std::string_view> entries;

  // Bytes after the header.
  uint32_t used() const;
  bool fits(uint32_t page_bytes) const { return sizeof(PageHeader) + used() <= page_bytes; }
  // Starts a draft with v's header fields, fences and entries.
  static PageDraft from(const PageView& v);
  // Writes the image (lock and redo 0, checksum set) into out[0, page_bytes), zero-padded.
  // Precondition: fits(page_bytes).
  void encode(char* out, uint32_t page_bytes) const;
};

// Raw entries.
std::string leaf_entry(std::string_view key, std::string_view value);
std::string out_of_place_entry(std::string_view key, uint64_t block, uint32_t value_bytes);
std::string internal_entry(std::string_view key, uint64_t child);
// The key of a raw entry.
std::string_view entry_key(std::string_view raw);

}  // namespace farmem::ds::btree
