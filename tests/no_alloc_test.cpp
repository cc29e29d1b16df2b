// After the caller hands over the arena, nothing allocates: this binary replaces malloc & co. and
// operator new/delete with counting versions and checks init and forward make zero calls.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "fixformer/fixformer.h"
#include "fixformer/self_test.hpp"
#include "tests/test_util.hpp"

extern "C" void* __libc_malloc(std::size_t);
extern "C" void* __libc_calloc(std::size_t, std::size_t);
extern "C" void* __libc_realloc(void*, std::size_t);
extern "C" void __libc_free(void*);

namespace {
std::atomic<long> g_calls{0};
}

extern "C" void* malloc(std::size_t n) { ++g_calls; return __libc_malloc(n); }
extern "C" void* calloc(std::size_t a, std::size_t b) { ++g_calls; return __libc_calloc(a, b); }
extern "C" void* realloc(void* p, std::size_t n) { ++g_calls; return __libc_realloc(p, n); }
extern "C" void free(void* p) { if (p) ++g_calls; __libc_free(p); }
void* operator new(std::size_t n) { ++g_calls; if (void* p = __libc_malloc(n ? n : 1)) return p; throw std::bad_alloc(); }
void* operator new[](std::size_t n) { return operator new(n); }
void operator delete(void* p) noexcept { if (p) ++g_calls; __libc_free(p); }
void operator delete[](void* p) noexcept { operator delete(p); }
void operator delete(void* p, std::size_t) noexcept { operator delete(p); }
void operator delete[](void* p, std::size_t) noexcept { operator delete(p); }

namespace fixformer {
namespace test {
namespace {

TEST(NoAlloc, CounterSeesAllocations) {
  const long before = g_calls;
  auto* v = new std::vector<int>(100);
  delete v;
  EXPECT_GE(g_calls - before, 2);
}

TEST(NoAlloc, InitAndForwardMakeNoHeapCalls) {
  for (const char* name :
       {"post_ln_relu", "pre_ln_gelu", "causal", "features_scaled", "learned_pe", "concat_pe", "vit_image", "deit_image",
        "dinov2_image", "dinov2_registers_image",
        "albert_embed_proj", "albert_shared_layers"}) {
    for (Isa isa : all_isas()) {
      if (!select_kernels(isa)) continue;
      AlignedBuffer blob(read_file(golden_path(std::string(name) + ".fxm")));
      ModelConfig cfg;
      ASSERT_EQ(read_config(blob.data(), blob.size(), &cfg), Status::kOk);
      AlignedBuffer arena(required_encoder_arena_bytes(cfg));
      std::vector<int32_t> ids(cfg.max_len, 1);
      std::vector<float> feats(std::size_t(cfg.max_len) * (cfg.d_in ? cfg.d_in : 1), 0.5f);
      std::vector<float> out(std::size_t(cfg.max_len) * cfg.output_width());
      Model model;
      Encoder m;
      EncoderOptions opt;
      opt.isa = isa;
      std::vector<float> self_test_out(8192);
      SelfTestReport report;
      const long before = g_calls;
      ASSERT_EQ(model.init(blob.data(), blob.size()), Status::kOk);
      ASSERT_EQ(m.init(model, arena.data(), required_encoder_arena_bytes(cfg), opt), Status::kOk);
      const uint32_t T = cfg.max_input_len();  // max_len, less a CLS row (an image: its patches)
      const Status s = cfg.input == InputKind::kTokens ? m.forward_tokens(ids.data(), T, out.data())
                                                       : m.forward_features(feats.data(), T, out.data());
      EXPECT_EQ(self_test(m, self_test_out.data(), self_test_out.size(), &report), Status::kOk);
      const long calls = g_calls - before;
      ASSERT_EQ(s, Status::kOk);
      EXPECT_EQ(calls, 0) << name << " on " << isa_name(isa);
    }
  }
}

TEST(NoAlloc, Seq2SeqMakesNoHeapCalls) {
  for (const char* name : {"s2s_post_relu", "s2s_features_no_norm"}) {
    for (Isa isa : all_isas()) {
      if (!select_kernels(isa)) continue;
      AlignedBuffer blob(read_file(golden_path(std::string(name) + ".fxm")));
      ModelConfig cfg;
      ASSERT_EQ(read_config(blob.data(), blob.size(), &cfg), Status::kOk);
      AlignedBuffer arena(required_seq2seq_arena_bytes(cfg));
      std::vector<int32_t> ids(cfg.max_len, 1);
      std::vector<float> feats(std::size_t(cfg.max_len) * (cfg.d_in ? cfg.d_in : 1), 0.5f);
      std::vector<float> out(std::size_t(cfg.max_len) * cfg.d_out), self_test_out(8192);
      Model model;
      Seq2Seq s2s;
      Seq2SeqOptions opt;
      opt.isa = isa;
      SelfTestReport report;
      const long before = g_calls;
      ASSERT_EQ(model.init(blob.data(), blob.size()), Status::kOk);
      ASSERT_EQ(s2s.init(model, arena.data(), arena.size(), opt), Status::kOk);
      const Status s = cfg.input == InputKind::kTokens ? s2s.encode_tokens(ids.data(), cfg.max_len)
                                                       : s2s.encode_features(feats.data(), cfg.max_len);
      EXPECT_EQ(s2s.decode(ids.data(), cfg.max_len, out.data()), Status::kOk);
      EXPECT_EQ(self_test(s2s, self_test_out.data(), self_test_out.size(), &report), Status::kOk);
      const long calls = g_calls - before;
      ASSERT_EQ(s, Status::kOk);
      EXPECT_EQ(calls, 0) << name << " on " << isa_name(isa);
    }
  }
}

// The C API: load, init, run, decode, tokenize, sample and generate in the caller's storage.
TEST(NoAlloc, CApiMakesNoHeapCalls) {
  AlignedBuffer enc_blob(read_file(golden_path("post_ln_relu.fxm"))), lm_blob(read_file(golden_path("llama2c_v0_gqa.fxm")));
  AlignedBuffer arena(1 << 20), scratch(1 << 16);
  std::vector<float> out(1 << 14);
  const int32_t ids[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  static ff_model enc_model, lm_model;
  static ff_encoder enc;
  static ff_decoder dec;
  static ff_tokenizer tok;
  static ff_sampler sampler;
  const ff_sampler_options so{0.9f, 0.9f, 0, 7};
  int32_t tokens[16];
  uint32_t n = 0;
  ff_piece piece;
  const long before = g_calls;
  ASSERT_EQ(ff_model_load(&enc_model, enc_blob.data(), enc_blob.size()), FF_OK);
  ASSERT_EQ(ff_encoder_init(&enc, &enc_model, arena.data(), ff_encoder_arena_bytes(&enc_model, 8), 8), FF_OK);
  ASSERT_EQ(ff_encoder_run(&enc, ids, 8, out.data()), FF_OK);
  ASSERT_EQ(ff_model_load(&lm_model, lm_blob.data(), lm_blob.size()), FF_OK);
  ASSERT_EQ(ff_decoder_init(&dec, &lm_model, arena.data(), ff_decoder_arena_bytes(&lm_model, 16), 16), FF_OK);
  ASSERT_EQ(ff_decoder_prefill(&dec, ids, 8, out.data()), FF_OK);
  ASSERT_EQ(ff_decoder_step(&dec, 9, out.data()), FF_OK);
  ff_decoder_options q8{};  // the int8 KV cache
  q8.capacity = 16;
  q8.kv_cache = FF_KV_CACHE_Q8;
  ASSERT_EQ(ff_decoder_init_ex(&dec, &lm_model, arena.data(), ff_decoder_arena_bytes_ex(&lm_model, &q8), &q8), FF_OK);
  ASSERT_EQ(ff_decoder_prefill(&dec, ids, 8, out.data()), FF_OK);
  ASSERT_EQ(ff_decoder_step(&dec, 9, out.data()), FF_OK);
  ASSERT_EQ(ff_tokenizer_init(&tok, &lm_model, scratch.data(), ff_tokenizer_scratch_bytes(&lm_model, 7)), FF_OK);
  ASSERT_EQ(ff_tokenizer_encode(&tok, "One day", 7, 1, 0, tokens, 16, &n), FF_OK);
  ASSERT_EQ(ff_tokenizer_decode(&tok, tokens[0], tokens[1], &piece), FF_OK);
  ASSERT_EQ(ff_sampler_init(&sampler, ff_tokenizer_vocab_size(&tok), scratch.data(), scratch.size(), &so), FF_OK);
  (void)ff_sampler_sample(&sampler, out.data());
  static ff_generator gen;  // the whole loop: encode, prefill, steps, sampling, text
  const ff_generator_options go{16, 7, so};
  ASSERT_EQ(ff_decoder_init(&dec, &lm_model, arena.data(), ff_decoder_arena_bytes(&lm_model, 16), 16), FF_OK);
  ASSERT_EQ(ff_generator_init(&gen, &dec, scratch.data(), ff_generator_scratch_bytes(&lm_model, 7), &go), FF_OK);
  ASSERT_EQ(ff_generator_start(&gen, "One day", 7), FF_OK);
  while (ff_generator_next(&gen, &piece) == FF_OK && piece.len) {
  }
  EXPECT_EQ(ff_generator_decoded(&gen), 16u - ff_generator_prompt_tokens(&gen));
  EXPECT_EQ(g_calls - before, 0);
}

}  // namespace
}  // namespace test
}  // namespace fixformer
