#include "messages.h"

#include <fmt/format.h>

#include <cstddef>
#include <optional>

namespace farmem::kv::service {

namespace w = farmem::kv::wire;

namespace {

bool all_zero(const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (p[i] != 0) return false;
  }
  return true;
}

std::string_view view(const Payload& p, size_t at, size_t n) {
  return {reinterpret_cast<const char*>(p.data()) + at, n};
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  if (s.empty()) return out;
  size_t at = 0;
  while (true) {
    size_t e = s.find(sep, at);
    out.push_back(s.substr(at, e == std::string_view::npos ? std::string_view::npos : e - at));
    if (e == std::string_view::npos) break;
    at = e + 1;
  }
  return out;
}

}  // namespace

// A fixed struct (with a `reserved` field that must be 0) followed by exactly as many bytes of
// text as its `length` field says, 1..max of them.
template <typename Fixed>
Status fixed_and_text(const Payload& p, const char* what, Fixed* fixed, uint32_t Fixed::*length,
                      uint64_t max, std::string_view* text) {
  FARMEM_TRY(read_fixed(p, fixed, what));
  auto t = exact_tail(p, sizeof(Fixed), fixed->*length, what);
  FARMEM_TRY(t);
  *text = *t;
  if (fixed->reserved != 0) {
    return InvalidArgument(fmt::format("{}: reserved field is not zero", what));
  }
  if (text->empty() || text->size() > max) {
    return InvalidArgument(fmt::format("{}: text must be 1..{} bytes", what, max));
  }
  return OkStatus();
}

Result<std::string_view> exact_tail(const Payload& p, size_t fixed, uint64_t bytes,
                                    const char* what) {
  if (p.size() < fixed || p.size() - fixed != bytes) {
    return InvalidArgument(
        fmt::format("{} request announces {} bytes after its fixed part but "
                    "carries {}",
                    what, bytes, p.size() < fixed ? 0 : p.size() - fixed));
  }
  return view(p, fixed, bytes);
}

Status check_pool_name(std::string_view name) {
  if (name.empty() || name.size() > w::kMaxPoolNameBytes) {
    return InvalidArgument(
        fmt::format("pool name must be 1..{} bytes, got {}", w::kMaxPoolNameBytes, name.size()));
  }
  for (char c : name) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) {
      return InvalidArgument("pool name contains a control character");
    }
  }
  return OkStatus();
}

Result<PoolNameRequest> parse_pool_request(const Payload& p, w::KvOpcode op) {
  PoolNameRequest r;
  FARMEM_TRY(read_fixed(p, &r.fixed, "pool"));
  auto name = exact_tail(p, sizeof(r.fixed), r.fixed.name_bytes, "pool");
  FARMEM_TRY(name);
  r.name = *name;
  FARMEM_TRY(check_pool_name(r.name));
  const w::KvPoolRequest& f = r.fixed;
  if (op == w::KvOpcode::kPoolCreate) {
    if ((f.flags & ~(w::kPoolCreateOnly | w::kPoolReadOnly | w::kPoolTemporary)) != 0) {
      return InvalidArgument("unknown pool create flags");
    }
    if (f.capacity_bytes < w::kMinPoolCapacity) {
      return InvalidArgument(fmt::format("pool capacity {} is below the minimum of {} bytes",
                                         f.capacity_bytes, w::kMinPoolCapacity));
    }
    if (f.expected_count > (1ull << 31)) {
      return InvalidArgument("expected_count above 2^31");
    }
    return r;
  }
  if (f.capacity_bytes != 0 || f.expected_count != 0) {
    return InvalidArgument("pool open/delete takes no capacity or expected count");
  }
  const uint32_t allowed = op == w::KvOpcode::kPoolOpen ? w::kPoolReadOnly : 0u;
  if ((f.flags & ~allowed) != 0) return InvalidArgument("unknown pool flags");
  return r;
}

// Every request addressed to a pool starts with its handle.
static_assert(offsetof(w::KvPoolRef, pool) == 0 && offsetof(w::KvConfigureRequest, pool) == 0 &&
              offsetof(w::KvOpsHeader, pool) == 0 && offsetof(w::KvLocateRequest, pool) == 0 &&
              offsetof(w::KvReleaseRequest, pool) == 0 && offsetof(w::KvFindRequest, pool) == 0 &&
              offsetof(w::KvAttributeRequest, pool) == 0 && offsetof(w::KvAdoRequest, pool) == 0);

Result<uint64_t> leading_pool_handle(const Payload& p) {
  w::KvPoolRef ref;
  if (p.size() < sizeof(ref)) return InvalidArgument("request too short to name a pool");
  std::memcpy(&ref, p.data(), sizeof(ref));
  return ref.pool;
}

Status parse_ops(const Payload& p, w::KvOpsHeader* header, std::vector<OpView>* ops) {
  FARMEM_TRY(read_fixed(p, header, "ops"));
  if (header->reserved != 0) return InvalidArgument("ops header: reserved field is not zero");
  if (header->count == 0 || header->count > w::kMaxOpsPerMessage) {
    return InvalidArgument(fmt::format("ops message holds {} ops, expected 1..{}", header->count,
                                       w::kMaxOpsPerMessage));
  }
  ops->clear();
  ops->reserve(header->count);
  size_t at = sizeof(*header);
  for (uint32_t i = 0; i < header->count; ++i) {
    OpView v;
    if (p.size() - at < sizeof(v.op)) {
      return InvalidArgument(fmt::format("ops message ends inside op {}", i));
    }
    std::memcpy(&v.op, p.data() + at, sizeof(v.op));
    at += sizeof(v.op);
    const w::KvOpRequest& o = v.op;
    if (o.reserved != 0 || o.reserved2 != 0) {
      return InvalidArgument(fmt::format("op {}: reserved field is not zero", i));
    }
    const auto kind = static_cast<w::KvOp>(o.op);
    if (kind != w::KvOp::kGet && kind != w::KvOp::kPut && kind != w::KvOp::kErase) {
      return InvalidArgument(fmt::format("op {}: unknown operation {}", i, o.op));
    }
    if (kind == w::KvOp::kPut) {
      if ((o.flags & ~(w::kPutCreateOnly | w::kPutDontOverwrite)) != 0 ||
          o.flags == (w::kPutCreateOnly | w::kPutDontOverwrite)) {
        return InvalidArgument(fmt::format("op {}: bad put flags {:#x}", i, o.flags));
      }
    } else if (o.flags != 0 || o.value_bytes != 0) {
      return InvalidArgument(fmt::format("op {}: a get or erase takes no flags or value", i));
    }
    if (o.key_bytes == 0 || o.key_bytes > w::kMaxKeyBytes) {
      return InvalidArgument(
          fmt::format("op {}: key of {} bytes, expected 1..{}", i, o.key_bytes, w::kMaxKeyBytes));
    }
    const uint64_t body = uint64_t{o.key_bytes} + o.value_bytes;
    const uint64_t padded = pad8(body);
    if (p.size() - at < padded) {
      return InvalidArgument(fmt::format("op {}: key and value run past the message", i));
    }
    v.key = view(p, at, o.key_bytes);
    v.value = view(p, at + o.key_bytes, o.value_bytes);
    if (!all_zero(p.data() + at + body, padded - body)) {
      return InvalidArgument(fmt::format("op {}: padding is not zero", i));
    }
    at += padded;
    ops->push_back(v);
  }
  if (at != p.size()) return InvalidArgument("ops message has bytes after its last op");
  return OkStatus();
}

Result<LocateView> parse_locate(const Payload& p) {
  LocateView v;
  FARMEM_TRY(read_fixed(p, &v.fixed, "locate"));
  auto key = exact_tail(p, sizeof(v.fixed), v.fixed.key_bytes, "locate");
  FARMEM_TRY(key);
  v.key = *key;
  const w::KvLocateRequest& f = v.fixed;
  if (f.reserved != 0) return InvalidArgument("locate: reserved field is not zero");
  if (f.key_bytes == 0 || f.key_bytes > w::kMaxKeyBytes) {
    return InvalidArgument(fmt::format("locate: key of {} bytes", f.key_bytes));
  }
  const auto mode = static_cast<w::LocateMode>(f.mode);
  if (mode == w::LocateMode::kPutNew) {
    if ((f.flags & ~w::kLocateCreateOnly) != 0) return InvalidArgument("locate: unknown flags");
    if (f.offset != 0) return InvalidArgument("locate kPutNew: offset must be 0");
    if (f.length > w::kMaxValueBytes) {
      return InvalidArgument(
          fmt::format("locate kPutNew: a value of {} bytes is above the "
                      "maximum of {}",
                      f.length, w::kMaxValueBytes));
    }
  } else if (mode == w::LocateMode::kRead || mode == w::LocateMode::kWrite) {
    if (f.flags != 0) return InvalidArgument("locate: flags are for kPutNew only");
  } else {
    return InvalidArgument(fmt::format("locate: unknown mode {}", f.mode));
  }
  return v;
}

Result<w::KvReleaseRequest> parse_release(const Payload& p) {
  w::KvReleaseRequest r;
  FARMEM_TRY(read_fixed(p, &r, "release"));
  FARMEM_TRY(exact_tail(p, sizeof(r), 0, "release").status());
  if (r.reserved != 0) return InvalidArgument("release: reserved field is not zero");
  if ((r.flags & ~w::kReleaseAbort) != 0) return InvalidArgument("release: unknown flags");
  return r;
}

Result<FindView> parse_find(const Payload& p) {
  FindView v;
  FARMEM_TRY(fixed_and_text(p, "find", &v.fixed, &w::KvFindRequest::expression_bytes,
                            w::kMaxFindExpressionBytes, &v.expression));
  return v;
}

Result<AttributeView> parse_attribute(const Payload& p) {
  AttributeView v;
  FARMEM_TRY(read_fixed(p, &v.fixed, "attribute"));
  auto key = exact_tail(p, sizeof(v.fixed), v.fixed.key_bytes, "attribute");
  FARMEM_TRY(key);
  v.key = *key;
  switch (static_cast<w::Attribute>(v.fixed.attribute)) {
    case w::Attribute::kValueLength:
    case w::Attribute::kCrc32:
    case w::Attribute::kWriteEpoch:
      v.per_key = true;
      if (v.key.empty() || v.key.size() > w::kMaxKeyBytes) {
        return InvalidArgument(
            fmt::format("attribute of a key needs a key of 1..{} bytes", w::kMaxKeyBytes));
      }
      return v;
    case w::Attribute::kCount:
    case w::Attribute::kUsedBytes:
    case w::Attribute::kCapacity:
      if (!v.key.empty()) return InvalidArgument("a pool attribute takes no key");
      return v;
  }
  return InvalidArgument(fmt::format("unknown attribute {}", v.fixed.attribute));
}

Result<ConfigureView> parse_configure(const Payload& p) {
  ConfigureView v;
  FARMEM_TRY(fixed_and_text(p, "configure", &v.fixed, &w::KvConfigureRequest::command_bytes,
                            w::kMaxConfigureBytes, &v.command));
  return v;
}

Result<uint64_t> parse_pool_ref(const Payload& p, const char* what) {
  w::KvPoolRef r{};
  FARMEM_TRY(read_fixed(p, &r, what));
  FARMEM_TRY(exact_tail(p, sizeof(r), 0, what).status());
  return r.pool;
}

Result<w::KvListRequest> parse_list(const Payload& p) {
  w::KvListRequest r;
  FARMEM_TRY(read_fixed(p, &r, "list"));
  FARMEM_TRY(exact_tail(p, sizeof(r), 0, "list").status());
  if (r.reserved != 0) return InvalidArgument("list: reserved field is not zero");
  return r;
}

Result<ConfigureCommand> parse_configure_command(std::string_view c) {
  using Kind = ConfigureCommand::Kind;
  ConfigureCommand out;
  auto rest = [&](std::string_view prefix) -> std::optional<std::string_view> {
    if (c.substr(0, prefix.size()) != prefix) return std::nullopt;
    return c.substr(prefix.size());
  };
  if (c == "AddIndex::VolatileTree") return ConfigureCommand{Kind::kAddIndex, {}, {}, {}};
  if (c == "RemoveIndex") return ConfigureCommand{Kind::kRemoveIndex, {}, {}, {}};
  if (auto r = rest("AdoPlugins::")) {
    out.kind = Kind::kAdoPlugins;
    for (std::string_view name : split(*r, ',')) {
      if (name.empty() || name.size() > 255 || name.find('/') != std::string_view::npos ||
          name == "." || name == ".." || name.find('\0') != std::string_view::npos) {
        return InvalidArgument(fmt::format("bad ADO plugin file name '{}'", name));
      }
      out.list.emplace_back(name);
    }
    return out;
  }
  if (auto r = rest("AdoParam::")) {
    out.kind = Kind::kAdoParam;
    const size_t eq = r->find('=');
    if (eq == 0 || eq == std::string_view::npos) {
      return InvalidArgument("AdoParam:: takes <key>=<value>");
    }
    out.key = std::string(r->substr(0, eq));
    out.value = std::string(r->substr(eq + 1));
    return out;
  }
  if (auto r = rest("AdoSignals::")) {
    out.kind = Kind::kAdoSignals;
    for (std::string_view s : split(*r, ',')) {
      if (s != "post-put" && s != "post-get" && s != "post-erase") {
        return InvalidArgument(fmt::format("unknown ADO signal '{}'", s));
      }
      out.list.emplace_back(s);
    }
    return out;
  }
  return InvalidArgument(fmt::format("unknown configure command '{}'", c.substr(0, 64)));
}

}  // namespace farmem::kv::service
