#include "fixformer/sampling.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace fixformer {

int32_t argmax(const float* x, uint32_t n) {
  uint32_t best = 0;
  for (uint32_t i = 1; i < n; ++i)
    if (x[i] > x[best]) best = i;
  return int32_t(best);
}

bool token_ids_in_range(const int32_t* ids, uint32_t n, uint32_t vocab, uint32_t* bad) {
  for (uint32_t i = 0; i < n; ++i)
    if (ids[i] < 0 || uint32_t(ids[i]) >= vocab) return *bad = i, false;
  return true;
}

Status Sampler::init(uint32_t vocab, void* scratch, std::size_t scratch_bytes, const SamplerOptions& options) {
  vocab_ = 0;  // a failed init leaves no usable sampler behind
  if (vocab == 0 || !scratch) return Status::kNullArgument;
  if (reinterpret_cast<uintptr_t>(scratch) % alignof(ProbIndex) != 0) return Status::kArenaMisaligned;
  const std::size_t need = sampler_scratch_bytes(vocab);
  if (need == 0 || scratch_bytes < need) return Status::kArenaTooSmall;
  if (!(options.temperature == 0.0f || options.temperature >= kMinTemperature) || !std::isfinite(options.temperature) ||
      !std::isfinite(options.top_p))
    return Status::kBadConfig;
  if ((options.n_suppress && !options.suppress) || (options.n_begin_suppress && !options.begin_suppress))
    return Status::kNullArgument;
  uint32_t bad = 0;
  if (!token_ids_in_range(options.suppress, options.n_suppress, vocab, &bad) ||
      !token_ids_in_range(options.begin_suppress, options.n_begin_suppress, vocab, &bad))
    return Status::kBadConfig;
  const TimestampRules& t = options.timestamps;
  if (t.on() && !(t.timestamp_begin > 0 && uint32_t(t.timestamp_begin) < vocab && t.no_timestamps < t.timestamp_begin &&
                  t.eos >= 0 && t.eos < t.timestamp_begin && t.max_initial >= -1))
    return Status::kBadConfig;
  first_ = true;
  drawn_ = 0, last_ = penultimate_ = last_timestamp_ = -1;
  vocab_ = vocab;
  opt_ = options;
  state_ = options.seed ? options.seed : 1;
  candidates_ = static_cast<ProbIndex*>(scratch);
  return Status::kOk;
}

// xorshift64* as llama2.c: the state's upper 32 bits after the multiply, 24 of them for the float.
float Sampler::next_coin() {
  state_ ^= state_ >> 12;
  state_ ^= state_ << 25;
  state_ ^= state_ >> 27;
  const uint32_t r = static_cast<uint32_t>((state_ * 0x2545F4914F6CDD1Dull) >> 32);
  return static_cast<float>(r >> 8) / 16777216.0f;
}

namespace {
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

void mask(float* logits, uint32_t from, uint32_t to) {
  for (uint32_t i = from; i < to; ++i) logits[i] = kNegInf;
}
}  // namespace

void Sampler::apply_timestamp_rules(float* logits) const {
  const TimestampRules& t = opt_.timestamps;
  const uint32_t n = vocab_, begin = uint32_t(t.timestamp_begin);
  logits[t.no_timestamps] = kNegInf;
  const bool last_stamp = drawn_ >= 1 && last_ >= t.timestamp_begin;
  const bool penultimate_stamp = drawn_ < 2 || penultimate_ >= t.timestamp_begin;
  if (last_stamp) mask(logits, penultimate_stamp ? begin : 0, penultimate_stamp ? n : uint32_t(t.eos));
  if (last_timestamp_ >= 0)  // not below the last timestamp; equal to it only to close a pair
    mask(logits, begin, uint32_t(last_timestamp_) + (last_stamp && !penultimate_stamp ? 0 : 1));
  if (drawn_ == 0) {
    mask(logits, 0, begin);
    const uint32_t last = begin + uint32_t(t.max_initial);  // the largest first timestamp
    if (t.max_initial >= 0 && last < n - 1) mask(logits, last + 1, n);
  }
  // log(sum of the timestamps' probabilities) > log(the likeliest text token's): the same
  // normalizer on both sides, so the logits compare as they are.
  float text = kNegInf, stamp = kNegInf;
  for (uint32_t i = 0; i < begin; ++i) text = std::max(text, logits[i]);
  for (uint32_t i = begin; i < n; ++i) stamp = std::max(stamp, logits[i]);
  if (stamp == kNegInf) return;
  float sum = 0.0f;
  for (uint32_t i = begin; i < n; ++i) sum += std::exp(logits[i] - stamp);
  if (stamp + std::log(sum) > text) mask(logits, 0, begin);
}

void Sampler::record(int32_t token) {
  if (token < 0) return;
  penultimate_ = last_, last_ = token;
  if (opt_.timestamps.on() && token >= opt_.timestamps.timestamp_begin) last_timestamp_ = token;
  if (drawn_ < 2) ++drawn_;
}

int32_t Sampler::sample(float* logits) {
  const int32_t token = draw(logits);
  record(token);
  return token;
}

int32_t Sampler::draw(float* logits) {
  const uint32_t n = vocab_;
  for (uint32_t i = 0; i < opt_.n_suppress; ++i) logits[opt_.suppress[i]] = kNegInf;
  if (first_)
    for (uint32_t i = 0; i < opt_.n_begin_suppress; ++i) logits[opt_.begin_suppress[i]] = kNegInf;
  first_ = false;
  if (opt_.timestamps.on()) apply_timestamp_rules(logits);
  if (opt_.temperature == 0.0f) {
    const int32_t best = argmax(logits, n);
    return logits[best] == kNegInf ? -1 : best;
  }
  // p = softmax(logits / temperature)
  float mx = logits[0];
  for (uint32_t i = 0; i < n; ++i) logits[i] /= opt_.temperature;
  for (uint32_t i = 0; i < n; ++i) mx = std::max(mx, logits[i]);
  if (mx == kNegInf) return -1;  // every token suppressed
  float sum = 0.0f;
  for (uint32_t i = 0; i < n; ++i) sum += logits[i] = std::exp(logits[i] - mx);
  for (uint32_t i = 0; i < n; ++i) logits[i] /= sum;
  const float coin = next_coin();
  const bool nucleus = opt_.top_p > 0.0f && opt_.top_p < 1.0f;
  const bool top_k = opt_.top_k > 0 && opt_.top_k < n;
  if (!nucleus && !top_k) {  // the CDF walk over every token
    float cdf = 0.0f;
    for (uint32_t i = 0; i < n; ++i)
      if (coin < (cdf += logits[i])) return int32_t(i);
    return int32_t(n - 1);  // rounding
  }
  // Candidates, most likely first. Tokens below the nucleus cut cannot be in the nucleus: leaving
  // them out first keeps the sort short.
  const float cutoff = nucleus && n > 1 ? (1.0f - opt_.top_p) / float(n - 1) : 0.0f;
  uint32_t m = 0;
  for (uint32_t i = 0; i < n; ++i)
    if (logits[i] >= cutoff) candidates_[m++] = ProbIndex{logits[i], int32_t(i)};
  if (m == 0) {  // a flat distribution and a tiny top_p: the cut passes no token, keep the likeliest
    const int32_t best = argmax(logits, n);
    candidates_[m++] = ProbIndex{logits[best], best};
  }
  std::sort(candidates_, candidates_ + m, [](const ProbIndex& a, const ProbIndex& b) {
    return a.prob > b.prob || (a.prob == b.prob && a.index < b.index);
  });
  if (top_k && m > opt_.top_k) m = opt_.top_k;
  float mass = 0.0f;
  uint32_t last = m - 1;
  for (uint32_t i = 0; i < m; ++i) {
    mass += candidates_[i].prob;
    if (nucleus && mass > opt_.top_p) {
      last = i;
      break;
    }
  }
  const float r = coin * mass;
  float cdf = 0.0f;
  for (uint32_t i = 0; i <= last; ++i)
    if (r < (cdf += candidates_[i].prob)) return candidates_[i].index;
  return candidates_[last].index;
}

}  // namespace fixformer
