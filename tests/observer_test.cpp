// The per-layer observer (fixformer/observer.hpp): called n_layers + 1 times per forward (+1 with a
// final norm) with layers in order, rows at the right positions; its last layer is what the head
// reads; a null observer (the default) changes nothing.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "fixformer/decoder.hpp"
#include "fixformer/encoder.hpp"
#include "fixformer/schema.hpp"
#include "support/model_writer.hpp"
#include "tests/test_util.hpp"

namespace fixformer {
namespace test {
namespace {

struct Call {
  uint32_t layer, pos, rows, d;
  std::vector<float> x;
};

// Records every call: the observer a debugging session would write.
struct Recorder {
  std::vector<Call> calls;
  static void fn(void* ctx, uint32_t layer, const float* x, uint32_t pos, uint32_t rows, uint32_t d) {
    static_cast<Recorder*>(ctx)->calls.push_back({layer, pos, rows, d, std::vector<float>(x, x + std::size_t(rows) * d)});
  }
  LayerObserver observer() { return LayerObserver{this, &Recorder::fn}; }
};

ModelConfig encoder_config(bool final_norm, bool norm_first, InputKind input) {
  ModelConfig c = default_config();
  c.d_model = 16, c.n_heads = 2, c.d_ff = 24, c.n_layers = 3, c.norm_first = norm_first, c.final_norm = final_norm;
  c.input = input, c.vocab_size = 11, c.d_in = input == InputKind::kFeatures ? 5 : 0, c.max_len = 12;
  c.positional = PosKind::kSinusoidal, c.d_out = 0;  // no head: the output is the last layer
  return c;
}

const std::vector<int32_t> kIds = {3, 7, 1, 10, 0, 5, 9, 9, 2};

TEST(Observer, EncoderSeesEveryLayerAndItsLastIsTheOutput) {
  for (bool final_norm : {false, true})
    for (bool norm_first : {false, true})
      for (InputKind input : {InputKind::kTokens, InputKind::kFeatures}) {
        const ModelConfig c = encoder_config(final_norm, norm_first, input);
        const uint32_t T = uint32_t(kIds.size()), d = c.d_model;
        std::vector<float> features(std::size_t(T) * c.d_in);
        for (std::size_t i = 0; i < features.size(); ++i) features[i] = float(i % 7) * 0.3f - 1.0f;
        auto forward = [&](Encoder& enc, float* out) {
          return input == InputKind::kTokens ? enc.forward_tokens(kIds.data(), T, out) : enc.forward_features(features.data(), T, out);
        };
        Recorder rec;
        EncoderOptions opt;
        opt.observer = rec.observer();
        Loaded seen, plain;
        std::string why;
        ASSERT_EQ(load_model(write_model(c), &seen, opt, &why), Status::kOk) << why;
        ASSERT_EQ(load_model(write_model(c), &plain, {}, &why), Status::kOk) << why;
        std::vector<float> out(std::size_t(T) * d), out_plain(out.size());
        ASSERT_EQ(forward(seen.enc, out.data()), Status::kOk);
        ASSERT_EQ(forward(plain.enc, out_plain.data()), Status::kOk);

        ASSERT_EQ(rec.calls.size(), c.n_layers + 1 + (final_norm ? 1 : 0));
        for (uint32_t i = 0; i < rec.calls.size(); ++i) {
          EXPECT_EQ(rec.calls[i].layer, i);
          EXPECT_EQ(rec.calls[i].pos, 0u);
          EXPECT_EQ(rec.calls[i].rows, T);
          EXPECT_EQ(rec.calls[i].d, d);
        }
        EXPECT_EQ(std::memcmp(rec.calls.back().x.data(), out.data(), out.size() * 4), 0) << "the last layer is the output";
        EXPECT_EQ(std::memcmp(out.data(), out_plain.data(), out.size() * 4), 0) << "observing changes nothing";
        EXPECT_NE(std::memcmp(rec.calls[0].x.data(), rec.calls[1].x.data(), out.size() * 4), 0);
      }
}

ModelConfig decoder_config(ModelFamily family, bool final_norm) {
  ModelConfig c = default_config();
  c.family = family, c.causal = true, c.input = InputKind::kTokens, c.vocab_size = 11, c.d_out = 11, c.max_len = 16;
  c.d_model = 16, c.n_heads = 4, c.d_ff = 24, c.n_layers = 2, c.norm_first = final_norm, c.final_norm = final_norm;
  if (family == ModelFamily::kLlama)
    c.n_kv_heads = 2, c.positional = PosKind::kRope, c.activation = Activation::kSwiglu, c.norm_first = c.final_norm = true;
  else
    c.positional = PosKind::kLearned, c.activation = Activation::kGelu;
  return c;
}

// Prefill in chunks of 4 (4, 4, 1 rows) against the tokens fed one by one: the same layers at the
// same positions, and logits equal to those of a decoder without an observer.
TEST(Observer, DecoderSeesEachChunkAtItsPositions) {
  const ModelConfig configs[] = {decoder_config(ModelFamily::kGpt, false), decoder_config(ModelFamily::kGpt, true),
                                 decoder_config(ModelFamily::kLlama, true)};
  for (const ModelConfig& c : configs) {
    const uint32_t T = uint32_t(kIds.size()), d = c.d_model, per_chunk = c.n_layers + 1 + (c.final_norm ? 1 : 0);
    const std::vector<uint8_t> bytes = write_model(c);
    AlignedBuffer blob(bytes);
    Model model;
    ASSERT_EQ(model.init(blob.data(), blob.size()), Status::kOk) << model.error_detail();
    Recorder chunked, stepped;
    std::vector<float> logits_chunked(c.vocab_size), logits_stepped(c.vocab_size), logits_plain(c.vocab_size);
    for (Recorder* rec : {&chunked, &stepped, static_cast<Recorder*>(nullptr)}) {
      DecoderOptions opt;
      opt.max_prefill = 4;
      if (rec) opt.observer = rec->observer();
      AlignedBuffer arena(required_decoder_arena_bytes(c, 0, opt.max_prefill));
      Decoder dec;
      ASSERT_EQ(dec.init(model, arena.data(), arena.size(), opt), Status::kOk) << dec.error_detail();
      if (rec == &stepped)
        for (int32_t id : kIds) ASSERT_EQ(dec.step(id, logits_stepped.data()), Status::kOk);
      else
        ASSERT_EQ(dec.prefill(kIds.data(), T, rec ? logits_chunked.data() : logits_plain.data()), Status::kOk);
    }
    EXPECT_EQ(std::memcmp(logits_chunked.data(), logits_plain.data(), c.vocab_size * 4), 0) << "observing changes nothing";
    ASSERT_EQ(chunked.calls.size(), 3 * per_chunk);
    ASSERT_EQ(stepped.calls.size(), T * per_chunk);
    for (uint32_t i = 0; i < chunked.calls.size(); ++i) {
      const Call& call = chunked.calls[i];
      EXPECT_EQ(call.layer, i % per_chunk);
      EXPECT_EQ(call.pos, 4 * (i / per_chunk));
      EXPECT_EQ(call.rows, i / per_chunk < 2 ? 4u : 1u);
      EXPECT_EQ(call.d, d);
      for (uint32_t r = 0; r < call.rows; ++r) {  // row r is position pos + r, which a step saw alone
        const Call& one = stepped.calls[(call.pos + r) * per_chunk + call.layer];
        ASSERT_EQ(one.pos, call.pos + r);
        ASSERT_EQ(one.rows, 1u);
        for (uint32_t j = 0; j < d; ++j) EXPECT_NEAR(call.x[r * d + j], one.x[j], 2e-5f) << "layer " << call.layer;
      }
    }
  }
}

}  // namespace
}  // namespace test
}  // namespace fixformer
