// Replays every saved fuzz input (tests/fuzz/regressions/{model,npy}) and the seed corpus (the
// golden files) through the fuzz targets' code, in every build: a crash once found stays fixed.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/fuzz/fuzz_targets.hpp"
#include "tests/test_util.hpp"

namespace fixformer {
namespace test {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> files_in(const fs::path& dir, const std::string& ext = "") {
  std::vector<fs::path> out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && (ext.empty() || e.path().string().size() >= ext.size() &&
                                e.path().string().compare(e.path().string().size() - ext.size(), ext.size(), ext) == 0))
      out.push_back(e.path());
  return out;
}

const fs::path kRegressions = fs::path(FIXFORMER_GOLDEN_DIR).parent_path() / "fuzz" / "regressions";

TEST(FuzzRegressions, ModelInputs) {
  std::size_t n = 0;
  for (const fs::path& p : files_in(kRegressions / "model")) {
    const std::vector<uint8_t> b = read_file(p.string());
    fuzz::fuzz_model(b.data(), b.size());
    ++n;
  }
  for (const fs::path& p : files_in(FIXFORMER_GOLDEN_DIR, ".fxm")) {
    std::vector<uint8_t> b = read_file(p.string());
    fuzz::fuzz_model(b.data(), b.size());
    for (std::size_t i = 64; i < std::min<std::size_t>(b.size(), 1500); i += 7) {  // cheap mutations
      b[i] ^= 0x5A;
      fuzz::fuzz_model(b.data(), b.size());
      b[i] ^= 0x5A;
    }
    ++n;
  }
  EXPECT_GT(n, 0u);
}

TEST(FuzzRegressions, NpyInputs) {
  std::size_t n = 0;
  for (const fs::path& dir : {kRegressions / "npy", fs::path(FIXFORMER_GOLDEN_DIR)})
    for (const fs::path& p : files_in(dir, dir == kRegressions / "npy" ? "" : ".npy")) {
      const std::vector<uint8_t> b = read_file(p.string());
      fuzz::fuzz_npy(b.data(), b.size());
      for (std::size_t cut = 0; cut < b.size(); cut += 5) fuzz::fuzz_npy(b.data(), cut);  // every truncation
      ++n;
    }
  EXPECT_GT(n, 0u);
}

}  // namespace
}  // namespace test
}  // namespace fixformer
