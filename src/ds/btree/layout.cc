#include "farmem/ds/btree/layout.h"

#include <xxhash.h>
#if defined(__x86_64__)
#include <xxh_x86dispatch.h>  // XXH3_64bits_dispatch: the AVX2/AVX-512 code when the CPU has it
#endif

#include "farmem/common/check.h"

namespace farmem::ds::btree {

uint64_t page_checksum(const char* image) {
  PageHeader h;
  std::memcpy(&h, image, sizeof(h));
  const size_t n = sizeof(PageHeader) - kChecksumFrom + h.used;
#if defined(__x86_64__)
  // The same value as XXH3_64bits (every XXH3 implementation agrees), computed with the widest
  // vector unit the CPU has (libxxhash's XXH3_64bits itself is its SSE2 build).
  return XXH3_64bits_dispatch(image + kChecksumFrom, n);
#else
  return XXH3_64bits(image + kChecksumFrom, n);
#endif
}

PageView::Check PageView::parse(const char* image, uint32_t page_bytes, uint64_t tree_id,
                                bool verify_checksum) {
  constexpr Check kTorn = Check::kTorn;
  image_ = image;
  std::memcpy(&h_, image, sizeof(h_));
  if (h_.magic != kPageMagic || h_.tree_id != tree_id) return Check::kForeign;
  if (sizeof(PageHeader) + uint32_t{h_.used} > page_bytes) return kTorn;
  const uint32_t lo = fence_bytes(h_.low_len), hi = fence_bytes(h_.high_len);
  if (lo > kMaxKeyBytes || hi > kMaxKeyBytes) return kTorn;
  offsets_at_ = sizeof(PageHeader) + lo + hi;
  const uint32_t end = sizeof(PageHeader) + h_.used;
  if (offsets_at_ + 2u * h_.count > end) return kTorn;
  if (verify_checksum && page_checksum(image) != h_.checksum) return kTorn;
  low_ = std::string_view(image + sizeof(PageHeader), lo);
  high_ = std::string_view(image + sizeof(PageHeader) + lo, hi);
  // The entries' offsets and lengths are not checked one by one: an image whose checksum
  // holds was written whole by a writer of this tree (PageDraft::encode), and cached images
  // were checked when fetched. check_entries() does it for diagnostics and tests.
  return Check::kWhole;
}

bool PageView::check_entries() const {
  const uint32_t end = sizeof(PageHeader) + h_.used;
  const uint32_t first = offsets_at_ + 2u * h_.count;
  for (uint32_t i = 0; i < h_.count; ++i) {
    const uint32_t o = offset(i);
    if (o < first || o + kEntryHeaderBytes > end) return false;
    uint16_t k, v;
    std::memcpy(&k, image_ + o, 2);
    std::memcpy(&v, image_ + o + kEntryVinfoAt, 2);
    uint32_t tail = kChildBytes;
    if (h_.level == 0) tail = v == kOutOfPlace ? kOutOfPlaceBytes : v;
    if (k == 0 || k > kMaxKeyBytes || o + kEntryHeaderBytes + k + tail > end) return false;
  }
  return true;
}

std::string_view PageView::key(uint32_t i) const {
  const uint16_t o = offset(i);
  uint16_t k;
  std::memcpy(&k, image_ + o, 2);
  return std::string_view(image_ + o + kEntryHeaderBytes, k);
}

bool PageView::out_of_place(uint32_t i) const {
  uint16_t v;
  std::memcpy(&v, image_ + offset(i) + kEntryVinfoAt, 2);
  return v == kOutOfPlace;
}

std::string_view PageView::inline_value(uint32_t i) const {
  const uint16_t o = offset(i);
  uint16_t k, v;
  std::memcpy(&k, image_ + o, 2);
  std::memcpy(&v, image_ + o + kEntryVinfoAt, 2);
  return std::string_view(image_ + o + kEntryHeaderBytes + k, v);
}

uint64_t PageView::block(uint32_t i) const {
  std::string_view k = key(i);
  uint64_t b;
  std::memcpy(&b, k.data() + k.size(), 8);
  return b;
}

uint32_t PageView::block_value_bytes(uint32_t i) const {
  std::string_view k = key(i);
  uint32_t n;
  std::memcpy(&n, k.data() + k.size() + kOutOfPlaceSizeAt, 4);
  return n;
}

std::string_view PageView::raw(uint32_t i) const {
  const uint16_t o = offset(i);
  uint16_t k, v;
  std::memcpy(&k, image_ + o, 2);
  std::memcpy(&v, image_ + o + kEntryVinfoAt, 2);
  uint32_t tail = kChildBytes;
  if (h_.level == 0) tail = v == kOutOfPlace ? kOutOfPlaceBytes : v;
  return std::string_view(image_ + o, kEntryHeaderBytes + k + tail);
}

uint64_t PageView::child(uint32_t i) const {
  std::string_view k = key(i);
  uint64_t c;
  std::memcpy(&c, k.data() + k.size(), 8);
  return c;
}

uint32_t PageView::lower_bound(std::string_view key) const {
  const uint64_t kp = key_prefix(key);
  uint32_t lo = 0, hi = h_.count;
  while (lo < hi) {
    const uint32_t mid = (lo + hi) / 2;
    const std::string_view k = this->key(mid);
    const uint64_t p = key_prefix(k);
    if (p != kp ? p < kp : k < key) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

uint64_t PageView::child_for(std::string_view key) const {
  // The last entry whose key is <= key, else child0.
  uint32_t i = lower_bound(key);
  if (i < h_.count && this->key(i) == key) return child(i);
  return i == 0 ? h_.child0 : child(i - 1);
}

// ---- drafts

PageDraft PageDraft::from(const PageView& v) {
  PageDraft d;
  d.level = v.level();
  d.flags = v.header().flags;
  d.sibling = v.sibling();
  d.child0 = v.header().child0;
  d.tree_id = v.header().tree_id;
  d.low_infinite = v.low_infinite();
  d.high_infinite = v.high_infinite();
  d.low = v.low();
  d.high = v.high();
  d.entries.reserve(v.count() + 2);
  for (uint32_t i = 0; i < v.count(); ++i) d.entries.push_back(v.raw(i));
  return d;
}

uint32_t PageDraft::used() const {
  uint32_t n = (low_infinite ? 0 : low.size()) + (high_infinite ? 0 : high.size());
  for (std::string_view e : entries) n += 2 + static_cast<uint32_t>(e.size());
  return n;
}

void PageDraft::encode(char* out, uint32_t page_bytes) const {
  const uint32_t used_bytes = used();
  FARMEM_ASSERT(sizeof(PageHeader) + used_bytes <= page_bytes, "a draft fits its page");
  FARMEM_ASSERT((low_infinite || low.size() <= kMaxKeyBytes) &&
                    (high_infinite || high.size() <= kMaxKeyBytes),
                "fences are keys within the key limit");
  FARMEM_ASSERT(level < kMaxLevels && (level == 0 || child0 != 0) && tree_id != 0,
                "a page's level is below the height limit, an internal page has child0");
  std::memset(out, 0, page_bytes);
  PageHeader h{};
  h.magic = kPageMagic;
  h.level = level;
  h.flags = flags;
  h.count = static_cast<uint16_t>(entries.size());
  h.sibling = sibling;
  h.child0 = child0;
  h.low_len = low_infinite ? kInfinite : static_cast<uint16_t>(low.size());
  h.high_len = high_infinite ? kInfinite : static_cast<uint16_t>(high.size());
  h.used = static_cast<uint16_t>(used_bytes);
  h.tree_id = tree_id;
  char* p = out + sizeof(PageHeader);
  if (!low_infinite) {
    std::memcpy(p, low.data(), low.size());
    p += low.size();
  }
  if (!high_infinite) {
    std::memcpy(p, high.data(), high.size());
    p += high.size();
  }
  char* offsets = p;
  p += 2 * entries.size();
  for (size_t i = 0; i < entries.size(); ++i) {
    const uint16_t o = static_cast<uint16_t>(p - out);
    std::memcpy(offsets + 2 * i, &o, 2);
    std::memcpy(p, entries[i].data(), entries[i].size());
    p += entries[i].size();
  }
  std::memcpy(out, &h, sizeof(h));
  h.checksum = page_checksum(out);
  std::memcpy(out + offsetof(PageHeader, checksum), &h.checksum, 8);
}

namespace {
std::string entry_head(std::string_view key, uint16_t vinfo, size_t tail) {
  std::string e(kEntryHeaderBytes + key.size() + tail, '\0');
  const uint16_t k = static_cast<uint16_t>(key.size());
  std::memcpy(e.data(), &k, 2);
  std::memcpy(e.data() + kEntryVinfoAt, &vinfo, 2);
  std::memcpy(e.data() + kEntryHeaderBytes, key.data(), key.size());
  return e;
}
}  // namespace

std::string leaf_entry(std::string_view key, std::string_view value) {
  FARMEM_ASSERT(!key.empty() && key.size() <= kMaxKeyBytes && value.size() < kOutOfPlace,
                "a leaf entry's key and inline value fit their 16-bit fields");
  std::string e = entry_head(key, static_cast<uint16_t>(value.size()), value.size());
  if (!value.empty())
    std::memcpy(e.data() + kEntryHeaderBytes + key.size(), value.data(), value.size());
  return e;
}

std::string out_of_place_entry(std::string_view key, uint64_t block, uint32_t value_bytes) {
  FARMEM_ASSERT(
      !key.empty() && key.size() <= kMaxKeyBytes && block != 0 && value_bytes <= kMaxValueBytes,
      "an out-of-place entry names a block of a value within the limit");
  std::string e = entry_head(key, kOutOfPlace, kOutOfPlaceBytes);
  std::memcpy(e.data() + kEntryHeaderBytes + key.size(), &block, 8);
  std::memcpy(e.data() + kEntryHeaderBytes + key.size() + kOutOfPlaceSizeAt, &value_bytes, 4);
  return e;
}

std::string internal_entry(std::string_view key, uint64_t child) {
  FARMEM_ASSERT(!key.empty() && key.size() <= kMaxKeyBytes && child != 0,
                "an internal entry is a separator key and a child");
  std::string e = entry_head(key, 0, kChildBytes);
  std::memcpy(e.data() + kEntryHeaderBytes + key.size(), &child, 8);
  return e;
}

std::string_view entry_key(std::string_view raw) {
  uint16_t k;
  std::memcpy(&k, raw.data(), 2);
  return raw.substr(kEntryHeaderBytes, k);
}

}  // namespace farmem::ds::btree
