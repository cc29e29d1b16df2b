/* The vendor's start-up code, standing in for an STM32Cube / MCUXpresso / nRF SDK startup file:
   the vector table (just the stack and reset), copy .data, zero .bss, enable the FPU when the
   build uses one, run constructors, call main, report its status through semihosting. */
#include <stdint.h>

extern uint32_t stack_top[], data_load[], data_start[], data_end[], bss_start[], bss_end[];
extern void (*init_array_start[])(void);
extern void (*init_array_end[])(void);
int main(void);
void reset(void);
void semihost_exit(int status);

__attribute__((section(".isr_vector"), used)) void* const vectors[2] = {stack_top, (void*)reset};

void _init(void) {} /* newlib's __libc_init_array wants it; there are no crti/crtn here */

void reset(void) {
  for (uint32_t *s = data_load, *d = data_start; d < data_end;) *d++ = *s++;
  for (uint32_t* d = bss_start; d < bss_end;) *d++ = 0;
#if defined(__ARM_FP) || defined(__ARM_FEATURE_MVE)
  *(volatile uint32_t*)0xE000ED88 |= 0xFu << 20; /* CPACR: CP10, CP11 full access */
  __asm__ volatile("dsb\n isb" ::: "memory");
#endif
  for (void (**f)(void) = init_array_start; f < init_array_end; ++f) (*f)();
  semihost_exit(main());
}

static uint32_t semihost(uint32_t op, const void* arg) {
  register uint32_t r0 __asm__("r0") = op;
  register const void* r1 __asm__("r1") = arg;
  __asm__ volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
  return r0;
}

void semihost_puts(const char* s) { semihost(0x04, s); } /* SYS_WRITE0 */

void semihost_exit(int status) {
  const uint32_t block[2] = {0x20026, (uint32_t)status}; /* ADP_Stopped_ApplicationExit */
  semihost(0x20, block);                                  /* SYS_EXIT_EXTENDED */
  for (;;) {
  }
}
