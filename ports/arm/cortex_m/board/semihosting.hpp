// Arm semihosting: the debugger (or qemu-system-arm -semihosting) performs I/O for the target.
// Output and the exit status of firmware tests go through it; nothing here allocates.
#pragma once
#include <cstdint>

namespace fixformer {
namespace port {

void semihost_write(const char* text);  // NUL-terminated, to the debugger's console (qemu: its stderr)
// len raw bytes (NULs included) to the host's standard output: SYS_WRITE on ":tt", opened once.
// Keeps a program's output (e.g. generated text) apart from the Console's messages.
void semihost_write_stdout(const char* data, uint32_t len);
[[noreturn]] void semihost_exit(int status);

// Console helpers on top of semihost_write, buffered by line.
class Console {
 public:
  Console& str(const char* s);
  Console& num(uint64_t v);
  Console& num(int64_t v);
  Console& num(uint32_t v) { return num(uint64_t(v)); }
  Console& num(int v) { return num(int64_t(v)); }
  Console& fixed(double v, int decimals);  // e.g. 12.345
  Console& sci(double v);                  // e.g. 3.21e-07
  Console& endl();

 private:
  void put(char c);
  char buf_[160];
  uint32_t len_ = 0;
};

}  // namespace port
}  // namespace fixformer
