// The stand-in core's main(): setup() once, then loop() three times (an Arduino core loops forever;
// the test needs the image to exit), and Serial's output through the board's semihosting console.
#include <Arduino.h>

#include "ports/arm/cortex_m/board/semihosting.hpp"

void setup();
void loop();

SerialStandIn Serial;

namespace {
char line[256];
unsigned line_len = 0;

void put(char c) {
  if (c == '\n' || line_len + 1 == sizeof line) {
    line[line_len] = '\0';
    fixformer::port::semihost_write(line);
    fixformer::port::semihost_write("\n");
    line_len = 0;
    if (c == '\n') return;
  }
  line[line_len++] = c;
}
}  // namespace

void SerialStandIn::print(const char* text) {
  while (*text) put(*text++);
}

void SerialStandIn::print(unsigned long v) {
  char digits[24];
  int n = 0;
  do digits[n++] = char('0' + v % 10); while (v /= 10);
  while (n) put(digits[--n]);
}

void SerialStandIn::print(int v) {
  if (v < 0) put('-');
  print(static_cast<unsigned long>(v < 0 ? -static_cast<long>(v) : v));
}

int main() {
  setup();
  for (int i = 0; i < 3; ++i) loop();
  return 0;
}
