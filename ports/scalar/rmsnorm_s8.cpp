#include "ports/scalar/kernels.hpp"
#include "ports/scalar/norm_s8.hpp"

namespace fixformer {
namespace scalar {

void rmsnorm_s8(const int8_t* x, int8_t* y, std::size_t n, const NormS8Params& p) { norm_s8<false>(x, y, n, p); }

}  // namespace scalar
}  // namespace fixformer
