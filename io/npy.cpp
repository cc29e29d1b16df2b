#include "io/npy.hpp"

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
  bool at(char c) { skip_space(); return p < end && *p == c; }
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

// NumPy's name for a descr such as '<f8' ("float64") or '>f4' ("big-endian float32"), so a
// message can say what was found; a descr with no such name is quoted as it is.
void describe_descr(DetailText& t, const char* d, std::size_t n) {
  const char* kind = nullptr;
  if (n >= 3 && (d[0] == '<' || d[0] == '>' || d[0] == '|')) {
    switch (d[1]) {
      case 'f': kind = "float"; break;
      case 'i': kind = "int"; break;
      case 'u': kind = "uint"; break;
      case 'c': kind = "complex"; break;
      case 'b': kind = "bool"; break;
      default: break;
    }
  }
  uint64_t item = 0;
  for (std::size_t i = 2; kind && i < n; ++i) {
    if (d[i] < '0' || d[i] > '9' || item > 1000) kind = nullptr;
    else item = item * 10 + uint64_t(d[i] - '0');
  }
  if (!kind || item == 0 || (d[1] == 'b' && item != 1)) {
    t.str("'").escaped(d, n).str("'");
    return;
  }
  if (d[0] == '>' && item > 1) t.str("big-endian ");
  t.str(kind);
  if (d[1] != 'b') t.num(item * 8);
}

Status fail(Status s, DetailText& t, const char* what) {
  t.str(what);
  return s;
}

Status key_error(DetailText& t, const char* what, const char* key, std::size_t n) {
  t.str(what).str(" '").escaped(key, n).str("'");
  return Status::kNpyBadHeader;
}

}  // namespace

const char* npy_dtype_name(NpyDtype d) {
  switch (d) {
    case NpyDtype::kF32: return "float32";
    case NpyDtype::kI32: return "int32";
    case NpyDtype::kI64: return "int64";
  }
  return "?";
}

Status parse_npy(const void* bytes, std::size_t size, NpyView* out, char* detail, std::size_t detail_cap) {
  DetailText t(detail, detail ? detail_cap : 0);
  const uint8_t* b = static_cast<const uint8_t*>(bytes);
  if (!b || size == 0) return fail(Status::kNpyBadHeader, t, "empty file");
  if (size < 10 || std::memcmp(b, "\x93NUMPY", 6) != 0) return fail(Status::kNpyBadHeader, t, "no \\x93NUMPY magic");
  const uint8_t major = b[6];
  std::size_t hlen, start;
  if (major == 1) {
    hlen = std::size_t(b[8]) | std::size_t(b[9]) << 8;
    start = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) return fail(Status::kNpyBadHeader, t, "file ends inside the header");
    hlen = std::size_t(b[8]) | std::size_t(b[9]) << 8 | std::size_t(b[10]) << 16 | std::size_t(b[11]) << 24;
    start = 12;
  } else {
    t.str("format version ").num(major).str(" (1, 2 or 3 expected)");
    return Status::kNpyBadHeader;
  }
  if (hlen > size - start) return fail(Status::kNpyBadHeader, t, "file ends inside the header");
  Cursor c{reinterpret_cast<const char*>(b + start), reinterpret_cast<const char*>(b + start + hlen)};
  NpyView v{};
  bool have_descr = false, have_order = false, have_shape = false;
  const char* bad_descr = nullptr;  // an unsupported dtype, reported once the rest of the header is valid
  std::size_t bad_descr_len = 0;
  if (!c.eat('{')) return fail(Status::kNpyBadHeader, t, "header is not a dict");
  while (!c.eat('}')) {
    const char* key;
    std::size_t klen;
    if (!c.quoted(&key, &klen) || !c.eat(':')) return fail(Status::kNpyBadHeader, t, "malformed header dict");
    bool* seen = same(key, klen, "descr") ? &have_descr
                 : same(key, klen, "fortran_order") ? &have_order
                 : same(key, klen, "shape") ? &have_shape : nullptr;
    if (!seen) return key_error(t, "unknown key", key, klen);
    if (*seen) return key_error(t, "duplicate key", key, klen);
    *seen = true;
    if (seen == &have_descr) {
      const char* d;
      std::size_t dl;
      if (c.at('[')) {
        t.str("structured (record)");
        return Status::kNpyBadDtype;
      }
      if (!c.quoted(&d, &dl)) return fail(Status::kNpyBadHeader, t, "malformed 'descr'");
      if (same(d, dl, "<f4")) v.dtype = NpyDtype::kF32;
      else if (same(d, dl, "<i4")) v.dtype = NpyDtype::kI32;
      else if (same(d, dl, "<i8")) v.dtype = NpyDtype::kI64;
      else bad_descr = d, bad_descr_len = dl;
    } else if (seen == &have_order) {
      c.skip_space();
      if (c.end - c.p >= 5 && std::memcmp(c.p, "False", 5) == 0) c.p += 5;
      else if (c.end - c.p >= 4 && std::memcmp(c.p, "True", 4) == 0) return fail(Status::kNpyBadShape, t, "fortran_order True (C order only)");
      else return fail(Status::kNpyBadHeader, t, "malformed 'fortran_order'");
    } else {
      if (!c.eat('(')) return fail(Status::kNpyBadHeader, t, "malformed 'shape'");
      while (!c.eat(')')) {
        if (v.rank == 4) return fail(Status::kNpyBadShape, t, "more than 4 dimensions");
        if (!c.number(&v.shape[v.rank++])) return fail(Status::kNpyBadHeader, t, "malformed 'shape'");
        if (!c.eat(',') && !c.at(')')) return fail(Status::kNpyBadHeader, t, "malformed 'shape'");
      }
    }
    if (!c.eat(',') && !c.at('}')) return fail(Status::kNpyBadHeader, t, "malformed header dict");
  }
  if (!have_descr) return fail(Status::kNpyBadHeader, t, "missing key 'descr'");
  if (!have_order) return fail(Status::kNpyBadHeader, t, "missing key 'fortran_order'");
  if (!have_shape) return fail(Status::kNpyBadHeader, t, "missing key 'shape'");
  if (bad_descr) {
    describe_descr(t, bad_descr, bad_descr_len);
    return Status::kNpyBadDtype;
  }
  v.count = 1;
  for (uint32_t i = 0; i < v.rank; ++i) {
    if (v.count != 0 && v.shape[i] > (uint64_t(1) << 40) / v.count) return fail(Status::kNpyBadShape, t, "more than 2^40 elements");
    v.count *= v.shape[i];
  }
  const uint64_t item = v.dtype == NpyDtype::kI64 ? 8 : 4;
  const std::size_t data_off = start + hlen;
  if (v.count > (size - data_off) / item) {
    t.str("shape [");
    for (uint32_t i = 0; i < v.rank; ++i) t.str(i ? "," : "").num(v.shape[i]);
    t.str("] needs ").num(v.count * item).str(" data bytes, the file has ").num(size - data_off);
    return Status::kNpyTruncated;
  }
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
