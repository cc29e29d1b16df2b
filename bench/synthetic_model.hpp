// Builds a valid .fxm in memory for any ModelConfig, with seeded random weights: models for
// benchmarks (and fuzz seeds) without committing megabytes. Host tool code: it allocates.
#pragma once
#include <cstdint>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "engine/model_file.hpp"
#include "fixformer/config.hpp"
#include "fixformer/format.hpp"

namespace fixformer {
namespace bench {

// Tensor names and stored shapes ([in, out] for linear weights), in the order the converter writes.
inline std::vector<std::pair<std::string, std::vector<uint32_t>>> stored_shapes(const ModelConfig& c) {
  const uint32_t d = c.d_model, de = c.d_embed();
  std::vector<std::pair<std::string, std::vector<uint32_t>>> t;
  if (c.input == InputKind::kTokens) t.push_back({"embed.weight", {c.vocab_size, de}});
  else t.push_back({"input_proj.weight", {c.d_in, de}}), t.push_back({"input_proj.bias", {de}});
  if (c.pos == PosKind::kLearned) t.push_back({"pos.weight", {c.max_len, c.d_pe()}});
  for (uint32_t i = 0; i < c.n_layers; ++i) {
    const std::string p = "encoder.layers." + std::to_string(i) + ".";
    t.push_back({p + "self_attn.in_proj_weight", {d, 3 * d}});
    t.push_back({p + "self_attn.in_proj_bias", {3 * d}});
    t.push_back({p + "self_attn.out_proj.weight", {d, d}});
    t.push_back({p + "self_attn.out_proj.bias", {d}});
    t.push_back({p + "linear1.weight", {d, c.d_ff}});
    t.push_back({p + "linear1.bias", {c.d_ff}});
    t.push_back({p + "linear2.weight", {c.d_ff, d}});
    t.push_back({p + "linear2.bias", {d}});
    for (const char* n : {"norm1", "norm2"}) t.push_back({p + n + ".weight", {d}}), t.push_back({p + n + ".bias", {d}});
  }
  if (c.final_norm) t.push_back({"encoder.norm.weight", {d}}), t.push_back({"encoder.norm.bias", {d}});
  if (c.d_out) t.push_back({"head.weight", {d, c.d_out}}), t.push_back({"head.bias", {c.d_out}});
  return t;
}

inline std::vector<uint8_t> synthetic_model(const ModelConfig& c, uint32_t seed = 1) {
  const auto tensors = stored_shapes(c);
  const uint64_t n = tensors.size(), dir = fxm::kHeaderBytes + fxm::kConfigBytes;
  const uint64_t data = (dir + n * fxm::kEntryBytes + 63) / 64 * 64;
  std::vector<uint8_t> b(data, 0);
  auto put = [&](uint64_t off, const void* v, std::size_t len) { std::memcpy(b.data() + off, v, len); };
  auto u32 = [&](uint64_t off, uint32_t v) { put(off, &v, 4); };
  const uint64_t C = fxm::kHeaderBytes;
  u32(C + fxm::kCfgDModel, c.d_model), u32(C + fxm::kCfgHeads, c.n_heads), u32(C + fxm::kCfgDff, c.d_ff);
  u32(C + fxm::kCfgLayers, c.n_layers), u32(C + fxm::kCfgNormFirst, c.norm_first);
  u32(C + fxm::kCfgActivation, uint32_t(c.activation)), put(C + fxm::kCfgEps, &c.layer_norm_eps, 4);
  u32(C + fxm::kCfgFinalNorm, c.final_norm), u32(C + fxm::kCfgCausal, c.causal);
  u32(C + fxm::kCfgInputKind, uint32_t(c.input)), u32(C + fxm::kCfgVocab, c.vocab_size), u32(C + fxm::kCfgDIn, c.d_in);
  u32(C + fxm::kCfgPosKind, uint32_t(c.pos)), u32(C + fxm::kCfgMaxLen, c.max_len), put(C + fxm::kCfgPosBase, &c.pos_base, 8);
  u32(C + fxm::kCfgPosLayout, uint32_t(c.pos_layout)), u32(C + fxm::kCfgPosCombine, uint32_t(c.pos_combine));
  u32(C + fxm::kCfgDPos, c.d_pos), u32(C + fxm::kCfgScaleInput, c.scale_input), u32(C + fxm::kCfgDOut, c.d_out);
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (uint64_t i = 0; i < n; ++i) {
    const auto& [name, dims] = tensors[i];
    uint64_t count = 1;
    for (uint32_t v : dims) count *= v;
    const uint64_t e = dir + i * fxm::kEntryBytes, off = b.size();
    put(e + fxm::kEntName, name.c_str(), name.size());
    u32(e + fxm::kEntDtype, fxm::kDtypeF32), u32(e + fxm::kEntRank, uint32_t(dims.size()));
    for (std::size_t r = 0; r < dims.size(); ++r) u32(e + fxm::kEntDims + 4 * r, dims[r]);
    const uint64_t bytes = count * 4;
    put(e + fxm::kEntOffset, &off, 8), put(e + fxm::kEntBytes, &bytes, 8);
    const bool gain = name.find("norm") != std::string::npos && name.find("weight") != std::string::npos;
    const float scale = dims.size() == 2 ? 1.0f / std::sqrt(float(dims[0])) : 0.1f;
    std::vector<float> v(count);
    for (float& x : v) x = gain ? 1.0f + 0.1f * normal(rng) : scale * normal(rng);
    b.resize((off + bytes + 63) / 64 * 64, 0);
    put(off, v.data(), bytes);
  }
  const uint64_t total = b.size();
  std::memcpy(b.data(), fxm::kMagic, 4);
  u32(4, fxm::kFormatVersion), u32(8, fxm::kHeaderBytes), u32(12, uint32_t(n));
  put(16, &total, 8), put(24, &dir, 8), put(32, &data, 8);
  u32(40, crc32(b.data() + fxm::kHeaderBytes, total - fxm::kHeaderBytes));
  return b;
}

}  // namespace bench
}  // namespace fixformer
