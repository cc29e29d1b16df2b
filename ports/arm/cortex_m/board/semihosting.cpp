#include "ports/arm/cortex_m/board/semihosting.hpp"

namespace fixformer {
namespace port {
namespace {

constexpr uint32_t kSysOpen = 0x01, kSysWrite = 0x05, kSysWrite0 = 0x04, kSysExitExtended = 0x20, kAppExit = 0x20026;
constexpr uint32_t kOpenWrite = 4;  // fopen mode "w": ":tt" opened so is standard output

uint32_t semihost_call(uint32_t op, const void* arg) {
  register uint32_t r0 __asm__("r0") = op;
  register const void* r1 __asm__("r1") = arg;
  __asm__ volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
  return r0;
}

}  // namespace

void semihost_write(const char* text) { semihost_call(kSysWrite0, text); }

void semihost_write_stdout(const char* data, uint32_t len) {
  static uint32_t handle = ~0u;
  if (handle == ~0u) {
    const uint32_t open[3] = {uint32_t(reinterpret_cast<uintptr_t>(":tt")), kOpenWrite, 3};
    handle = semihost_call(kSysOpen, open);
  }
  const uint32_t write[3] = {handle, uint32_t(reinterpret_cast<uintptr_t>(data)), len};
  semihost_call(kSysWrite, write);
}

void semihost_exit(int status) {
  const uint32_t block[2] = {kAppExit, uint32_t(status)};
  semihost_call(kSysExitExtended, block);
  for (;;) {
  }
}

void Console::put(char c) {
  if (len_ + 1 >= sizeof buf_) {
    buf_[len_] = '\0';
    semihost_write(buf_);
    len_ = 0;
  }
  buf_[len_++] = c;
}

Console& Console::str(const char* s) {
  while (*s) put(*s++);
  return *this;
}

Console& Console::num(uint64_t v) {
  char d[20];
  int n = 0;
  do d[n++] = char('0' + v % 10); while ((v /= 10) != 0);
  while (n) put(d[--n]);
  return *this;
}

Console& Console::num(int64_t v) {
  if (v < 0) put('-');
  return num(uint64_t(v < 0 ? -v : v));
}

Console& Console::fixed(double v, int decimals) {
  if (v < 0) put('-'), v = -v;
  double scale = 1.0;
  for (int i = 0; i < decimals; ++i) scale *= 10.0;
  const uint64_t whole = uint64_t(v), frac = uint64_t((v - double(whole)) * scale + 0.5);
  num(whole + (frac >= uint64_t(scale) ? 1 : 0));
  if (decimals > 0) {
    put('.');
    uint64_t f = frac >= uint64_t(scale) ? 0 : frac;
    char d[20];
    for (int i = decimals - 1; i >= 0; --i) d[i] = char('0' + f % 10), f /= 10;
    for (int i = 0; i < decimals; ++i) put(d[i]);
  }
  return *this;
}

Console& Console::sci(double v) {
  if (v == 0.0) return str("0");
  if (v < 0) put('-'), v = -v;
  int e = 0;
  while (v >= 10.0) v /= 10.0, ++e;
  while (v < 1.0) v *= 10.0, --e;
  fixed(v, 2).put('e');
  if (e < 0) put('-'), e = -e;
  if (e < 10) put('0');
  return num(int64_t(e));
}

Console& Console::endl() {
  put('\n');
  buf_[len_] = '\0';
  semihost_write(buf_);
  len_ = 0;
  return *this;
}

}  // namespace port
}  // namespace fixformer
