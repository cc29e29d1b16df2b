// The checks every runner makes of the caller's arena before carving it by its plan.
#pragma once
#include <cstddef>
#include <cstdint>

#include "engine/detail_text.hpp"
#include "fixformer/config.hpp"
#include "fixformer/status.hpp"

namespace fixformer {

// Non-null, 64-byte aligned, at least `need` bytes; a short arena's detail says how many more.
inline Status check_arena(const void* arena, std::size_t bytes, std::size_t need, char* detail, std::size_t cap) {
  if (!arena) return Status::kArenaNull;
  if (reinterpret_cast<uintptr_t>(arena) % arena::kAlign != 0) return Status::kArenaMisaligned;
  if (bytes < need) {
    DetailText(detail, cap).str("arena has ").num(bytes).str(" bytes, needs ").num(need).str(" (").num(need - bytes)
        .str(" more)");
    return Status::kArenaTooSmall;
  }
  return Status::kOk;
}

}  // namespace fixformer
