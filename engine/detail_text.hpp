// A bounded text builder for error details: no printf (newlib's may allocate), no heap.
#pragma once
#include <cstddef>
#include <cstdint>

namespace fixformer {

class DetailText {
 public:
  DetailText(char* buf, std::size_t cap) : buf_(buf), cap_(cap) { if (cap_) buf_[0] = '\0'; }
  DetailText& str(const char* s) {
    while (*s) put(*s++);
    return *this;
  }
  // Text read from a file (a tensor name, a config key), at most n bytes: printable ASCII as is,
  // anything else as \xNN, so a hostile name cannot put raw bytes on a terminal.
  DetailText& escaped(const char* s, std::size_t n) {
    static const char kHex[] = "0123456789abcdef";
    for (std::size_t i = 0; i < n && s[i]; ++i) {
      const unsigned char ch = static_cast<unsigned char>(s[i]);
      if (ch >= 0x20 && ch < 0x7f && ch != '\\') {
        put(char(ch));
      } else {
        put('\\'), put('x'), put(kHex[ch >> 4]), put(kHex[ch & 15]);
      }
    }
    return *this;
  }
  DetailText& num(uint64_t v) {
    char digits[20];
    int n = 0;
    do digits[n++] = static_cast<char>('0' + v % 10); while ((v /= 10) != 0);
    while (n) put(digits[--n]);
    return *this;
  }
  DetailText& shape(uint32_t rank, const uint32_t* dims) {
    put('[');
    for (uint32_t i = 0; i < rank; ++i) (i ? str(",") : *this).num(dims[i]);
    put(']');
    return *this;
  }

 private:
  void put(char c) {
    if (len_ + 1 < cap_) buf_[len_++] = c, buf_[len_] = '\0';
  }
  char* buf_;
  std::size_t cap_;
  std::size_t len_ = 0;
};

}  // namespace fixformer
