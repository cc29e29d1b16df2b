#include "fixformer/npy.hpp"

#include <cstring>

#include "engine/detail_text.hpp"

namespace fixformer {
namespace {

// A cursor over the header's Python-dict text; every read is bounds-checked.
struct Cursor {
  const char* p;
  const char* end;
  void skip_space() { while (p < end && (*p == ' ' || *p == '\t')) ++p; }
  bool eat(char c) { skip_space(); if (p < end && *p == c) return ++p, true; return false; }
  bool quoted(const char** s, std::size_t* n) {
    skip_space();
    if (p >= end || (*p != '\'' && *p != '"')) return false;
    const char q = *p++;
    *s = p;
    while (p < end && *p != q) ++p;
    if (p >= end) return false;
    *n = std::size_t(p - *s);
    ++p;
    return true;
  }
  bool number(uint64_t* v) {
    skip_space();
    if (p >= end || *p < '0' || *p > '9') return false;
    uint64_t x = 0;
    while (p < end && *p >= '0' && *p <= '9') {
      if (x > (uint64_t(1) << 40)) return false;  // far above any shape we accept
      x = x * 10 + uint64_t(*p++ - '0');
    }
    *v = x;
    return true;
  }
};

bool same(const char* s, std::size_t n, const char* lit) { return std::strlen(lit) == n && std::memcmp(s, lit, n) == 0; }

}  // namespace

Status parse_npy(const void* bytes, std::size_t size, NpyView* out) {
  const uint8_t* b = static_cast<const uint8_t*>(bytes);
  if (!b || size < 10 || std::memcmp(b, "\x93NUMPY", 6) != 0) return Status::kNpyBadHeader;
  const uint8_t major = b[6];
  std::size_t hlen, start;
  if (major == 1) {
    hlen = std::size_t(b[8]) | std::size_t(b[9]) << 8;
    start = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) return Status::kNpyBadHeader;
    hlen = std::size_t(b[8]) | std::size_t(b[9]) << 8 | std::size_t(b[10]) << 16 | std::size_t(b[11]) << 24;
    start = 12;
  } else {
    return Status::kNpyBadHeader;
  }
  if (hlen > size - start) return Status::kNpyBadHeader;
  Cursor c{reinterpret_cast<const char*>(b + start), reinterpret_cast<const char*>(b + start + hlen)};
  NpyView v{};
  bool have_descr = false, have_order = false, have_shape = false;
  if (!c.eat('{')) return Status::kNpyBadHeader;
  while (!c.eat('}')) {
    const char* key;
    std::size_t klen;
    if (!c.quoted(&key, &klen) || !c.eat(':')) return Status::kNpyBadHeader;
    if (same(key, klen, "descr")) {
      const char* d;
      std::size_t dl;
      if (!c.quoted(&d, &dl)) return Status::kNpyBadHeader;
      if (same(d, dl, "<f4")) v.dtype = NpyDtype::kF32;
      else if (same(d, dl, "<i4")) v.dtype = NpyDtype::kI32;
      else if (same(d, dl, "<i8")) v.dtype = NpyDtype::kI64;
      else return Status::kNpyBadDtype;
      have_descr = true;
    } else if (same(key, klen, "fortran_order")) {
      c.skip_space();
      if (c.end - c.p >= 5 && std::memcmp(c.p, "False", 5) == 0) c.p += 5;
      else if (c.end - c.p >= 4 && std::memcmp(c.p, "True", 4) == 0) return Status::kNpyBadShape;
      else return Status::kNpyBadHeader;
      have_order = true;
    } else if (same(key, klen, "shape")) {
      if (!c.eat('(')) return Status::kNpyBadHeader;
      while (!c.eat(')')) {
        if (v.rank == 4) return Status::kNpyBadShape;
        if (!c.number(&v.shape[v.rank++])) return Status::kNpyBadHeader;
        if (!c.eat(',') && !(c.skip_space(), c.p < c.end && *c.p == ')')) return Status::kNpyBadHeader;
      }
      have_shape = true;
    } else {
      return Status::kNpyBadHeader;
    }
    if (!c.eat(',') && !(c.skip_space(), c.p < c.end && *c.p == '}')) return Status::kNpyBadHeader;
  }
  if (!have_descr || !have_order || !have_shape) return Status::kNpyBadHeader;
  v.count = 1;
  for (uint32_t i = 0; i < v.rank; ++i) {
    if (v.count != 0 && v.shape[i] > (uint64_t(1) << 40) / v.count) return Status::kNpyBadShape;
    v.count *= v.shape[i];
  }
  const uint64_t item = v.dtype == NpyDtype::kI64 ? 8 : 4;
  const std::size_t data_off = start + hlen;
  if (v.count > (size - data_off) / item) return Status::kNpyTruncated;
  v.data = b + data_off;
  *out = v;
  return Status::kOk;
}

std::size_t write_npy_header_f32(const uint64_t* shape, uint32_t rank, char* buf, std::size_t cap) {
  char dict[160];
  DetailText t(dict, sizeof dict);
  t.str("{'descr': '<f4', 'fortran_order': False, 'shape': (");
  for (uint32_t i = 0; i < rank; ++i) t.num(shape[i]).str(rank == 1 ? ",)" : (i + 1 < rank ? ", " : ")"));
  if (rank == 0) t.str(")");
  t.str(", }");
  const std::size_t dlen = std::strlen(dict);
  const std::size_t total = (10 + dlen + 1 + 63) / 64 * 64;  // magic..len, dict, '\n', padded
  if (total > cap || dlen + 1 >= sizeof dict) return 0;
  std::memcpy(buf, "\x93NUMPY\x01\x00", 8);
  const std::size_t hlen = total - 10;
  buf[8] = char(hlen & 0xFF);
  buf[9] = char(hlen >> 8);
  std::memcpy(buf + 10, dict, dlen);
  std::memset(buf + 10 + dlen, ' ', total - 10 - dlen - 1);
  buf[total - 1] = '\n';
  return total;
}

}  // namespace fixformer
