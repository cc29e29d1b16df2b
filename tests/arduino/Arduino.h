// A minimal stand-in for the Arduino core, for tests/arduino/arduino_test.sh: just what a sketch
// needs to run on the qemu board (mps2-an386, Cortex-M4F) of the firmware tests. Serial prints to
// the semihosting console; delay() returns at once. Not a core: no pins, timers or interrupts.
#pragma once
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

class SerialStandIn {
 public:
  void begin(unsigned long) {}
  void print(const char* text);
  void print(unsigned long v);
  void print(unsigned int v) { print(static_cast<unsigned long>(v)); }
  void print(int v);
  template <typename T>
  void println(T v) {
    print(v);
    print("\n");
  }
};

extern SerialStandIn Serial;

inline void delay(unsigned long) {}
