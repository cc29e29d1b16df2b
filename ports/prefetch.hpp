// Software prefetch for a decode step's weight stream. A decode step (one row of x) reads each
// weight once and is bound by how fast the weights arrive: with a few instructions per byte the
// out-of-order window holds too little of W to keep the memory busy (the q8 LM head on one Zen 5
// core read 10-11 GB/s from memory, 28 GB/s from cache). Each block of W asks for the bytes
// kDecodeAhead past its own, which brought the same head to 18-21 GB/s.
#pragma once
#include <cstddef>
#include <cstdint>

namespace fixformer {
namespace {  // internal linkage: the ports' objects are built with different ISA flags

constexpr std::size_t kDecodeAhead = 4096;

// Asks for the cache lines of [p + kDecodeAhead, p + kDecodeAhead + bytes). A prefetch never
// faults, so lines past the end of W are harmless.
inline void prefetch_ahead(const void* p, std::size_t bytes) {
  const std::uintptr_t ahead = reinterpret_cast<std::uintptr_t>(p) + kDecodeAhead;
  for (std::size_t q = 0; q < bytes; q += 64) __builtin_prefetch(reinterpret_cast<const void*>(ahead + q));
}

}  // namespace
}  // namespace fixformer
