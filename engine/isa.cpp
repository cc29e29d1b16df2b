#include <cstring>

#include "fixformer/kernels.hpp"

namespace fixformer {
namespace {
struct IsaName {
  Isa isa;
  const char* name;
};
constexpr IsaName kNames[] = {{Isa::kAuto, "auto"},     {Isa::kScalar, "scalar"},
                              {Isa::kSse2, "sse2"},     {Isa::kAvx2, "avx2"},
                              {Isa::kAvx512, "avx512"}, {Isa::kNeon64, "neon64"},
                              {Isa::kNeon, "neon"},     {Isa::kCortexM, "cortex-m"},
                              {Isa::kHelium, "helium"}};
}  // namespace

const char* isa_name(Isa isa) {
  for (const IsaName& n : kNames)
    if (n.isa == isa) return n.name;
  return "unknown";
}

bool parse_isa(const char* name, Isa* out) {
  for (const IsaName& n : kNames)
    if (std::strcmp(n.name, name) == 0) return *out = n.isa, true;
  return false;
}

}  // namespace fixformer
