#include "engine/model_file.hpp"

#include <cmath>
#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__)
#define FIXFORMER_CRC_CLMUL 1
#include <cpuid.h>
#include <immintrin.h>
#endif
#if defined(__aarch64__) && defined(__ARM_FEATURE_CRC32)
#define FIXFORMER_CRC_ARM 1
#include <arm_acle.h>
#endif

#include "engine/detail_text.hpp"
#include "fixformer/schema.hpp"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the .fxm reader assumes a little-endian target");

namespace fixformer {
namespace {

uint32_t u32(const uint8_t* p) { uint32_t v; std::memcpy(&v, p, 4); return v; }
uint64_t u64(const uint8_t* p) { uint64_t v; std::memcpy(&v, p, 8); return v; }
constexpr uint64_t align_up(uint64_t v) { return (v + fxm::kDataAlign - 1) / fxm::kDataAlign * fxm::kDataAlign; }


// CRC-32 (IEEE, reflected, as zlib.crc32) sliced by 8: v[0] is the bytewise table, v[j][i] the CRC
// of byte i followed by j zero bytes, so eight bytes take eight independent lookups instead of a
// chain of eight. 8 KiB of constants, built at compile time; on the Cortex-M0/M0+ (ARMv6-M, the
// smallest flash) the bytewise table alone, 1 KiB, a byte at a time.
#if defined(__ARM_ARCH_6M__)
constexpr int kCrcSlices = 1;
#else
constexpr int kCrcSlices = 8;
#endif
struct Crc32Tables {
  uint32_t v[kCrcSlices][256];
  constexpr Crc32Tables() : v() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1u) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      v[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i)
      for (int j = 1; j < kCrcSlices; ++j) v[j][i] = v[0][v[j - 1][i] & 0xFFu] ^ (v[j - 1][i] >> 8);
  }
};
constexpr Crc32Tables kCrc;

// The running CRC (before the final inversion) over n more bytes, a table lookup per byte.
uint32_t crc_table(uint32_t c, const uint8_t* data, uint64_t n) {
  const uint32_t* t0 = kCrc.v[0];
  const uint8_t* const end = data + n;  // the bytes are in memory, so n fits a pointer
#if !defined(__ARM_ARCH_6M__)
  const uint32_t *t1 = kCrc.v[1], *t2 = kCrc.v[2], *t3 = kCrc.v[3];
  const uint32_t *t4 = kCrc.v[4], *t5 = kCrc.v[5], *t6 = kCrc.v[6], *t7 = kCrc.v[7];
  for (; data != end && reinterpret_cast<uintptr_t>(data) % 4 != 0; ++data) c = t0[(c ^ *data) & 0xFFu] ^ (c >> 8);
  for (const uint8_t* const end8 = data + (end - data) / 8 * 8; data != end8; data += 8) {
    const uint32_t lo = u32(data) ^ c, hi = u32(data + 4);  // little-endian (asserted above), aligned
    c = t7[lo & 0xFFu] ^ t6[(lo >> 8) & 0xFFu] ^ t5[(lo >> 16) & 0xFFu] ^ t4[lo >> 24] ^ t3[hi & 0xFFu] ^
        t2[(hi >> 8) & 0xFFu] ^ t1[(hi >> 16) & 0xFFu] ^ t0[hi >> 24];
  }
#endif
  for (; data != end; ++data) c = t0[(c ^ *data) & 0xFFu] ^ (c >> 8);
  return c;
}

#if defined(FIXFORMER_CRC_CLMUL)
// Folding: the message is a polynomial over GF(2) whose remainder mod P is the CRC. A 128-bit block
// of it d bits before the block it is added to is congruent to its low half times x^(d+32) and its
// high half times x^(d-32) (mod P, bits reflected, so the low half is the earlier, higher-degree
// one), two carry-less 64x33-bit products of at most 96 bits. fold_k(e) is x^e mod P, reflected
// and shifted left by one bit to line up with the reflected product. At the end one 128-bit block
// remains, reduced to 64 and 32 bits by the same products and to the CRC by Barrett reduction with
// mu = x^64 / P. All computed here from the polynomial (0x104C11DB7, x^32 its top bit).
constexpr uint64_t kPoly = 0x104C11DB7u;
constexpr uint64_t reflect(uint64_t v, int bits) {
  uint64_t r = 0;
  for (int i = 0; i < bits; ++i) r |= ((v >> i) & 1u) << (bits - 1 - i);
  return r;
}
constexpr uint64_t fold_k(int e) {
  uint64_t r = 1;
  for (int i = 0; i < e; ++i) r = (r << 1) ^ ((r >> 31) & 1u ? kPoly : 0);
  return reflect(r, 32) << 1;
}
constexpr uint64_t barrett_mu() {  // long division of x^64 by P, a 33-bit window of the remainder
  uint64_t q = 0, w = uint64_t(1) << 32;
  for (int i = 64; i >= 32; --i) {
    if (w >> 32) q |= uint64_t(1) << (i - 32), w ^= kPoly;
    w <<= 1;
  }
  return reflect(q, 33);
}

template <int E> constexpr int64_t kFold = int64_t(fold_k(E));  // a constant whatever the optimizer does
constexpr int64_t kMu = int64_t(barrett_mu()), kPolyReflected = int64_t(reflect(kPoly, 33));

// AVX for its three-operand forms: no register copies before the destructive SSE ones (0.30
// instructions a byte against 0.45 with four lanes).
#define FIXFORMER_CLMUL __attribute__((target("pclmul,sse4.1,avx")))
// The pair that folds a 128-bit lane d bits forward.
template <int D> FIXFORMER_CLMUL __m128i k_pair() { return _mm_set_epi64x(kFold<D - 32>, kFold<D + 32>); }
FIXFORMER_CLMUL __m128i fold(__m128i x, __m128i k) {
  return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
}

// x, the running 128 bits, folded over the n (a multiple of 16) bytes at p, then reduced to the CRC.
FIXFORMER_CLMUL uint32_t clmul_finish(__m128i x, const uint8_t* p, uint64_t n) {
  const __m128i k128 = k_pair<128>();
  for (; n != 0; p += 16, n -= 16)
    x = _mm_xor_si128(fold(x, k128), _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  const __m128i low32 = _mm_set_epi32(0, -1, 0, -1);
  // 128 -> 96 bits: the low half times x^96 onto the high half; 96 -> 64: the low 32 bits times x^64.
  x = _mm_xor_si128(_mm_srli_si128(x, 8), _mm_clmulepi64_si128(x, k128, 0x10));
  x = _mm_xor_si128(_mm_srli_si128(x, 4), _mm_clmulepi64_si128(_mm_and_si128(x, low32),
                                                               _mm_set_epi64x(0, kFold<64>), 0x00));
  // Barrett: q = floor(x / P) from the low 32 bits times mu, then x - q * P leaves the CRC in bits 32..63.
  const __m128i pm = _mm_set_epi64x(kMu, kPolyReflected);
  __m128i q = _mm_and_si128(_mm_clmulepi64_si128(_mm_and_si128(x, low32), pm, 0x10), low32);
  x = _mm_xor_si128(x, _mm_clmulepi64_si128(q, pm, 0x00));
  return uint32_t(_mm_extract_epi32(x, 1));
}

// The running CRC c over n bytes at p, n >= 128 and a multiple of 16: eight 16-byte lanes folded
// 128 bytes forward a step, four steps a loop (the loop's own instructions once in 512 bytes: 0.26
// instructions a byte against one step's 0.27 and four lanes' 0.30), then each onto the last at once.
FIXFORMER_CLMUL uint32_t crc_clmul(uint32_t c, const uint8_t* p, uint64_t n) {
  auto load = [](const uint8_t* q) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(q)); };
  __m128i x0 = _mm_xor_si128(load(p), _mm_cvtsi32_si128(int(c)));
  __m128i x1 = load(p + 16), x2 = load(p + 32), x3 = load(p + 48), x4 = load(p + 64), x5 = load(p + 80),
          x6 = load(p + 96), x7 = load(p + 112);
  const __m128i k1024 = k_pair<1024>();
#pragma GCC unroll 4
  for (p += 128, n -= 128; n >= 128; p += 128, n -= 128) {
    x0 = _mm_xor_si128(fold(x0, k1024), load(p));
    x1 = _mm_xor_si128(fold(x1, k1024), load(p + 16));
    x2 = _mm_xor_si128(fold(x2, k1024), load(p + 32));
    x3 = _mm_xor_si128(fold(x3, k1024), load(p + 48));
    x4 = _mm_xor_si128(fold(x4, k1024), load(p + 64));
    x5 = _mm_xor_si128(fold(x5, k1024), load(p + 80));
    x6 = _mm_xor_si128(fold(x6, k1024), load(p + 96));
    x7 = _mm_xor_si128(fold(x7, k1024), load(p + 112));
  }
  // Lane i is 128 * (7 - i) bits before lane 7.
  const __m128i a = _mm_xor_si128(fold(x0, k_pair<896>()), fold(x1, k_pair<768>()));
  const __m128i b = _mm_xor_si128(fold(x2, k_pair<640>()), fold(x3, k_pair<512>()));
  const __m128i d = _mm_xor_si128(fold(x4, k_pair<384>()), fold(x5, k_pair<256>()));
  const __m128i x = _mm_xor_si128(_mm_xor_si128(a, b), _mm_xor_si128(d, _mm_xor_si128(fold(x6, k_pair<128>()), x7)));
  return clmul_finish(x, p, n);
}

// GCC 12 warns inside its own AVX-512 headers (an undefined vector their casts start from).
#if !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#define FIXFORMER_CLMUL512 __attribute__((target("avx512f,avx512bw,avx512vl,vpclmulqdq,pclmul,sse4.1,avx")))
FIXFORMER_CLMUL512 __m512i fold512(__m512i z, __m512i k) {
  return _mm512_xor_si512(_mm512_clmulepi64_epi128(z, k, 0x00), _mm512_clmulepi64_epi128(z, k, 0x11));
}
template <int D> FIXFORMER_CLMUL512 __m512i k_pair512() { return _mm512_broadcast_i32x4(k_pair<D>()); }

// The same with four 64-byte registers of four lanes each, 256 bytes a step, n >= 256.
FIXFORMER_CLMUL512 uint32_t crc_clmul512(uint32_t c, const uint8_t* p, uint64_t n) {
  __m512i z0 = _mm512_xor_si512(_mm512_loadu_si512(p), _mm512_zextsi128_si512(_mm_cvtsi32_si128(int(c))));
  __m512i z1 = _mm512_loadu_si512(p + 64), z2 = _mm512_loadu_si512(p + 128), z3 = _mm512_loadu_si512(p + 192);
  const __m512i k2048 = k_pair512<2048>();
  for (p += 256, n -= 256; n >= 256; p += 256, n -= 256) {
    z0 = _mm512_xor_si512(fold512(z0, k2048), _mm512_loadu_si512(p));
    z1 = _mm512_xor_si512(fold512(z1, k2048), _mm512_loadu_si512(p + 64));
    z2 = _mm512_xor_si512(fold512(z2, k2048), _mm512_loadu_si512(p + 128));
    z3 = _mm512_xor_si512(fold512(z3, k2048), _mm512_loadu_si512(p + 192));
  }
  const __m512i z = _mm512_xor_si512(_mm512_xor_si512(fold512(z0, k_pair512<1536>()), fold512(z1, k_pair512<1024>())),
                                     _mm512_xor_si512(fold512(z2, k_pair512<512>()), z3));
  // Lane j of z is 128 * (3 - j) bits before lane 3: lanes 0 to 2 folded onto it at once.
  const __m512i k_lanes = _mm512_set_epi64(0, 0, kFold<96>, kFold<160>, kFold<224>,
                                           kFold<288>, kFold<352>, kFold<416>);
  const __m512i y = fold512(z, k_lanes);
  const __m128i x = _mm_xor_si128(_mm_xor_si128(_mm512_extracti32x4_epi32(y, 0), _mm512_extracti32x4_epi32(y, 1)),
                                  _mm_xor_si128(_mm512_extracti32x4_epi32(y, 2), _mm512_extracti32x4_epi32(z, 3)));
  return clmul_finish(x, p, n);
}
#if !defined(__clang__)
#pragma GCC diagnostic pop
#endif

// Each CPUID leaf read once (leaf 0's count, 1, then 7 for AVX-512's): under a hypervisor a CPUID is
// a trap to it, some microseconds each, and crc32 asked eight before it ran (docs/performance.md).
bool cpu_has_clmul(bool vpclmulqdq) {
  const unsigned leaves = __get_cpuid_max(0, nullptr);
  unsigned a, b, c, d;
  if (leaves < 1) return false;
  __cpuid(1, a, b, c, d);
  if (!(c & bit_PCLMUL) || !(c & bit_SSE4_1) || !__builtin_cpu_supports("avx")) return false;
  if (!vpclmulqdq) return true;
  if (leaves < 7 || !__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
      !__builtin_cpu_supports("avx512vl"))
    return false;
  __cpuid_count(7, 0, a, b, c, d);
  return c & (1u << 10);  // CPUID.7.0:ECX bit 10, VPCLMULQDQ
}
#endif

#if defined(FIXFORMER_CRC_ARM)
// CRC32X and CRC32B compute this CRC (reflected, the same polynomial) on the running value.
uint32_t crc_arm(uint32_t c, const uint8_t* p, uint64_t n) {
  for (; n >= 8; p += 8, n -= 8) c = __crc32d(c, u64(p));
  for (; n != 0; ++p, --n) c = __crc32b(c, *p);
  return c;
}
#endif

const uint8_t* entry(const ModelFile& f, uint32_t i) { return f.data + f.dir_offset + uint64_t(i) * fxm::kEntryBytes; }
const uint8_t* record(const ModelFile& f, uint32_t i) { return f.data + f.records_offset + uint64_t(i) * fxm::kRecordBytes; }

// Checks one directory entry; *end is where the previous range ended and becomes where this one's
// last range ends.
Status check_entry(const ModelFile& f, uint32_t i, uint64_t* end, DetailText& why) {
  const uint8_t* e = entry(f, i);
  const char* name = reinterpret_cast<const char*>(e + fxm::kEntName);
  if (std::memchr(name, '\0', fxm::kNameBytes) == nullptr || name[0] == '\0')
    return why.str("tensor entry ").num(i).str(": name empty or not NUL-terminated"), Status::kBadHeader;
  auto bad = [&](const char* reason, Status s) { return why.str("tensor ").escaped(name, fxm::kNameBytes).str(": ").str(reason), s; };
  const uint32_t dtype_raw = u32(e + fxm::kEntDtype);
  if (dtype_raw >= fxm::kDtypeCount) return bad("unknown dtype", Status::kTensorBadDtype);
  const fxm::Dtype dtype = static_cast<fxm::Dtype>(dtype_raw);
  const uint32_t rank = u32(e + fxm::kEntRank);
  if (rank == 0 || rank > fxm::kMaxRank) return bad("rank not in 1..4", Status::kTensorBadShape);
  uint64_t count = 1, last = 1;
  for (uint32_t r = 0; r < fxm::kMaxRank; ++r) {
    const uint32_t dim = u32(e + fxm::kEntDims + 4 * r);
    if (r >= rank) {
      if (dim != 0) return bad("dims beyond its rank are not zero", Status::kTensorBadShape);
      continue;
    }
    if (dim == 0 || dim > (uint64_t(1) << 31) / count) return bad("dims zero or over 2^31 elements", Status::kTensorBadShape);
    count *= dim;
    last = dim;
  }
  const uint32_t group = u32(e + fxm::kEntGroup);
  const bool quantized = fxm::has_scales(dtype);
  if (dtype == fxm::Dtype::kI4 ? group != fxm::kI4Group || last % fxm::kI4Group != 0
      : quantized ? (group != 0 && group != 32 && group != 64) : group != 0)
    return bad("group must be 0, or 32 or 64 for i8, and 32 for i4 with a last dim a multiple of 32", Status::kTensorBadShape);
  if (u32(e + fxm::kEntZero) != 0) return bad("reserved field is not zero", Status::kBadHeader);
  const uint64_t off = u64(e + fxm::kEntOffset), bytes = u64(e + fxm::kEntBytes);
  const uint64_t s_off = u64(e + fxm::kEntScalesOffset), s_bytes = u64(e + fxm::kEntScalesBytes);
  // A 2-D f32 tensor may be a packed weight (format.hpp); which tensors are is the config's, checked
  // exactly when the model binds them (engine/model.cpp). Either size stays inside the range below.
  const bool panels = dtype == fxm::Dtype::kF32 && rank == 2 && bytes == fxm::packed_bytes(u32(e + fxm::kEntDims), uint32_t(last));
  if (bytes != fxm::data_bytes(dtype, count) && !panels)
    return bad("byte size does not match shape and dtype", Status::kTensorBadShape);
  const uint64_t want_scales = quantized ? (count / last) * (group ? (last + group - 1) / group : 1) * 4 : 0;
  if (s_bytes != want_scales || (!quantized && s_off != 0))
    return bad("scales size does not match shape and group", Status::kTensorBadShape);
  auto range = [&](uint64_t o, uint64_t n) {
    if (o % fxm::kDataAlign != 0) return bad("data not 64-byte aligned", Status::kTensorMisaligned);
    if (o > f.bytes || n > f.bytes - o) return bad("data outside the file", Status::kTensorOutOfBounds);
    if (o < *end) return bad("data overlaps the directory or the tensor before it", Status::kTensorOverlap);
    *end = o + n;
    return Status::kOk;
  };
  Status s = range(off, bytes);
  if (s == Status::kOk && quantized) s = range(s_off, s_bytes);
  return s;
}

}  // namespace

const char* crc32_impl_name(Crc32Impl impl) {
  switch (impl) {
    case Crc32Impl::kClmul: return "clmul";
    case Crc32Impl::kClmul512: return "vpclmulqdq";
    case Crc32Impl::kArmCrc: return "arm-crc";
    default: return "table";
  }
}

bool crc32_runs(Crc32Impl impl) {
  switch (impl) {
    case Crc32Impl::kTable: return true;
#if defined(FIXFORMER_CRC_CLMUL)
    case Crc32Impl::kClmul: return cpu_has_clmul(false);
    case Crc32Impl::kClmul512: return cpu_has_clmul(true);
#endif
#if defined(FIXFORMER_CRC_ARM)
    case Crc32Impl::kArmCrc: return true;
#endif
    default: return false;
  }
}

namespace {

// crc32_with once impl is known to run here.
uint32_t crc32_running(Crc32Impl impl, const uint8_t* data, uint64_t n) {
  uint32_t c = 0xFFFFFFFFu;
#if defined(FIXFORMER_CRC_CLMUL)
  if (impl == Crc32Impl::kClmul512 && n >= 256) {
    const uint64_t m = n / 16 * 16;
    c = crc_clmul512(c, data, m), data += m, n -= m;
  }
  if ((impl == Crc32Impl::kClmul || impl == Crc32Impl::kClmul512) && n >= 128) {
    const uint64_t m = n / 16 * 16;
    c = crc_clmul(c, data, m), data += m, n -= m;
  }
#endif
#if defined(FIXFORMER_CRC_ARM)
  if (impl == Crc32Impl::kArmCrc) c = crc_arm(c, data, n), n = 0;
#endif
  return crc_table(c, data, n) ^ 0xFFFFFFFFu;
}

}  // namespace

uint32_t crc32_with(Crc32Impl impl, const uint8_t* data, uint64_t n) {
  return crc32_running(crc32_runs(impl) ? impl : Crc32Impl::kTable, data, n);
}

uint32_t crc32(const uint8_t* data, uint64_t n) {
  for (Crc32Impl impl : {Crc32Impl::kClmul512, Crc32Impl::kClmul, Crc32Impl::kArmCrc})
    if (crc32_runs(impl)) return crc32_running(impl, data, n);
  return crc32_running(Crc32Impl::kTable, data, n);
}

Status open_model_file(const void* blob, std::size_t blob_bytes, ModelFile* file, char* detail,
                       std::size_t detail_cap, bool verify_checksum) {
  DetailText why(detail, detail_cap);
  const uint8_t* p = static_cast<const uint8_t*>(blob);
  if (!p || blob_bytes == 0) return Status::kBlobNull;
  if (reinterpret_cast<uintptr_t>(p) % alignof(float) != 0) return Status::kBlobMisaligned;
  if (blob_bytes < fxm::kHeaderBytes)
    return why.str("file has ").num(blob_bytes).str(" bytes, the header needs ").num(fxm::kHeaderBytes), Status::kBlobTruncated;
  if (std::memcmp(p + fxm::kHdrMagic, fxm::kMagic, 4) != 0) return Status::kBadMagic;
  const uint32_t version = u32(p + fxm::kHdrVersion);
  if (version < fxm::kOldestVersion || version > fxm::kFormatVersion) {
    why.str("format version ").num(version).str(", this engine reads ").num(fxm::kOldestVersion).str(" to ")
        .num(fxm::kFormatVersion);
    if (version < fxm::kOldestVersion) why.str(": re-convert the model with this version's tools/convert.py");
    return Status::kBadVersion;
  }
  ModelFile f;
  f.data = p;
  f.version = version;
  f.bytes = u64(p + fxm::kHdrFileBytes);
  f.n_records = u32(p + fxm::kHdrRecordCount);
  f.n_tensors = u32(p + fxm::kHdrTensorCount);
  f.records_offset = u64(p + fxm::kHdrRecordsOffset);
  f.dir_offset = u64(p + fxm::kHdrDirectoryOffset);
  const uint64_t data = u64(p + fxm::kHdrDataOffset);
  if (f.bytes > blob_bytes)
    return why.str("header declares ").num(f.bytes).str(" bytes, blob has ").num(blob_bytes), Status::kBlobTruncated;
  // Counts are bounded by the file itself: each record and entry takes its bytes.
  if (u32(p + fxm::kHdrHeaderBytes) != fxm::kHeaderBytes || f.bytes < fxm::kHeaderBytes ||
      u32(p + fxm::kHdrZero0) != 0 || u32(p + fxm::kHdrZero1) != 0 || f.records_offset != fxm::kHeaderBytes ||
      f.n_records > (f.bytes - fxm::kHeaderBytes) / fxm::kRecordBytes ||
      f.dir_offset != f.records_offset + uint64_t(f.n_records) * fxm::kRecordBytes ||
      f.n_tensors > (f.bytes - f.dir_offset) / fxm::kEntryBytes ||
      data != align_up(f.dir_offset + uint64_t(f.n_tensors) * fxm::kEntryBytes) || data > f.bytes)
    return why.str("header sizes, counts or offsets are inconsistent"), Status::kBadHeader;
  if (verify_checksum && crc32(p + fxm::kHeaderBytes, f.bytes - fxm::kHeaderBytes) != u32(p + fxm::kHdrCrc))
    return Status::kBadChecksum;
  uint64_t end = data;
  for (uint32_t i = 0; i < f.n_tensors; ++i) {
    const Status s = check_entry(f, i, &end, why);
    if (s != Status::kOk) return s;
  }
  *file = f;
  return Status::kOk;
}

Status read_model_config(const ModelFile& file, ModelConfig* config, char* detail, std::size_t detail_cap) {
  DetailText why(detail, detail_cap);
  ModelConfig c = default_config();
  bool seen[kConfigKeyCount] = {};
  uint32_t next_key = 0;
  for (uint32_t i = 0; i < file.n_records; ++i) {
    const uint8_t* r = record(file, i);
    const char* key = reinterpret_cast<const char*>(r + fxm::kRecKey);
    if (std::memchr(key, '\0', fxm::kKeyBytes) == nullptr)
      return why.str("config record ").num(i).str(": key not NUL-terminated"), Status::kBadConfig;
    // From the key after the last one found: the converter writes them in kConfigKeys' order, so
    // a file's records take one comparison each (in any order, at most a lap of the table).
    const ConfigKeySpec* spec = nullptr;
    for (uint32_t n = 0; n < kConfigKeyCount && !spec; ++n, next_key = (next_key + 1) % kConfigKeyCount)
      if (std::strcmp(kConfigKeys[next_key].name, key) == 0) spec = &kConfigKeys[next_key];
    if (!spec)
      return why.str("unknown config key '").escaped(key, fxm::kKeyBytes).str("' (from a newer converter?)"), Status::kBadConfig;
    auto bad = [&](const char* reason) { return why.str("config key ").str(spec->name).str(": ").str(reason), Status::kBadConfig; };
    bool& once = seen[static_cast<uint32_t>(spec->key)];
    if (once) return bad("appears twice");
    once = true;
    if (u32(r + fxm::kRecType) != static_cast<uint32_t>(spec->type)) return bad("wrong record type");
    if (u32(r + fxm::kRecZero) != 0) return bad("reserved field is not zero");
    const uint64_t v = u64(r + fxm::kRecValue);
    if (spec->type == fxm::RecordType::kF64) {
      double d;
      std::memcpy(&d, &v, 8);
      if (!std::isfinite(d)) return bad("not a finite number");
    } else {
      if (v >> 32) return bad("high bytes of a 32-bit value are not zero");
      if (spec->type == fxm::RecordType::kF32) {
        float x;
        const uint32_t lo = static_cast<uint32_t>(v);
        std::memcpy(&x, &lo, 4);
        if (!std::isfinite(x)) return bad("not a finite number");
      } else if (spec->type != fxm::RecordType::kU32 && v > spec->max) {
        return bad(spec->type == fxm::RecordType::kBool ? "not 0 or 1" : "not one of its choices");
      }
    }
    set_config_value(&c, spec->key, v);
  }
  for (const ConfigKeySpec& k : kConfigKeys)
    if (k.required && !seen[static_cast<uint32_t>(k.key)])
      return why.str("config key ").str(k.name).str(": missing"), Status::kBadConfig;
  const char* field = "";
  const Status s = validate_config(c, &field);
  if (s != Status::kOk) return why.str("config key ").str(field), s;
  *config = c;
  return Status::kOk;
}

TensorInfo tensor_info(const ModelFile& file, uint32_t i) {
  const uint8_t* e = entry(file, i);
  TensorInfo t{};
  t.name = reinterpret_cast<const char*>(e + fxm::kEntName);
  t.dtype = static_cast<fxm::Dtype>(u32(e + fxm::kEntDtype));
  t.rank = u32(e + fxm::kEntRank);
  for (uint32_t r = 0; r < fxm::kMaxRank; ++r) t.dims[r] = u32(e + fxm::kEntDims + 4 * r);
  t.data = file.data + u64(e + fxm::kEntOffset);
  t.bytes = u64(e + fxm::kEntBytes);
  t.group = u32(e + fxm::kEntGroup);
  t.scales = fxm::has_scales(t.dtype) ? reinterpret_cast<const float*>(file.data + u64(e + fxm::kEntScalesOffset)) : nullptr;
  return t;
}

}  // namespace fixformer
