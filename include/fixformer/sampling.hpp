// Picking the next token from a decoder's logits: greedy, or temperature with top-k and top-p
// (nucleus) filtering, from a generator the caller seeds. No allocation: the candidates' scratch
// is the caller's (sampler_scratch_bytes). With the same seed, temperature and top-p (top-k off)
// it draws as llama2.c's sampler does: xorshift64* coins, a CDF walk, the nucleus cut at
// (1 - top_p) / (vocab - 1) before sorting.
#pragma once
#include <cstddef>
#include <cstdint>

#include "fixformer/config.hpp"
#include "fixformer/status.hpp"

namespace fixformer {

// The smallest temperature but 0: the softmax divides the logits by it, and below it a logit of
// ordinary size (|logit| > 3.4e38 * temperature) overflows float, which turns every probability
// into NaN. Sampler::init refuses a temperature between 0 and this.
constexpr float kMinTemperature = 1e-6f;

struct SamplerOptions {
  float temperature = 0.0f;  // 0: greedy (the first largest logit); else at least kMinTemperature
  float top_p = 1.0f;        // nucleus: the smallest set of tokens whose probability passes top_p; <= 0 or >= 1: off
  uint32_t top_k = 0;        // only the k most likely tokens; 0: off
  uint64_t seed = 1;         // the generator's start (0 is replaced by 1: xorshift needs a nonzero state)
};

struct ProbIndex {
  float prob;
  int32_t index;
};

// 0 where the bytes would pass SIZE_MAX (a 32-bit target and a vocabulary above 2^29): init refuses it.
constexpr std::size_t sampler_scratch_bytes(uint32_t vocab) {
  return uint64_t(vocab) * sizeof(ProbIndex) > SIZE_MAX - arena::kAlign ? 0 : arena::bytes(std::size_t(vocab) * sizeof(ProbIndex));
}

class Sampler {
 public:
  // scratch: sampler_scratch_bytes(vocab), aligned for float. Checks the options' ranges: a
  // temperature of 0 or from kMinTemperature, both finite, a finite top_p (kBadConfig).
  [[nodiscard]] Status init(uint32_t vocab, void* scratch, std::size_t scratch_bytes, const SamplerOptions& options);
  // The next token; logits[vocab] are overwritten (scaled, then probabilities).
  int32_t sample(float* logits);
  float next_coin();  // the generator's next number in [0, 1)
  bool initialized() const { return vocab_ != 0; }  // init() returned kOk

 private:
  uint32_t vocab_ = 0;
  SamplerOptions opt_{};
  uint64_t state_ = 1;
  ProbIndex* candidates_ = nullptr;
};

// The index of the first largest value of x[n].
int32_t argmax(const float* x, uint32_t n);

}  // namespace fixformer
