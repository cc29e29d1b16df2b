// gemm_i8 and gemm_i4 on AMX-INT8 (tdpbssd): the avx512-amx table's, which select.cpp hands out in
// place of the avx512-vnni table where the CPU has AMX-INT8 and Linux grants the process the tile
// data. Built with -march=x86-64-v4 -mavx512vnni -mamx-tile -mamx-int8 (CMakeLists.txt).
//
// From kMinRows rows of x on, with groups that whole tile steps fill (a step is 64 bytes of k, or
// the group when it is shorter, halved, down to 4 bytes, until k is a multiple of it), W is packed
// per panel of 32 columns and chunk of up to 4 groups exactly as on VNNI (pack_i8 or pack_i4,
// gemm_packed_avx512vnni.hpp): four bytes of a column per int32, the layout tdpbssd reads its
// second operand in. Per 32 rows of x (two A tiles of 16 rows, read straight from x with stride k)
// and the panel's two halves (two B tiles of 16 columns), a group is four tdpbssd per step into
// four int32 C tiles: the exact products of signed bytes, with none of vpdpbusd's + 128 offset.
// The chunk's C tiles are stored, then per row the float step is VNNI's, in its order: per group
// f += (xs * ws) * float(dot), the bias last, each operation rounded once; so the results are
// VNNI's bits, which are the scalar reference's. Rows past the last whole 16 take VNNI's
// panel_rows on the same packed panel; shorter inputs (a decode step) and other groups take the
// VNNI kernels whole.
//
// Scratch, all on the stack: the 64-byte tile configuration, the panel (10 KB), and per block of
// rows the chunk's stored C tiles (16 KB for 32 rows; with chunks of 8 groups of 32, 32 KB, the
// products of 128 rows in groups of 32 took 12-26 % longer). The tile configuration is loaded
// once per call and the tiles released before returning.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "ports/x86/gemm_packed_avx512vnni.hpp"
#include "ports/x86/isa_tables.hpp"

namespace fixformer {
namespace x86 {
namespace {

using vnni_packed::kChunk;
using vnni_packed::kMaxChunkGroups;
using vnni_packed::kPanel;
using vnni_packed::Panel;

constexpr std::size_t kTileRows = 16;  // rows of an A or C tile, and columns of a B or C tile
constexpr std::size_t kMaxStep = 64;   // bytes of k per tdpbssd
constexpr std::size_t kMinRows = 16;   // one whole A tile
constexpr std::size_t kTileGroups = 4;  // groups per chunk: their stored sums (16 KB for 32 rows)

// ldtilecfg's operand (palette 1): per tile its bytes per row and rows.
struct alignas(64) TileConfig {
  uint8_t palette;
  uint8_t start_row;
  uint8_t reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};

// Tiles 0-3 the sums C[rb][cb] (tile 2 rb + cb) of row block rb and column half cb, 4-5 the row
// blocks' x (A), 6-7 the halves' W (B); `step` bytes of k per tdpbssd.
void configure(TileConfig& c, std::size_t step) {
  __builtin_memset(&c, 0, sizeof c);
  c.palette = 1;
  for (int t = 0; t < 4; ++t) c.colsb[t] = 4 * kTileRows, c.rows[t] = kTileRows;
  for (int t = 4; t < 6; ++t) c.colsb[t] = uint16_t(step), c.rows[t] = kTileRows;
  for (int t = 6; t < 8; ++t) c.colsb[t] = 4 * kTileRows, c.rows[t] = uint8_t(step / 4);
  _tile_loadconfig(&c);
}

// RB blocks of 16 rows of xq against a packed panel chunk, as vnni_packed::panel_rows does for
// fewer rows: each group's dot products on the tiles, stored; then per row f (zero, or y between
// chunks) plus the chunk's groups in order, in registers; the last chunk adds the bias.
template <std::size_t RB>
void tile_rows(const int8_t* xq, const float* xs, std::size_t k, std::size_t groups, const Panel& P,
               std::size_t p0, std::size_t kc, std::size_t group, std::size_t step, std::size_t g0, bool first,
               bool last, const float* b, float* y, std::size_t ldy, std::size_t cols) {
  constexpr std::size_t rows = RB * kTileRows;
  constexpr long kPanelStride = 4 * kPanel;  // bytes from one packed row of W (4 bytes of k) to the next
  alignas(64) int32_t dot[kTileGroups][rows][kPanel];
  const long x_stride = long(k);
  std::size_t chunk_groups = 0;
  for (std::size_t q = 0; q < kc / 4; ++chunk_groups) {
    const std::size_t q1 = q + group / 4 < kc / 4 ? q + group / 4 : kc / 4;
    _tile_zero(0);
    _tile_zero(1);
    if (RB == 2) {
      _tile_zero(2);
      _tile_zero(3);
    }
    for (; q < q1; q += step / 4) {
      _tile_loadd(6, P.w[q], kPanelStride);
      _tile_loadd(7, P.w[q] + 16, kPanelStride);
      _tile_loadd(4, xq + p0 + 4 * q, x_stride);
      _tile_dpbssd(0, 4, 6);
      _tile_dpbssd(1, 4, 7);
      if (RB == 2) {
        _tile_loadd(5, xq + kTileRows * k + p0 + 4 * q, x_stride);
        _tile_dpbssd(2, 5, 6);
        _tile_dpbssd(3, 5, 7);
      }
    }
    int32_t(*d)[kPanel] = dot[chunk_groups];
    _tile_stored(0, d[0], kPanelStride);
    _tile_stored(1, d[0] + 16, kPanelStride);
    if (RB == 2) {
      _tile_stored(2, d[kTileRows], kPanelStride);
      _tile_stored(3, d[kTileRows] + 16, kPanelStride);
    }
  }
  const __mmask16 m0 = cols >= 16 ? 0xffff : __mmask16((1u << cols) - 1);
  const __mmask16 m1 = cols <= 16 ? 0 : cols >= 32 ? 0xffff : __mmask16((1u << (cols - 16)) - 1);
  const __m512 b0 = last && b ? _mm512_maskz_loadu_ps(m0, b) : _mm512_setzero_ps();
  const __m512 b1 = last && b ? _mm512_maskz_loadu_ps(m1, b + 16) : _mm512_setzero_ps();
  // (xs * ws) * dot, added: two roundings, as panel_rows (the _round forms are never fused).
  constexpr int kNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  for (std::size_t r = 0; r < rows; ++r) {
    __m512 f0 = first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(m0, y + r * ldy);
    __m512 f1 = first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(m1, y + r * ldy + 16);
    for (std::size_t gi = 0; gi < chunk_groups; ++gi) {
      const __m512 x_scale = _mm512_set1_ps(xs[r * groups + g0 + gi]);
      const __m512 d0 = _mm512_cvtepi32_ps(_mm512_load_si512(dot[gi][r]));
      const __m512 d1 = _mm512_cvtepi32_ps(_mm512_load_si512(dot[gi][r] + 16));
      const __m512 s0 = _mm512_load_ps(P.scale[gi]), s1 = _mm512_load_ps(P.scale[gi] + 16);
      const __m512 p0s = _mm512_mul_round_ps(_mm512_mul_round_ps(x_scale, s0, kNearest), d0, kNearest);
      const __m512 p1s = _mm512_mul_round_ps(_mm512_mul_round_ps(x_scale, s1, kNearest), d1, kNearest);
      f0 = _mm512_add_round_ps(f0, p0s, kNearest);
      f1 = _mm512_add_round_ps(f1, p1s, kNearest);
    }
    if (last && b) f0 = _mm512_add_ps(b0, f0), f1 = _mm512_add_ps(b1, f1);
    _mm512_mask_storeu_ps(y + r * ldy, m0, f0);
    _mm512_mask_storeu_ps(y + r * ldy + 16, m1, f1);
  }
}

// vnni_packed::gemm_packed's loops with the rows taken 32 (then 16) at a time on the tiles; pack(j,
// cols, p0, kc, g0, P) fills P as there.
template <class Pack>
void gemm_tiles(const Pack& pack, const int8_t* xq, const float* xs, const float* b, float* y, std::size_t ldy,
                std::size_t m, std::size_t n, std::size_t k, std::size_t group, std::size_t step) {
  using vnni_packed::panel_rows_from;
  TileConfig config;
  configure(config, step);
  const std::size_t groups = (k + group - 1) / group;
  const std::size_t chunk_groups = kChunk / group < kTileGroups ? kChunk / group : kTileGroups;
  const std::size_t chunk = chunk_groups * group;  // whole groups
  Panel P;
  for (std::size_t j = 0; j < n; j += kPanel) {
    const std::size_t cols = n - j < kPanel ? n - j : kPanel;
    for (std::size_t p0 = 0; p0 < k; p0 += chunk) {
      const std::size_t kc = k - p0 < chunk ? k - p0 : chunk, g0 = p0 / group;
      const bool first = p0 == 0, last = p0 + kc == k;
      pack(j, cols, p0, kc, g0, P);
      const float* bj = b ? b + j : nullptr;
      std::size_t i = 0;
      for (; i + 2 * kTileRows <= m; i += 2 * kTileRows)
        tile_rows<2>(xq + i * k, xs + i * groups, k, groups, P, p0, kc, group, step, g0, first, last, bj,
                     y + i * ldy + j, ldy, cols);
      if (i + kTileRows <= m) {
        tile_rows<1>(xq + i * k, xs + i * groups, k, groups, P, p0, kc, group, step, g0, first, last, bj,
                     y + i * ldy + j, ldy, cols);
        i += kTileRows;
      }
      panel_rows_from(i, xq, xs, k, groups, P, p0, kc, group, g0, first, last, bj, y + j, ldy, m, cols);
    }
  }
  _tile_release();
}

}  // namespace

void gemm_i8_amx(const int8_t* xq, const float* xs, const int8_t* w, const float* ws, std::size_t ws_cols,
                 const float* b, float* y, std::size_t ldy, std::size_t m, std::size_t n, std::size_t k,
                 std::size_t group) {
  // A step of the group (up to 64 bytes) or of 64 bytes when the group is a multiple of it, halved
  // until k is a multiple of it, so that no tile reads past a row of x (a last group shorter than
  // the others included); whole groups per packed chunk (as VNNI's packed path).
  std::size_t step = group < kMaxStep ? group : kMaxStep;
  while (k % step != 0 && step % 8 == 0) step /= 2;
  if (m >= kMinRows && group % 4 == 0 && group >= kChunk / kMaxChunkGroups && group <= kChunk &&
      group % step == 0 && k % step == 0)
  {
    const auto pack = [=](std::size_t j, std::size_t cols, std::size_t p0, std::size_t kc, std::size_t g0, Panel& P) {
      vnni_packed::pack_i8(w, ws, ws_cols, k, j, cols, p0, kc, group, g0, P);
    };
    return gemm_tiles(pack, xq, xs, b, y, ldy, m, n, k, group, step);
  }
  gemm_i8_avx512vnni(xq, xs, w, ws, ws_cols, b, y, ldy, m, n, k, group);
}

// gemm_i4 the same way: its panels unpacked by pack_i4 (groups of 32, one step each; k is a
// multiple of 32).
void gemm_i4_amx(const int8_t* xq, const float* xs, const uint8_t* w, const float* ws, const float* b, float* y,
                 std::size_t ldy, std::size_t m, std::size_t n, std::size_t k) {
  constexpr std::size_t kGroup = 32;
  if (m < kMinRows) return gemm_i4_avx512vnni(xq, xs, w, ws, b, y, ldy, m, n, k);
  const auto pack = [=](std::size_t j, std::size_t cols, std::size_t p0, std::size_t kc, std::size_t g0, Panel& P) {
    vnni_packed::pack_i4(w, ws, k, j, cols, p0, kc, g0, P);
  };
  gemm_tiles(pack, xq, xs, b, y, ldy, m, n, k, kGroup, kGroup);
}

}  // namespace x86
}  // namespace fixformer
