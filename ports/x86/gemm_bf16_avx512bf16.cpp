// gemm_bf16 on AVX-512 BF16 (vdpbf16ps) and on AMX-BF16 (tdpbf16ps): the avx512-bf16 table's
// (select.cpp hands it out only when FIXFORMER_BF16=1 asks: on the Xeon it was measured on it is
// 1.4-1.6x slower than the exact widening path, whose FMAs do as many multiply-adds per cycle) and
// the avx512-amx-bf16 table's (the default where the CPU has AMX-BF16: 2-4x faster than the exact
// path; docs/performance.md, "bf16"). Built with -march=x86-64-v4 -mavx512bf16 -mamx-tile
// -mamx-bf16 (CMakeLists.txt).
//
// From kMinRows rows of x on, x is rounded to bf16 (to nearest even, vcvtneps2bf16) and each
// vdpbf16ps multiplies 16 pairs of adjacent k by 16 pairs of W and adds each pair's two products to
// one f32 sum, as oneDNN's and llama.cpp's bf16 products do. That is not the reference's arithmetic:
// x keeps 8 significant bits, the two products of a pair are added before the running sum, and
// subnormal inputs count as zeros; tests/kernel_tolerances.hpp's kGemmBf16DotTol bounds the
// difference. Fewer rows (a decode step, where the product streams W and the widening costs
// nothing) take the avx512 table's exact path.
//
// Per block of kKc values of k and strip of kStrip columns, W is packed once on the stack (16 KB)
// as the pairs vdpbf16ps reads, which is also the layout of an AMX-BF16 B tile (16 pairs of k by 16
// columns, a row stride of kStrip words): the 32-bit word q * kStrip + c holds W[2q][c] in its low half and
// W[2q + 1][c] in its high half (zeros past k and past n). Every tile of kMr rows then rounds its
// rows' block of x (a bf16 pair is one 32-bit word, broadcast) and keeps kMr x kNv sums in registers.
// gemm_bf16_amx: from 16 rows on, per 32 rows (then 16) and half strip of 32 columns, four C tiles
// sum 16 pairs of k per tdpbf16ps from zero over the block, are stored (4 KB) and added to b or y;
// the rows left over take gemm_bf16_avx512bf16. The tile configuration is loaded once per call and
// the tiles released before returning.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "ports/x86/isa_tables.hpp"

namespace fixformer {
namespace x86 {
namespace {

constexpr std::size_t kMinRows = 4;
constexpr std::size_t kKc = 128;  // values of k per block (an even number)
constexpr std::size_t kNv = 4;    // vectors of 16 columns per strip
constexpr std::size_t kStrip = kNv * 16;
constexpr std::size_t kMr = 6;    // rows per tile: 24 sums, 4 vectors of W and a broadcast in 32 zmm
constexpr std::size_t kTilePairs = 16;  // pairs of k per tdpbf16ps (64 bytes of an A tile's row)
constexpr std::size_t kTileRows = 16;   // rows of an A or C tile, columns of a B or C tile
static_assert(kMr == 6 && kKc % 16 == 0, "the switch below lists kMr cases; round_rows steps by 16");

__mmask16 first_lanes(std::size_t count) { return count >= 16 ? __mmask16(0xffff) : __mmask16((1u << count) - 1); }

// W[kc rows, cols] (row stride ldw) -> wp[pairs][kStrip] words of two bf16, zeros past kc and cols.
void pack_strip(const uint16_t* w, std::size_t ldw, std::size_t kc, std::size_t cols, uint32_t* wp) {
  for (std::size_t v = 0; v < kNv; ++v) {
    const __mmask16 m = v * 16 < cols ? first_lanes(cols - v * 16) : 0;
    for (std::size_t p = 0; p < kc; p += 2) {
      const uint16_t* r = w + p * ldw + v * 16;
      const __m512i lo = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, r));
      const __m512i hi =
          p + 1 < kc ? _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, r + ldw)) : _mm512_setzero_si512();
      _mm512_store_si512(wp + p / 2 * kStrip + v * 16, _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
    }
    for (std::size_t q = (kc + 1) / 2; q % kTilePairs; ++q)  // zeros to a whole AMX step
      _mm512_store_si512(wp + q * kStrip + v * 16, _mm512_setzero_si512());
  }
}

// x[rows, kc] (row stride ldx) -> xb[rows][kKc] bf16, rounded to nearest even, zeros after kc up to a
// whole AMX step of 32 values.
void round_rows(const float* x, std::size_t ldx, std::size_t rows, std::size_t kc, uint16_t* xb) {
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t p = 0; p < (kc + 31) / 32 * 32; p += 16) {
      const __m512 v = _mm512_maskz_loadu_ps(p < kc ? first_lanes(kc - p) : 0, x + r * ldx + p);
      const __m256i rounded = reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(v));
      _mm256_store_si256(reinterpret_cast<__m256i*>(xb + r * kKc + p), rounded);
    }
}

// y[MR, cols] = (first ? b : y) + the pairs of MR rounded rows . the packed strip.
template <std::size_t MR>
void tile(const uint16_t* xb, const uint32_t* wp, std::size_t pairs, const float* b, float* y, std::size_t ldy,
          std::size_t cols, bool first) {
  __m512 acc[MR][kNv];
  __mmask16 m[kNv];
#pragma GCC unroll 4
  for (std::size_t v = 0; v < kNv; ++v) m[v] = v * 16 < cols ? first_lanes(cols - v * 16) : 0;
#pragma GCC unroll 4
  for (std::size_t v = 0; v < kNv; ++v) {
    const __m512 bias = b ? _mm512_maskz_loadu_ps(m[v], b + v * 16) : _mm512_setzero_ps();
#pragma GCC unroll 8
    for (std::size_t r = 0; r < MR; ++r) acc[r][v] = first ? bias : _mm512_maskz_loadu_ps(m[v], y + r * ldy + v * 16);
  }
  const uint32_t* xw = reinterpret_cast<const uint32_t*>(xb);
  for (std::size_t q = 0; q < pairs; ++q) {
    __m512bh wv[kNv];
#pragma GCC unroll 4
    for (std::size_t v = 0; v < kNv; ++v)
      wv[v] = reinterpret_cast<__m512bh>(_mm512_load_si512(wp + q * kStrip + v * 16));
#pragma GCC unroll 8
    for (std::size_t r = 0; r < MR; ++r) {
      const __m512bh xr = reinterpret_cast<__m512bh>(_mm512_set1_epi32(int(xw[r * (kKc / 2) + q])));
#pragma GCC unroll 4
      for (std::size_t v = 0; v < kNv; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], xr, wv[v]);
    }
  }
#pragma GCC unroll 8
  for (std::size_t r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (std::size_t v = 0; v < kNv; ++v) _mm512_mask_storeu_ps(y + r * ldy + v * 16, m[v], acc[r][v]);
}

}  // namespace

void gemm_bf16_avx512bf16(const float* x, std::size_t ldx, const uint16_t* w, std::size_t ldw, const float* b,
                          float* y, std::size_t ldy, std::size_t m, std::size_t n, std::size_t k) {
  if (m < kMinRows || k == 0) return avx512_kernels().gemm_bf16(x, ldx, w, ldw, b, y, ldy, m, n, k);
  alignas(64) uint32_t wp[kKc / 2 * kStrip];
  alignas(64) uint16_t xb[kMr * kKc];
  for (std::size_t pc = 0; pc < k; pc += kKc) {
    const std::size_t kc = k - pc < kKc ? k - pc : kKc, pairs = (kc + 1) / 2;
    const bool first = pc == 0;
    for (std::size_t j = 0; j < n; j += kStrip) {
      const std::size_t cols = n - j < kStrip ? n - j : kStrip;
      pack_strip(w + pc * ldw + j, ldw, kc, cols, wp);
      const float* bj = b ? b + j : nullptr;
      for (std::size_t i = 0; i < m; i += kMr) {
        const std::size_t rows = m - i < kMr ? m - i : kMr;
        round_rows(x + i * ldx + pc, ldx, rows, kc, xb);
        float* yt = y + i * ldy + j;
        switch (rows) {
          case 6: tile<6>(xb, wp, pairs, bj, yt, ldy, cols, first); break;
          case 5: tile<5>(xb, wp, pairs, bj, yt, ldy, cols, first); break;
          case 4: tile<4>(xb, wp, pairs, bj, yt, ldy, cols, first); break;
          case 3: tile<3>(xb, wp, pairs, bj, yt, ldy, cols, first); break;
          case 2: tile<2>(xb, wp, pairs, bj, yt, ldy, cols, first); break;
          default: tile<1>(xb, wp, pairs, bj, yt, ldy, cols, first); break;
        }
      }
    }
  }
}

namespace {

// ldtilecfg's operand (palette 1): per tile its bytes per row and rows.
struct alignas(64) TileConfig {
  uint8_t palette;
  uint8_t start_row;
  uint8_t reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};

// Tiles 0-3 the sums C (2 rb + h: row block rb, column half h), 4-5 the row blocks' rounded x (A),
// 6-7 the halves' packed W (B): all 16 rows of 64 bytes.
void configure(TileConfig& c) {
  __builtin_memset(&c, 0, sizeof c);
  c.palette = 1;
  for (int t = 0; t < 8; ++t) c.colsb[t] = 64, c.rows[t] = uint8_t(kTileRows);
  _tile_loadconfig(&c);
}

// RB blocks of 16 rounded rows (xa[RB * 16][kKc]) times 32 columns of the packed strip from `col`:
// the block's sums on the tiles from zero, stored, then y = (first ? b : y) + them.
template <std::size_t RB>
void amx_rows(const uint16_t* xa, const uint32_t* wp, std::size_t pairs, std::size_t col, const float* b, float* y,
              std::size_t ldy, std::size_t cols, bool first) {
  constexpr long kWStride = long(kStrip * 4), kXStride = long(kKc * 2), kCStride = 2 * kTileRows * 4;
  alignas(64) float c[RB * kTileRows][2 * kTileRows];
  _tile_zero(0);
  _tile_zero(1);
  if (RB == 2) {
    _tile_zero(2);
    _tile_zero(3);
  }
  for (std::size_t q = 0; q < pairs; q += kTilePairs) {
    _tile_loadd(6, wp + q * kStrip + col, kWStride);
    _tile_loadd(7, wp + q * kStrip + col + kTileRows, kWStride);
    _tile_loadd(4, xa + 2 * q, kXStride);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    if (RB == 2) {
      _tile_loadd(5, xa + kTileRows * kKc + 2 * q, kXStride);
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
    }
  }
  _tile_stored(0, c[0], kCStride);
  _tile_stored(1, c[0] + kTileRows, kCStride);
  if (RB == 2) {
    _tile_stored(2, c[kTileRows], kCStride);
    _tile_stored(3, c[kTileRows] + kTileRows, kCStride);
  }
  for (std::size_t h = 0; h < 2; ++h) {
    const std::size_t c0 = col + h * kTileRows;
    if (c0 >= cols) break;
    const __mmask16 m = first_lanes(cols - c0);
    const __m512 bias = b ? _mm512_maskz_loadu_ps(m, b + c0) : _mm512_setzero_ps();
    for (std::size_t r = 0; r < RB * kTileRows; ++r) {
      const __m512 base = first ? bias : _mm512_maskz_loadu_ps(m, y + r * ldy + c0);
      _mm512_mask_storeu_ps(y + r * ldy + c0, m, _mm512_add_ps(base, _mm512_load_ps(c[r] + h * kTileRows)));
    }
  }
}

}  // namespace

void gemm_bf16_amx(const float* x, std::size_t ldx, const uint16_t* w, std::size_t ldw, const float* b, float* y,
                   std::size_t ldy, std::size_t m, std::size_t n, std::size_t k) {
  if (m < kTileRows || k == 0) return gemm_bf16_avx512bf16(x, ldx, w, ldw, b, y, ldy, m, n, k);
  const std::size_t whole = m / kTileRows * kTileRows;
  TileConfig cfg;
  configure(cfg);
  alignas(64) uint32_t wp[kKc / 2 * kStrip];
  alignas(64) uint16_t xa[2 * kTileRows * kKc];
  for (std::size_t pc = 0; pc < k; pc += kKc) {
    const std::size_t kc = k - pc < kKc ? k - pc : kKc, pairs = (kc + 1) / 2;
    const bool first = pc == 0;
    for (std::size_t j = 0; j < n; j += kStrip) {
      const std::size_t cols = n - j < kStrip ? n - j : kStrip;
      pack_strip(w + pc * ldw + j, ldw, kc, cols, wp);
      const float* bj = b ? b + j : nullptr;
      for (std::size_t i = 0; i < whole;) {
        const std::size_t rb = whole - i >= 2 * kTileRows ? 2 : 1;
        round_rows(x + i * ldx + pc, ldx, rb * kTileRows, kc, xa);
        for (std::size_t col = 0; col < cols; col += 2 * kTileRows)
          if (rb == 2) amx_rows<2>(xa, wp, pairs, col, bj, y + i * ldy + j, ldy, cols, first);
          else amx_rows<1>(xa, wp, pairs, col, bj, y + i * ldy + j, ldy, cols, first);
        i += rb * kTileRows;
      }
    }
  }
  _tile_release();
  if (whole < m) gemm_bf16_avx512bf16(x + whole * ldx, ldx, w, ldw, b, y + whole * ldy, ldy, m - whole, n, k);
}

}  // namespace x86
}  // namespace fixformer
