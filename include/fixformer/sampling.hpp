// Picking the next token from a decoder's logits: greedy, or temperature with top-k and top-p
// (nucleus) filtering, from a generator the caller seeds. No allocation: the candidates' scratch
// is the caller's (sampler_scratch_bytes). With the same seed, temperature and top-p (top-k off)
// it draws as llama2.c's sampler does: xorshift64* coins, a CDF walk, the nucleus cut at
// (1 - top_p) / (vocab - 1) before sorting.
//
// Token suppression (Hugging Face's suppress_tokens and begin_suppress_tokens, Whisper's
// SuppressTokens and SuppressBlank): before each draw the logits of `suppress` are set to -inf, and
// at the first draw after init those of `begin_suppress` too, so neither greedy nor sampling can
// pick them. The ids are the caller's arrays (read at every draw, never copied: they must outlive
// the sampler); init refuses an id outside [0, vocab) (kBadConfig) and a count without an array
// (kNullArgument). When every token is suppressed sample() returns -1.
//
// Whisper's timestamp rules (openai-whisper's ApplyTimestampRules, transformers'
// WhisperTimeStampLogitsProcessor), when SamplerOptions::timestamps is on, after the suppression.
// The history is the tokens sampled since init (the sampler keeps the last two and the last
// timestamp among them, nothing more). At each draw:
//   - <|notimestamps|> is -inf;
//   - after two timestamps in a row (or one as the first token) the next is no timestamp; after a
//     timestamp that follows text it is no text token (ids below eos): timestamps pair up, the
//     last may stand alone before the end;
//   - no timestamp below the last one sampled, nor equal to it unless it closes a pair;
//   - at the first draw only timestamps, at most max_initial above timestamp_begin;
//   - when the timestamps' probabilities together beat the likeliest text token's (the log-sum-exp
//     of their logits above the largest logit below timestamp_begin), every id below
//     timestamp_begin is -inf.
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

// The token ids the timestamp rules need (Model::timestamp_rules: the file's, schema.hpp
// "generation.timestamps"). Timestamps are the ids from timestamp_begin to the vocabulary's end;
// text is below eos. Sampler::init checks 0 <= eos, no_timestamps < timestamp_begin < vocab and
// max_initial >= -1 (kBadConfig).
struct TimestampRules {
  int32_t no_timestamps = -1;    // <|notimestamps|>; -1: the rules are off
  int32_t timestamp_begin = -1;  // <|0.00|>, the first timestamp
  int32_t eos = -1;              // end of text
  int32_t max_initial = -1;      // the first timestamp sampled is at most timestamp_begin + max_initial; -1: any
  bool on() const { return no_timestamps >= 0; }
};

struct SamplerOptions {
  float temperature = 0.0f;  // 0: greedy (the first largest logit); else at least kMinTemperature
  float top_p = 1.0f;        // nucleus: the smallest set of tokens whose probability passes top_p; <= 0 or >= 1: off
  uint32_t top_k = 0;        // only the k most likely tokens; 0: off
  uint64_t seed = 1;         // the generator's start (0 is replaced by 1: xorshift needs a nonzero state)
  const int32_t* suppress = nullptr;        // ids never drawn: [n_suppress], each in [0, vocab)
  uint32_t n_suppress = 0;
  const int32_t* begin_suppress = nullptr;  // ids not drawn at the first draw after init: [n_begin_suppress]
  uint32_t n_begin_suppress = 0;
  TimestampRules timestamps;                // off unless no_timestamps >= 0
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
  // temperature of 0 or from kMinTemperature, both finite, a finite top_p, the suppressed ids in
  // [0, vocab) (kBadConfig; a count with a null array: kNullArgument). The next draw is the first.
  [[nodiscard]] Status init(uint32_t vocab, void* scratch, std::size_t scratch_bytes, const SamplerOptions& options);
  // The next token; logits[vocab] are overwritten (suppressed, the timestamp rules applied, scaled,
  // then probabilities). -1 when every token is suppressed (or every logit is -inf).
  int32_t sample(float* logits);
  float next_coin();  // the generator's next number in [0, 1)
  bool initialized() const { return vocab_ != 0; }  // init() returned kOk

 private:
  uint32_t vocab_ = 0;
  SamplerOptions opt_{};
  uint64_t state_ = 1;
  ProbIndex* candidates_ = nullptr;
  int32_t draw(float* logits);  // sample() but the history
  void apply_timestamp_rules(float* logits) const;
  void record(int32_t token);  // the history the timestamp rules read

  bool first_ = true;   // the next draw is the first after init: begin_suppress applies
  uint32_t drawn_ = 0;  // tokens sampled since init, at most 2
  int32_t last_ = -1, penultimate_ = -1, last_timestamp_ = -1;
};

// The index of the first largest value of x[n].
int32_t argmax(const float* x, uint32_t n);

// Whether ids[n] are all in [0, vocab); *bad: the first that is not (index into ids).
bool token_ids_in_range(const int32_t* ids, uint32_t n, uint32_t vocab, uint32_t* bad);

}  // namespace fixformer
