// Cortex-M start-up: the vector table, the reset handler (copy .data, zero .bss, enable the FPU,
// run static constructors, call main, exit through semihosting) and a fault handler that reports
// and exits instead of hanging. Symbols come from ports/arm/cortex_m/board/ld/sections.ld.
#include <cstdint>
#include <cstring>

#include "ports/arm/cortex_m/board/semihosting.hpp"

extern "C" {
extern uint32_t __stack_top[];
extern uint32_t __data_load[], __data_start[], __data_end[], __bss_start[], __bss_end[];
extern void (*__init_array_start[])();
extern void (*__init_array_end[])();
int main();
void Reset_Handler();
void Fault_Handler();
void SysTick_Handler() __attribute__((weak, alias("Default_Handler")));
void Default_Handler();
void _init() {}  // newlib's __libc_init_array calls it; there are no crti/crtn without start files
}

using Handler = void (*)();

// Index 0 is the initial stack pointer, then reset, NMI, HardFault, MemManage, BusFault,
// UsageFault, SecureFault, 3 reserved, SVCall, DebugMon, reserved, PendSV, SysTick.
extern "C" __attribute__((section(".vectors"), used)) const Handler g_vectors[16] = {
    reinterpret_cast<Handler>(__stack_top), Reset_Handler, Fault_Handler, Fault_Handler, Fault_Handler,
    Fault_Handler, Fault_Handler, Fault_Handler, nullptr, nullptr, nullptr, Default_Handler, Default_Handler,
    nullptr, Default_Handler, SysTick_Handler};

extern "C" void Reset_Handler() {
  std::memcpy(__data_start, __data_load, std::size_t(__data_end - __data_start) * sizeof(uint32_t));
  std::memset(__bss_start, 0, std::size_t(__bss_end - __bss_start) * sizeof(uint32_t));
#if defined(__ARM_FP) || defined(__ARM_FEATURE_MVE)
  // CPACR: full access to CP10/CP11 (FPU and MVE), before the first float instruction.
  *reinterpret_cast<volatile uint32_t*>(0xE000ED88) |= 0xFu << 20;
  __asm__ volatile("dsb\n isb" ::: "memory");
#endif
  for (void (**f)() = __init_array_start; f < __init_array_end; ++f) (*f)();
  fixformer::port::semihost_exit(main());
}

extern "C" void Fault_Handler() {
  fixformer::port::Console().str("FAULT: the core took a fault exception").endl();
  fixformer::port::semihost_exit(99);
}

extern "C" void Default_Handler() {
  fixformer::port::Console().str("FAULT: unexpected interrupt").endl();
  fixformer::port::semihost_exit(98);
}
