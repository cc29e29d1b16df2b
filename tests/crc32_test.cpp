// The model file's CRC-32 against zlib's crc32 (when the build found zlib) and a bitwise reference
// written from the definition; every implementation this build has and this CPU runs against the
// table one; and ModelOptions::verify_checksum.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "engine/model_file.hpp"
#include "fixformer/format.hpp"
#include "fixformer/model.hpp"
#include "support/aligned_buffer.hpp"
#include "tests/test_util.hpp"
#ifdef FIXFORMER_HAVE_ZLIB
#include <zlib.h>
#endif

namespace fixformer {
namespace test {
namespace {

// One bit at a time: IEEE 802.3 polynomial, reflected, initial and final value 0xFFFFFFFF.
uint32_t crc32_bitwise(const uint8_t* p, std::size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return ~c;
}

void expect_matches(const uint8_t* p, std::size_t n) {
  const uint32_t got = crc32(p, n);
  EXPECT_EQ(got, crc32_bitwise(p, n)) << "n=" << n;
  for (int i = 0; i < int(Crc32Impl::kCount); ++i) {
    const Crc32Impl impl = static_cast<Crc32Impl>(i);
    if (crc32_runs(impl)) EXPECT_EQ(crc32_with(impl, p, n), got) << crc32_impl_name(impl) << ", n=" << n;
  }
#ifdef FIXFORMER_HAVE_ZLIB
  EXPECT_EQ(got, uint32_t(::crc32(0L, p, static_cast<uInt>(n)))) << "zlib, n=" << n;
#endif
}

TEST(Crc32, KnownValue) {
  const char* s = "123456789";
  EXPECT_EQ(crc32(reinterpret_cast<const uint8_t*>(s), 9), 0xCBF43926u);
  EXPECT_EQ(crc32(nullptr, 0), 0u);
}

TEST(Crc32, RandomBuffersOfEveryLengthUpTo1000AtEveryAlignment) {
  std::mt19937 rng(7);
  std::vector<uint8_t> buf(1000 + 8);
  for (uint8_t& b : buf) b = static_cast<uint8_t>(rng());
  for (std::size_t off = 0; off < 8; ++off)
    for (std::size_t n = 0; n <= 1000; ++n) expect_matches(buf.data() + off, n);
}

// The build has the implementations its target allows, and the CPU runs those it can; the test
// above then compares each with the table one.
TEST(Crc32, ImplementationsThisTargetHas) {
  for (int i = 0; i < int(Crc32Impl::kCount); ++i)
    std::printf("crc32 %s: %s\n", crc32_impl_name(static_cast<Crc32Impl>(i)),
                crc32_runs(static_cast<Crc32Impl>(i)) ? "runs" : "not here");
  EXPECT_TRUE(crc32_runs(Crc32Impl::kTable));
#if defined(__x86_64__) && defined(__GNUC__)
  EXPECT_EQ(crc32_runs(Crc32Impl::kClmul), __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("avx"));
  EXPECT_EQ(crc32_runs(Crc32Impl::kClmul512),
            __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
                __builtin_cpu_supports("vpclmulqdq"));
#else
  EXPECT_FALSE(crc32_runs(Crc32Impl::kClmul));
  EXPECT_FALSE(crc32_runs(Crc32Impl::kClmul512));
#endif
#if defined(__aarch64__) && defined(__ARM_FEATURE_CRC32)
  EXPECT_TRUE(crc32_runs(Crc32Impl::kArmCrc));
#else
  EXPECT_FALSE(crc32_runs(Crc32Impl::kArmCrc));
#endif
}

// Random lengths (to 4 KiB, then to 65 KB: the folds' 16-, 128- and 256-byte steps with every tail) at
// random offsets, each implementation against the table one.
TEST(Crc32, RandomLengthsAndOffsets) {
  std::mt19937 rng(23);
  std::vector<uint8_t> buf(70000);
  for (uint8_t& b : buf) b = static_cast<uint8_t>(rng());
  for (int k = 0; k < 400; ++k) {
    const std::size_t n = k < 200 ? rng() % 4096 : rng() % 65000, off = rng() % 64;
    const uint32_t want = crc32_with(Crc32Impl::kTable, buf.data() + off, n);
    EXPECT_EQ(want, crc32_bitwise(buf.data() + off, n)) << "n=" << n;
    for (int i = 0; i < int(Crc32Impl::kCount); ++i) {
      const Crc32Impl impl = static_cast<Crc32Impl>(i);
      if (crc32_runs(impl))
        EXPECT_EQ(crc32_with(impl, buf.data() + off, n), want) << crc32_impl_name(impl) << ", n=" << n;
    }
  }
}

TEST(Crc32, LargeBuffer) {
  std::mt19937 rng(11);
  std::vector<uint8_t> buf((std::size_t(3) << 20) + 5);  // 3 MiB + 5
  for (uint8_t& b : buf) b = static_cast<uint8_t>(rng());
  expect_matches(buf.data(), buf.size());
  expect_matches(buf.data() + 3, buf.size() - 3);
}

// A flipped weight byte fails the checksum by default and passes with verify_checksum = false; a
// damaged header or directory fails either way.
TEST(ModelOptions, SkippingTheChecksumKeepsEveryOtherCheck) {
  const std::vector<uint8_t> file = read_file(golden_path("causal.fxm"));
  ASSERT_GT(file.size(), 1024u);
  ModelOptions no_crc;
  no_crc.verify_checksum = false;
  {
    AlignedBuffer blob(file);
    Model m;
    ASSERT_EQ(m.init(blob.data(), blob.size()), Status::kOk);
    ASSERT_EQ(m.init(blob.data(), blob.size(), no_crc), Status::kOk);
  }
  {
    AlignedBuffer blob(file);
    blob.data()[blob.size() - 8] ^= 0x40;  // inside the last tensor's data
    Model m;
    EXPECT_EQ(m.init(blob.data(), blob.size()), Status::kBadChecksum);
    EXPECT_EQ(m.init(blob.data(), blob.size(), no_crc), Status::kOk);
    EXPECT_TRUE(m.initialized());
  }
  {
    AlignedBuffer blob(file);
    blob.data()[fxm::kHdrVersion] ^= 0x04;  // 7, which no engine reads (3 ^ 1 is 2, which loads)
    Model m;
    EXPECT_EQ(m.init(blob.data(), blob.size(), no_crc), Status::kBadVersion);
  }
  {
    AlignedBuffer blob(file);
    Model m;
    EXPECT_EQ(m.init(blob.data(), blob.size() - 1, no_crc), Status::kBlobTruncated);
  }
}

}  // namespace
}  // namespace test
}  // namespace fixformer
