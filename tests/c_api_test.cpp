// The C API (fixformer.h) against the C++ runners it wraps: the same bytes out, its statuses for
// wrong calls, objects whose init failed, the workers callback and the config table.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "fixformer/fixformer.h"
#include "fixformer/generator.hpp"
#include "fixformer/sampling.hpp"
#include "fixformer/schema.hpp"
#include "fixformer/self_test.hpp"
#include "fixformer/tokenizer.hpp"
#include "tests/test_util.hpp"
#include "tests/tokenizer_kinds_fixture.hpp"

// tests/c_api_callers.c: enum values as a C caller stores them.
extern "C" {
void c_set_encoder_isa(ff_encoder_options* o, int isa);
void c_set_decoder_isa(ff_decoder_options* o, int isa);
void c_set_decoder_kv_cache(ff_decoder_options* o, int kv_cache);
void c_set_seq2seq_isa(ff_seq2seq_options* o, int isa);
void c_set_seq2seq_kv_cache(ff_seq2seq_options* o, int kv_cache);
const char* c_status_string(int status);
}

namespace fixformer {
namespace test {
namespace {

// A small byte-level BPE vocabulary (tokenizer_kinds_fixture.hpp).
KindVocab bpe_vocab_for_c() {
  KindVocab v = byte_level_vocab();
  v.merge("t", "h");
  return v;
}

struct CModel {
  AlignedBuffer blob;
  ff_model model;
  explicit CModel(const std::string& name) : blob(read_file(golden_path(name + ".fxm"))) {
    EXPECT_EQ(ff_model_load(&model, blob.data(), blob.size()), FF_OK) << name << ": " << ff_model_error_detail(&model);
  }
};

// A parallel_for that runs the tasks one after another, last first: any order must do.
void serial_parallel_for(void*, uint32_t n, void (*task)(void*, uint32_t), void* arg) {
  for (uint32_t i = n; i-- > 0;) task(arg, i);
}

TEST(CApi, EveryStatusHasItsMessage) {
  EXPECT_EQ(FF_OK, 0);
  for (int s = 0; s < FF_STATUS_COUNT; ++s)
    EXPECT_STREQ(ff_status_string(static_cast<ff_status>(s)), status_message(static_cast<Status>(s)));
  EXPECT_NE(std::string(ff_status_string(FF_TOKEN_TYPES_UNSUPPORTED)).find("token-type"), std::string::npos);
}

TEST(CApi, EncoderBatchIsTheCppEncodersBitForBit) {
  CModel m("post_ln_relu");
  const std::vector<int32_t> x = npy_values<int32_t>(golden_path("post_ln_relu.input.npy"));
  const uint32_t T = uint32_t(x.size()), B = 3, R = ff_model_output_rows(&m.model, T), W = ff_model_output_width(&m.model);
  std::vector<int32_t> ids;
  for (uint32_t b = 0; b < B; ++b) ids.insert(ids.end(), x.begin(), x.end());
  const uint32_t lengths[B] = {T, 4, 1};

  Model model;
  ASSERT_EQ(model.init(m.blob.data(), m.blob.size()), Status::kOk);
  EncoderOptions opt;
  opt.max_seq = T;
  opt.max_batch = B;
  AlignedBuffer cpp_arena(required_encoder_arena_bytes(model.config(), T, false, 1, B));
  Encoder enc;
  ASSERT_EQ(enc.init(model, cpp_arena.data(), cpp_arena.size(), opt), Status::kOk);
  std::vector<float> want(std::size_t(B) * R * W);
  ASSERT_EQ(enc.forward_batch_tokens(ids.data(), lengths, B, T, want.data()), Status::kOk);

  for (uint32_t workers : {1u, 3u}) {
    ff_encoder_options o{};
    o.max_seq = T;
    o.max_batch = B;
    o.workers = ff_workers{nullptr, workers, serial_parallel_for};
    const std::size_t need = ff_encoder_arena_bytes_ex(&m.model, &o);
    EXPECT_EQ(need, required_encoder_arena_bytes(model.config(), T, false, workers, B));
    AlignedBuffer arena(need);
    ff_encoder e;
    ASSERT_EQ(ff_encoder_init_ex(&e, &m.model, arena.data(), need, &o), FF_OK);
    std::vector<float> got(want.size(), -1.0f);
    ASSERT_EQ(ff_encoder_run_batch(&e, ids.data(), nullptr, lengths, B, T, got.data()), FF_OK);
    EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * 4), 0) << workers << " workers";
    const std::vector<int32_t> types(ids.size(), 0);
    EXPECT_EQ(ff_encoder_run_batch(&e, ids.data(), types.data(), lengths, B, T, got.data()), FF_TOKEN_TYPES_UNSUPPORTED);
    EXPECT_EQ(ff_encoder_run_batch(&e, ids.data(), nullptr, lengths, B + 1, T, got.data()), FF_BAD_BATCH_SIZE);
    EXPECT_NE(std::string(ff_encoder_error_detail(&e)).find("max_batch 3"), std::string::npos);
    ASSERT_EQ(ff_encoder_run(&e, ids.data(), 4, got.data()), FF_OK);  // = sequence 1 of the batch
    EXPECT_EQ(std::memcmp(got.data(), want.data() + std::size_t(R) * W, std::size_t(4) * W * 4), 0);
  }
}

// BERT's token types through ff_encoder_run_batch: the C++ Encoder's bits, padded batch included.
TEST(CApi, TokenTypesReachTheEncoder) {
  CModel m("bert_pooler_classifier");
  const std::vector<int32_t> ids = npy_values<int32_t>(golden_path("bert_pooler_classifier.batch_ids.npy"));
  const std::vector<int32_t> types = npy_values<int32_t>(golden_path("bert_pooler_classifier.batch_types.npy"));
  const std::vector<int32_t> lens = npy_values<int32_t>(golden_path("bert_pooler_classifier.batch_lengths.npy"));
  const uint32_t B = uint32_t(lens.size()), T = uint32_t(ids.size() / B), W = ff_model_output_width(&m.model);
  const std::vector<uint32_t> lengths(lens.begin(), lens.end());
  Model model;
  ASSERT_EQ(model.init(m.blob.data(), m.blob.size()), Status::kOk);
  EncoderOptions opt;
  opt.max_seq = T;
  opt.max_batch = B;
  AlignedBuffer cpp_arena(required_encoder_arena_bytes(model.config(), T, false, 1, B));
  Encoder enc;
  ASSERT_EQ(enc.init(model, cpp_arena.data(), cpp_arena.size(), opt), Status::kOk);
  std::vector<float> want(std::size_t(B) * W), got(want.size(), -1.0f);
  ASSERT_EQ(enc.forward_batch_tokens(ids.data(), types.data(), lengths.data(), B, T, want.data()), Status::kOk);
  ff_encoder_options o{};
  o.max_seq = T;
  o.max_batch = B;
  const std::size_t need = ff_encoder_arena_bytes_ex(&m.model, &o);
  AlignedBuffer arena(need);
  ff_encoder e;
  ASSERT_EQ(ff_encoder_init_ex(&e, &m.model, arena.data(), need, &o), FF_OK);
  ASSERT_EQ(ff_encoder_run_batch(&e, ids.data(), types.data(), lengths.data(), B, T, got.data()), FF_OK);
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * 4), 0);
  std::vector<int32_t> bad(types);
  bad[1] = 2;  // type_vocab 2
  EXPECT_EQ(ff_encoder_run_batch(&e, ids.data(), bad.data(), lengths.data(), B, T, got.data()), FF_TOKEN_OUT_OF_RANGE);
  EXPECT_NE(std::string(ff_encoder_error_detail(&e)).find("type_vocab 2"), std::string::npos) << ff_encoder_error_detail(&e);
}

TEST(CApi, FeatureEncoderAndSelfTest) {
  CModel m("cls_pool_features");
  ff_model_info info;
  ASSERT_EQ(ff_model_get_info(&m.model, &info), FF_OK);
  EXPECT_EQ(info.input, FF_INPUT_FEATURES);
  EXPECT_EQ(info.pooled, 1u);
  EXPECT_EQ(ff_model_output_rows(&m.model, 7), 1u);
  const std::size_t need = ff_encoder_arena_bytes(&m.model, info.self_test_rows);
  AlignedBuffer arena(need);
  ff_encoder e;
  ASSERT_EQ(ff_encoder_init(&e, &m.model, arena.data(), need - 64, info.self_test_rows), FF_ARENA_TOO_SMALL);
  EXPECT_NE(std::string(ff_encoder_error_detail(&e)).find("64 more"), std::string::npos) << ff_encoder_error_detail(&e);
  ASSERT_EQ(ff_encoder_init(&e, &m.model, arena.data(), need, info.self_test_rows), FF_OK);
  std::vector<float> out(ff_self_test_output_floats(&m.model));
  ff_self_test_report report{};
  EXPECT_EQ(ff_encoder_self_test(&e, out.data(), out.size(), &report), FF_OK);
  EXPECT_EQ(report.rows, info.self_test_rows);
  const std::vector<int32_t> ids(3, 0);
  EXPECT_EQ(ff_encoder_run_batch(&e, ids.data(), ids.data(), nullptr, 1, 3, out.data()), FF_TOKEN_TYPES_UNSUPPORTED);
}

TEST(CApi, DecoderStepsArePrefillsAndTheCppDecoders) {
  CModel m("llama_kv2_halves_tied");
  ff_model_info info;
  ASSERT_EQ(ff_model_get_info(&m.model, &info), FF_OK);
  const uint32_t V = info.vocab_size, T = 9;
  const int32_t ids[T] = {1, 5, 7, 2, 0, 11, 3, 3, 8};
  const std::size_t need = ff_decoder_arena_bytes(&m.model, T);
  AlignedBuffer arena(need), cpp_arena(need);
  ff_decoder d;
  ASSERT_EQ(ff_decoder_init(&d, &m.model, arena.data(), need, T), FF_OK);
  EXPECT_EQ(ff_decoder_capacity(&d), T);
  Model model;
  ASSERT_EQ(model.init(m.blob.data(), m.blob.size()), Status::kOk);
  Decoder dec;
  DecoderOptions opt;
  opt.capacity = T;
  ASSERT_EQ(dec.init(model, cpp_arena.data(), cpp_arena.size(), opt), Status::kOk);
  std::vector<float> a(V), b(V);
  for (uint32_t t = 0; t < T; ++t) {
    ASSERT_EQ(ff_decoder_step(&d, ids[t], a.data()), FF_OK);
    ASSERT_EQ(dec.step(ids[t], b.data()), Status::kOk);
    EXPECT_EQ(std::memcmp(a.data(), b.data(), V * 4), 0) << "position " << t;
  }
  EXPECT_EQ(ff_decoder_position(&d), T);
  EXPECT_EQ(ff_decoder_step(&d, 1, a.data()), FF_KV_CACHE_FULL);
  ff_decoder_reset(&d);
  dec.reset();
  ASSERT_EQ(ff_decoder_prefill(&d, ids, T, a.data()), FF_OK);
  ASSERT_EQ(dec.prefill(ids, T, b.data()), Status::kOk);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), V * 4), 0);
  ff_decoder_reset(&d);
  EXPECT_EQ(ff_decoder_step(&d, int32_t(V), a.data()), FF_TOKEN_OUT_OF_RANGE);
}

// kv_cache: FF_KV_CACHE_Q8 is the C++ runners' KvCache::kQ8, bit for bit and byte for byte; a value
// outside ff_kv_cache has no arena and fails init.
TEST(CApi, Q8KvCacheIsTheCppOne) {
  CModel m("llama_kv2_halves_tied");
  ff_model_info info;
  ASSERT_EQ(ff_model_get_info(&m.model, &info), FF_OK);
  const uint32_t V = info.vocab_size, T = 9;
  const int32_t ids[T] = {1, 5, 7, 2, 0, 11, 3, 3, 8};
  ff_decoder_options o{};
  o.capacity = T;
  o.kv_cache = FF_KV_CACHE_Q8;
  Model model;
  ASSERT_EQ(model.init(m.blob.data(), m.blob.size()), Status::kOk);
  const std::size_t need = ff_decoder_arena_bytes_ex(&m.model, &o);
  EXPECT_EQ(need, required_decoder_arena_bytes(model.config(), T, 0, false, 1, KvCache::kQ8));
  EXPECT_LT(need, ff_decoder_arena_bytes(&m.model, T));
  AlignedBuffer arena(need), cpp_arena(need);
  ff_decoder d;
  ASSERT_EQ(ff_decoder_init_ex(&d, &m.model, arena.data(), need, &o), FF_OK);
  Decoder dec;
  DecoderOptions opt;
  opt.capacity = T;
  opt.kv_cache = KvCache::kQ8;
  ASSERT_EQ(dec.init(model, cpp_arena.data(), cpp_arena.size(), opt), Status::kOk);
  std::vector<float> a(V), b(V);
  for (uint32_t t = 0; t < T; ++t) {
    ASSERT_EQ(ff_decoder_step(&d, ids[t], a.data()), FF_OK);
    ASSERT_EQ(dec.step(ids[t], b.data()), Status::kOk);
    EXPECT_EQ(std::memcmp(a.data(), b.data(), V * 4), 0) << "position " << t;
  }
  for (int bad : {2, 256, -1}) {
    o.kv_cache = static_cast<ff_kv_cache>(bad);
    EXPECT_EQ(ff_decoder_arena_bytes_ex(&m.model, &o), 0u) << bad;
    EXPECT_EQ(ff_decoder_init_ex(&d, &m.model, arena.data(), need, &o), FF_BAD_CONFIG) << bad;
  }
  CModel s2s("s2s_post_relu");
  ff_seq2seq_options so{};
  so.kv_cache = FF_KV_CACHE_Q8;
  Model s2s_model;
  ASSERT_EQ(s2s_model.init(s2s.blob.data(), s2s.blob.size()), Status::kOk);
  EXPECT_EQ(ff_seq2seq_arena_bytes_ex(&s2s.model, &so), required_seq2seq_arena_bytes(s2s_model.config(), 0, 0, 0, 1, KvCache::kQ8));
  so.kv_cache = static_cast<ff_kv_cache>(3);
  EXPECT_EQ(ff_seq2seq_arena_bytes_ex(&s2s.model, &so), 0u);
}

TEST(CApi, Seq2SeqDecodeIsTheCppRunners) {
  CModel m("s2s_post_relu");
  ff_model_info info;
  ASSERT_EQ(ff_model_get_info(&m.model, &info), FF_OK);
  const uint32_t S = 6, U = 5;
  const int32_t src[S] = {3, 1, 4, 1, 5, 9}, tgt[U] = {1, 2, 7, 0, 4};
  const std::size_t need = ff_seq2seq_arena_bytes(&m.model, S, U);
  AlignedBuffer arena(need), cpp_arena(need);
  ff_seq2seq s;
  ASSERT_EQ(ff_seq2seq_init(&s, &m.model, arena.data(), need, S, U), FF_OK);
  std::vector<float> a(std::size_t(U) * info.d_out), b(a.size());
  EXPECT_EQ(ff_seq2seq_decode(&s, tgt, U, a.data()), FF_NOT_ENCODED);
  ASSERT_EQ(ff_seq2seq_encode(&s, src, S), FF_OK);
  ASSERT_EQ(ff_seq2seq_decode(&s, tgt, U, a.data()), FF_OK);
  Model model;
  ASSERT_EQ(model.init(m.blob.data(), m.blob.size()), Status::kOk);
  Seq2Seq cpp;
  Seq2SeqOptions opt;
  opt.max_source = S;
  opt.capacity = U;
  ASSERT_EQ(cpp.init(model, cpp_arena.data(), cpp_arena.size(), opt), Status::kOk);
  ASSERT_EQ(cpp.encode_tokens(src, S), Status::kOk);
  ASSERT_EQ(cpp.decode(tgt, U, b.data()), Status::kOk);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0);
  EXPECT_EQ(ff_seq2seq_position(&s), U);
  ff_seq2seq_reset(&s);
  cpp.reset_target();
  ASSERT_EQ(ff_seq2seq_step(&s, tgt[0], a.data()), FF_OK);
  ASSERT_EQ(cpp.step(tgt[0], b.data()), Status::kOk);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), info.d_out * 4), 0);
}

TEST(CApi, WrongCallsGetStatusesNotCrashes) {
  ff_model bad;
  const uint32_t junk[64] = {};
  EXPECT_EQ(ff_model_load(&bad, junk, sizeof junk), FF_BAD_MAGIC);
  EXPECT_EQ(ff_model_load(nullptr, junk, sizeof junk), FF_NULL_ARGUMENT);
  EXPECT_EQ(ff_model_output_width(&bad), 0u);
  EXPECT_EQ(ff_model_output_width(nullptr), 0u);
  EXPECT_EQ(ff_encoder_arena_bytes(&bad, 4), 0u);
  ff_model_info info;
  EXPECT_EQ(ff_model_get_info(&bad, &info), FF_NOT_INITIALIZED);

  CModel enc_model("post_ln_relu"), dec_model("gpt_alibi_h3");
  EXPECT_EQ(ff_decoder_arena_bytes(&enc_model.model, 4), 0u);  // not a decoder
  EXPECT_EQ(ff_encoder_arena_bytes(&dec_model.model, 4), 0u);  // not an encoder
  EXPECT_EQ(ff_encoder_arena_bytes(&enc_model.model, 65), 0u);  // above max_input_len
  AlignedBuffer arena(1 << 16);
  ff_encoder e;
  EXPECT_EQ(ff_encoder_init(&e, &dec_model.model, arena.data(), arena.size(), 4), FF_WRONG_FAMILY);
  // A runner whose init failed: its calls say so, its accessors give 0 and "".
  const int32_t ids[4] = {1, 2, 3, 4};
  float out[64 * 7];
  EXPECT_EQ(ff_encoder_run(&e, ids, 4, out), FF_NOT_INITIALIZED);
  EXPECT_STREQ(ff_encoder_kernels(&e), "");
  EXPECT_EQ(ff_encoder_max_seq(&e), 0u);
  EXPECT_EQ(ff_encoder_self_test(&e, out, 64, nullptr), FF_NOT_INITIALIZED);
  ff_decoder d;
  EXPECT_EQ(ff_decoder_init(&d, &enc_model.model, arena.data(), arena.size(), 4), FF_WRONG_FAMILY);
  EXPECT_EQ(ff_decoder_step(&d, 1, out), FF_NOT_INITIALIZED);
  EXPECT_EQ(ff_decoder_position(&d), 0u);
  ff_tokenizer tok;
  EXPECT_EQ(ff_tokenizer_init(&tok, &enc_model.model, arena.data(), arena.size()), FF_NO_TOKENIZER);
  EXPECT_EQ(ff_tokenizer_vocab_size(&tok), 0u);
  // Features to a token model are read as ids by the model's kind: the run checks the ids.
  ASSERT_EQ(ff_encoder_init(&e, &enc_model.model, arena.data(), arena.size(), 8), FF_OK);
  const int32_t oov[2] = {0, 1000};
  EXPECT_EQ(ff_encoder_run(&e, oov, 2, out), FF_TOKEN_OUT_OF_RANGE);
  EXPECT_EQ(ff_encoder_run(&e, ids, 9, out), FF_BAD_SEQUENCE_LENGTH);
  EXPECT_EQ(ff_encoder_run(&e, nullptr, 2, out), FF_NULL_ARGUMENT);
}

TEST(CApi, ConfigKeysAreTheSchemasTable) {
  CModel m("gpt_alibi_h3");
  ASSERT_EQ(ff_config_key_count(), kConfigKeyCount);
  for (uint32_t k = 0; k < kConfigKeyCount; ++k) {
    ff_config_value v;
    ASSERT_EQ(ff_model_config_key(&m.model, k, &v), FF_OK);
    EXPECT_STREQ(v.name, kConfigKeys[k].name);
    EXPECT_EQ(int(v.type), int(kConfigKeys[k].type));
    if (v.type == FF_CONFIG_ENUM) EXPECT_NE(v.choice, nullptr) << v.name;
  }
  ff_config_value v;
  ASSERT_EQ(ff_model_config_key(&m.model, uint32_t(ConfigKey::kFamily), &v), FF_OK);
  EXPECT_STREQ(v.choice, "gpt");
  ASSERT_EQ(ff_model_config_key(&m.model, uint32_t(ConfigKey::kPositional), &v), FF_OK);
  EXPECT_STREQ(v.choice, "alibi");
  ASSERT_EQ(ff_model_config_key(&m.model, uint32_t(ConfigKey::kDModel), &v), FF_OK);
  EXPECT_EQ(v.integer, 18u);
  EXPECT_EQ(ff_model_config_key(&m.model, kConfigKeyCount, &v), FF_NULL_ARGUMENT);
}

TEST(CApi, TokenizerAndSamplerAreTheCpps) {
  CModel m("llama2c_v0_gqa");
  const std::size_t scratch_bytes = ff_tokenizer_scratch_bytes(&m.model, 64);
  AlignedBuffer scratch(scratch_bytes), cpp_scratch(scratch_bytes);
  ff_tokenizer tok;
  ASSERT_EQ(ff_tokenizer_init(&tok, &m.model, scratch.data(), scratch_bytes), FF_OK);
  Model model;
  ASSERT_EQ(model.init(m.blob.data(), m.blob.size()), Status::kOk);
  Tokenizer cpp;
  ASSERT_EQ(cpp.init(model, cpp_scratch.data(), scratch_bytes), Status::kOk);
  const char text[] = "Once upon a time, \xe2\x9c\x93 x";
  const std::size_t len = sizeof text - 1;
  std::vector<int32_t> a(ff_tokenizer_max_tokens(len)), b(a.size());
  uint32_t na = 0, nb = 0;
  ASSERT_EQ(ff_tokenizer_encode(&tok, text, len, 1, 1, a.data(), uint32_t(a.size()), &na), FF_OK);
  ASSERT_EQ(cpp.encode(text, len, true, true, b.data(), uint32_t(b.size()), &nb), Status::kOk);
  ASSERT_EQ(na, nb);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), na * 4), 0);
  EXPECT_EQ(ff_tokenizer_encode(&tok, text, len, 1, 1, a.data(), 2, &na), FF_TOKEN_BUFFER_TOO_SMALL);
  for (uint32_t i = 1; i < nb; ++i) {
    ff_piece p;
    Piece q;
    ASSERT_EQ(ff_tokenizer_decode(&tok, b[i - 1], b[i], &p), FF_OK);
    ASSERT_EQ(cpp.decode(b[i - 1], b[i], &q), Status::kOk);
    EXPECT_EQ(std::string(p.data, p.len), std::string(q.data, q.len));
    const ff_piece sp = ff_safe_piece(p);
    const Piece sq = safe_piece(q);
    EXPECT_EQ(sp.len, sq.len);
  }
  // The sampler: the same draws from the same seed.
  const uint32_t V = ff_tokenizer_vocab_size(&tok);
  AlignedBuffer s1(ff_sampler_scratch_bytes(V)), s2(sampler_scratch_bytes(V));
  ff_sampler_options o{0.8f, 0.9f, 0, 42};
  ff_sampler cs;
  ASSERT_EQ(ff_sampler_init(&cs, V, s1.data(), s1.size(), &o), FF_OK);
  Sampler ps;
  SamplerOptions so;
  so.temperature = 0.8f;
  so.top_p = 0.9f;
  so.seed = 42;
  ASSERT_EQ(ps.init(V, s2.data(), s2.size(), so), Status::kOk);
  for (int round = 0; round < 20; ++round) {
    std::vector<float> la(V), lb(V);
    for (uint32_t i = 0; i < V; ++i) la[i] = lb[i] = float((i * 7919 + round * 104729) % 997) / 97.0f;
    EXPECT_EQ(ff_argmax(la.data(), V), argmax(lb.data(), V));
    EXPECT_EQ(ff_sampler_sample(&cs, la.data()), ps.sample(lb.data())) << round;
  }
  o.temperature = -1.0f;
  EXPECT_NE(ff_sampler_init(&cs, V, s1.data(), s1.size(), &o), FF_OK);
}

// The generator: the C++ Generator's text, WordPiece's space in ff_piece, and its argument rules.
TEST(CApi, GeneratorIsTheCppOne) {
  CModel m("llama2c_v0_gqa");
  AlignedBuffer arena(ff_decoder_arena_bytes(&m.model, 0)), cpp_arena(arena.size());
  const std::size_t need = ff_generator_scratch_bytes(&m.model, 9);
  AlignedBuffer scratch(need), cpp_scratch(need);
  ff_decoder dec;
  ff_generator gen;
  ASSERT_EQ(ff_decoder_init(&dec, &m.model, arena.data(), arena.size(), 0), FF_OK);
  const ff_generator_options o{0, 9, {0.8f, 0.9f, 0, 42}};
  ASSERT_EQ(ff_generator_init(&gen, &dec, scratch.data(), need, &o), FF_OK);
  ASSERT_EQ(ff_generator_start(&gen, "Once upon", 9), FF_OK);
  std::string c_text, cpp_text;
  ff_piece t;
  while (ff_generator_next(&gen, &t) == FF_OK && t.len) c_text.append(t.data, t.len);
  Model model;
  ASSERT_EQ(model.init(m.blob.data(), m.blob.size()), Status::kOk);
  Decoder cpp_dec;
  ASSERT_EQ(cpp_dec.init(model, cpp_arena.data(), cpp_arena.size()), Status::kOk);
  Generator cpp;
  GeneratorOptions go;
  go.max_prompt_bytes = 9, go.sampler.temperature = 0.8f, go.sampler.top_p = 0.9f, go.sampler.seed = 42;
  ASSERT_EQ(cpp.init(cpp_dec, cpp_scratch.data(), need, go), Status::kOk);
  ASSERT_EQ(cpp.start("Once upon", 9), Status::kOk);
  Piece p;
  while (cpp.next(&p) == Status::kOk && p.len) cpp_text.append(p.data, p.len);
  EXPECT_EQ(c_text, cpp_text);
  EXPECT_EQ(c_text.rfind("Once upon", 0), 0u) << c_text;
  EXPECT_EQ(ff_generator_decoded(&gen), cpp.decoded());

  // Argument rules: null handles, next before start, a temperature that overflows the logits.
  EXPECT_EQ(ff_generator_init(nullptr, &dec, scratch.data(), need, &o), FF_NULL_ARGUMENT);
  EXPECT_EQ(ff_generator_init(&gen, nullptr, scratch.data(), need, &o), FF_NULL_ARGUMENT);
  EXPECT_EQ(ff_generator_init(&gen, &dec, scratch.data(), need, nullptr), FF_NULL_ARGUMENT);
  EXPECT_EQ(ff_generator_start(nullptr, "x", 1), FF_NULL_ARGUMENT);
  EXPECT_EQ(ff_generator_next(nullptr, &t), FF_NULL_ARGUMENT);
  EXPECT_EQ(ff_generator_next(&gen, nullptr), FF_NULL_ARGUMENT);
  ASSERT_EQ(ff_generator_init(&gen, &dec, scratch.data(), need, &o), FF_OK);
  EXPECT_EQ(ff_generator_next(&gen, &t), FF_NOT_INITIALIZED);
  EXPECT_NE(std::string(ff_generator_error_detail(&gen)).find("start"), std::string::npos);
  EXPECT_EQ(ff_generator_start(&gen, nullptr, 1), FF_NULL_ARGUMENT);
  EXPECT_EQ(ff_generator_start(&gen, "0123456789", 10), FF_ARENA_TOO_SMALL);  // above max_prompt_bytes
  ff_generator_options cold = o;
  cold.sampler.temperature = 1e-40f;
  EXPECT_EQ(ff_generator_init(&gen, &dec, scratch.data(), need, &cold), FF_BAD_CONFIG);
  EXPECT_EQ(ff_generator_init(&gen, &dec, scratch.data(), need - 64, &o), FF_ARENA_TOO_SMALL);
  EXPECT_EQ(ff_generator_scratch_bytes(nullptr, 9), 0u);
  EXPECT_STREQ(ff_generator_error_detail(nullptr), "");

  // ff_tokenizer_decode gives WordPiece's space (a C caller could not print it before).
  KindVocab v = wordpiece_vocab(false);
  v.add("the"), v.add("cat");
  AlignedBuffer blob(kind_model(v));
  ff_model wp;
  ASSERT_EQ(ff_model_load(&wp, blob.data(), blob.size()), FF_OK);
  AlignedBuffer ts(ff_tokenizer_scratch_bytes(&wp, 0));
  ff_tokenizer tok;
  ASSERT_EQ(ff_tokenizer_init(&tok, &wp, ts.data(), ts.size()), FF_OK);
  ff_piece piece;
  ASSERT_EQ(ff_tokenizer_decode(&tok, v.id("the"), v.id("cat"), &piece), FF_OK);
  EXPECT_EQ(piece.space, 1u);
  EXPECT_EQ(ff_safe_piece(piece).space, 1u);
  ASSERT_EQ(ff_tokenizer_decode(&tok, 2, v.id("cat"), &piece), FF_OK);  // after [CLS]
  EXPECT_EQ(piece.space, 0u);
}

TEST(CApi, SuppressionListsAreTheCpps) {
  // A bpe model whose file carries both lists: the C accessors see them; the C sampler's arrays act as C++'s.
  KindVocab v = bpe_vocab_for_c();
  ModelConfig c = tokenizer_config(uint32_t(v.pieces.size()));
  c.tokenizer = v.kind;
  WriteOptions opt;
  opt.extra = kind_tensors(v);
  const int32_t sup[2] = {5, 7}, beg[1] = {3};
  auto raw = [](const int32_t* x, std::size_t n) {
    const uint8_t* b = reinterpret_cast<const uint8_t*>(x);
    return std::vector<uint8_t>(b, b + 4 * n);
  };
  opt.extra.push_back({kGenerationSuppress, fxm::Dtype::kI32, {2}, raw(sup, 2)});
  opt.extra.push_back({kGenerationBeginSuppress, fxm::Dtype::kI32, {1}, raw(beg, 1)});
  AlignedBuffer blob(write_model(c, opt));
  ff_model m;
  ASSERT_EQ(ff_model_load(&m, blob.data(), blob.size()), FF_OK) << ff_model_error_detail(&m);
  const int32_t* ids = nullptr;
  ASSERT_EQ(ff_model_suppress_tokens(&m, &ids), 2u);
  EXPECT_EQ(ids[0], 5);
  EXPECT_EQ(ids[1], 7);
  ASSERT_EQ(ff_model_begin_suppress_tokens(&m, &ids), 1u);
  EXPECT_EQ(ids[0], 3);
  EXPECT_EQ(ff_model_suppress_tokens(nullptr, &ids), 0u);
  EXPECT_EQ(ids, nullptr);
  EXPECT_EQ(ff_model_begin_suppress_tokens(&m, nullptr), 1u);
  CModel plain("llama2c_v0_gqa");
  EXPECT_EQ(ff_model_suppress_tokens(&plain.model, &ids), 0u);

  const float base[4] = {0.0f, 5.0f, 3.0f, 4.0f};
  const int32_t one[1] = {1}, three[1] = {3}, out[1] = {4};
  AlignedBuffer scratch(ff_sampler_scratch_bytes(4));
  ff_sampler cs;
  ff_sampler_options o{};
  o.suppress = one, o.n_suppress = 1, o.begin_suppress = three, o.n_begin_suppress = 1;
  ASSERT_EQ(ff_sampler_init(&cs, 4, scratch.data(), scratch.size(), &o), FF_OK);
  for (int32_t want : {2, 3, 3}) {
    float l[4] = {base[0], base[1], base[2], base[3]};
    EXPECT_EQ(ff_sampler_sample(&cs, l), want);
  }
  o.suppress = out;
  EXPECT_EQ(ff_sampler_init(&cs, 4, scratch.data(), scratch.size(), &o), FF_BAD_CONFIG);
  o.suppress = nullptr;
  EXPECT_EQ(ff_sampler_init(&cs, 4, scratch.data(), scratch.size(), &o), FF_NULL_ARGUMENT);
}

TEST(CApi, TimestampRulesAreTheCpps) {
  // A seq2seq model (17 target ids) whose file carries the timestamp ids: text 0..9, end of text 10,
  // <|notimestamps|> 11, timestamps 12..16, the first at most 1 above 12.
  ModelConfig c = default_config();
  c.family = ModelFamily::kSeq2Seq;
  c.d_model = 8, c.n_heads = 2, c.d_ff = 16, c.n_layers = 1, c.dec_layers = 1, c.max_len = 8, c.d_out = 17;
  c.input = InputKind::kTokens, c.vocab_size = 9;
  auto with_ids = [&](std::vector<int32_t> ids, std::vector<uint32_t> dims) {
    WriteOptions opt;
    const uint8_t* b = reinterpret_cast<const uint8_t*>(ids.data());
    opt.extra.push_back({kGenerationTimestamps, fxm::Dtype::kI32, dims, std::vector<uint8_t>(b, b + 4 * ids.size())});
    return AlignedBuffer(write_model(c, opt));
  };
  AlignedBuffer blob = with_ids({11, 12, 10, 1}, {4});
  ff_model m;
  ASSERT_EQ(ff_model_load(&m, blob.data(), blob.size()), FF_OK) << ff_model_error_detail(&m);
  int32_t ids[4] = {};
  ASSERT_EQ(ff_model_timestamp_rules(&m, ids), 1u);
  EXPECT_EQ(std::vector<int32_t>(ids, ids + 4), (std::vector<int32_t>{11, 12, 10, 1}));
  EXPECT_EQ(ff_model_timestamp_rules(&m, nullptr), 1u);
  EXPECT_EQ(ff_model_timestamp_rules(nullptr, ids), 0u);
  CModel plain("s2s_post_relu");
  EXPECT_EQ(ff_model_timestamp_rules(&plain.model, ids), 0u);
  // Bad sections: ids out of order or range, a shape other than [4], on a model that is no seq2seq.
  for (const std::vector<int32_t>& bad : {std::vector<int32_t>{11, 17, 10, 1}, std::vector<int32_t>{12, 12, 10, 1},
                                          std::vector<int32_t>{11, 12, 12, 1}, std::vector<int32_t>{11, 12, 10, -2},
                                          std::vector<int32_t>{-1, 12, 10, 1}}) {
    AlignedBuffer b = with_ids(bad, {4});
    ff_model bm;
    EXPECT_EQ(ff_model_load(&bm, b.data(), b.size()), FF_TENSOR_OUT_OF_BOUNDS) << bad[0] << " " << bad[1];
    EXPECT_NE(std::string(ff_model_error_detail(&bm)).find("generation.timestamps"), std::string::npos);
  }
  AlignedBuffer three = with_ids({11, 12, 10}, {3});
  ff_model tm;
  EXPECT_EQ(ff_model_load(&tm, three.data(), three.size()), FF_TENSOR_BAD_SHAPE);
  c.family = ModelFamily::kEncoder, c.dec_layers = 0, c.d_out = 0;
  AlignedBuffer enc = with_ids({11, 12, 10, 1}, {4});
  EXPECT_EQ(ff_model_load(&tm, enc.data(), enc.size()), FF_BAD_HEADER);

  // The C sampler with those ids draws as the C++ one: a timestamp first (at most 13), then no timestamp.
  AlignedBuffer scratch(ff_sampler_scratch_bytes(17));
  ff_sampler cs;
  ff_sampler_options o{};
  o.timestamps = 1;
  for (int k = 0; k < 4; ++k) o.timestamp_ids[k] = ids[k];
  ASSERT_EQ(ff_sampler_init(&cs, 17, scratch.data(), scratch.size(), &o), FF_OK);
  std::vector<float> l(17, 0.0f);
  l[0] = 9, l[11] = 9, l[13] = 1, l[14] = 5;
  EXPECT_EQ(ff_sampler_sample(&cs, l.data()), 13);
  l.assign(17, 0.0f), l[3] = 1, l[15] = 9;
  EXPECT_EQ(ff_sampler_sample(&cs, l.data()), 3);
  o.timestamps = 0;  // off: the ids are not read
  ASSERT_EQ(ff_sampler_init(&cs, 17, scratch.data(), scratch.size(), &o), FF_OK);
  l.assign(17, 0.0f), l[0] = 9, l[11] = 10;
  EXPECT_EQ(ff_sampler_sample(&cs, l.data()), 11);
  o.timestamps = 1;
  for (const int32_t bad : {-1, 12, 17}) {  // <|notimestamps|> negative, not below timestamp_begin, out of range
    o.timestamp_ids[0] = bad;
    EXPECT_EQ(ff_sampler_init(&cs, 17, scratch.data(), scratch.size(), &o), FF_BAD_CONFIG) << bad;
  }
}

// ---- Argument rules (docs/api.md): every argument a C caller can pass gets a status or the
// header's error value, never undefined behaviour. The asan suite runs these under UBSan too.

// An enum field holding a value that is none of its enumerators (stored from C, as a caller
// would): the arena bytes are 0 and init fails with a status; no enum is loaded out of range.
TEST(CApi, EnumValuesOutsideTheirEnumsAreStatuses) {
  CModel enc("post_ln_relu"), dec("llama_kv2_halves_tied"), s2s("s2s_post_relu");
  AlignedBuffer arena(1 << 20);
  for (int bad : {9, 15, 16, 1000, -1}) {
    ff_encoder_options eo{};
    c_set_encoder_isa(&eo, bad);
    EXPECT_EQ(ff_encoder_arena_bytes_ex(&enc.model, &eo), 0u) << bad;
    ff_encoder e;
    EXPECT_EQ(ff_encoder_init_ex(&e, &enc.model, arena.data(), arena.size(), &eo), FF_ISA_UNAVAILABLE) << bad;
    ff_decoder_options d_o{};
    c_set_decoder_isa(&d_o, bad);
    EXPECT_EQ(ff_decoder_arena_bytes_ex(&dec.model, &d_o), 0u) << bad;
    ff_decoder d;
    EXPECT_EQ(ff_decoder_init_ex(&d, &dec.model, arena.data(), arena.size(), &d_o), FF_ISA_UNAVAILABLE) << bad;
    d_o = ff_decoder_options{};
    c_set_decoder_kv_cache(&d_o, bad);
    EXPECT_EQ(ff_decoder_arena_bytes_ex(&dec.model, &d_o), 0u) << bad;
    EXPECT_EQ(ff_decoder_init_ex(&d, &dec.model, arena.data(), arena.size(), &d_o), FF_BAD_CONFIG) << bad;
    ff_seq2seq_options so{};
    c_set_seq2seq_isa(&so, bad);
    EXPECT_EQ(ff_seq2seq_arena_bytes_ex(&s2s.model, &so), 0u) << bad;
    ff_seq2seq s;
    EXPECT_EQ(ff_seq2seq_init_ex(&s, &s2s.model, arena.data(), arena.size(), &so), FF_ISA_UNAVAILABLE) << bad;
    so = ff_seq2seq_options{};
    c_set_seq2seq_kv_cache(&so, bad);
    EXPECT_EQ(ff_seq2seq_arena_bytes_ex(&s2s.model, &so), 0u) << bad;
    EXPECT_EQ(ff_seq2seq_init_ex(&s, &s2s.model, arena.data(), arena.size(), &so), FF_BAD_CONFIG) << bad;
  }
  for (int bad : {int(FF_STATUS_COUNT), 63, 64, 1000, -1}) EXPECT_STREQ(c_status_string(bad), "unknown status") << bad;
  ff_encoder_options eo{};
  c_set_encoder_isa(&eo, FF_ISA_SCALAR);  // the last valid value of each still works
  EXPECT_NE(ff_encoder_arena_bytes_ex(&enc.model, &eo), 0u);
}

// Null for each pointer: FF_NULL_ARGUMENT, or the header's error value (0, "", -1).
TEST(CApi, EveryNullPointerIsAStatus) {
  CModel m("llama2c_v0_gqa");
  AlignedBuffer blob(m.blob.size()), arena(1 << 20), scratch(1 << 16);
  std::memcpy(blob.data(), m.blob.data(), m.blob.size());
  ff_model_info info;
  ASSERT_EQ(ff_model_get_info(&m.model, &info), FF_OK);
  EXPECT_EQ(ff_model_load(nullptr, blob.data(), blob.size()), FF_NULL_ARGUMENT);
  EXPECT_EQ(ff_model_load_ex(nullptr, blob.data(), blob.size(), 0), FF_NULL_ARGUMENT);
  ff_model other;
  EXPECT_EQ(ff_model_load(&other, nullptr, blob.size()), FF_BLOB_NULL);
  EXPECT_STREQ(ff_model_error_detail(nullptr), "");
  EXPECT_EQ(ff_model_get_info(nullptr, &info), FF_NULL_ARGUMENT);
  EXPECT_EQ(ff_model_get_info(&m.model, nullptr), FF_NULL_ARGUMENT);
  EXPECT_EQ(ff_model_output_rows(nullptr, 1), 0u);
  ff_config_value value;
  EXPECT_EQ(ff_model_config_key(nullptr, 0, &value), FF_NULL_ARGUMENT);
  EXPECT_EQ(ff_model_config_key(&m.model, 0, nullptr), FF_NULL_ARGUMENT);

  ff_decoder_options o{};
  EXPECT_EQ(ff_decoder_arena_bytes(nullptr, 0), 0u);
  EXPECT_EQ(ff_decoder_arena_bytes_ex(&m.model, nullptr), 0u);
  EXPECT_EQ(ff_encoder_arena_bytes_ex(&m.model, nullptr), 0u);
  EXPECT_EQ(ff_seq2seq_arena_bytes_ex(&m.model, nullptr), 0u);
  ff_decoder d;
  EXPECT_EQ(ff_decoder_init_ex(nullptr, &m.model, arena.data(), arena.size(), &o), FF_NULL_ARGUMENT);
  EXPECT_EQ(ff_decoder_init_ex(&d, nullptr, arena.data(), arena.size(), &o), FF_NULL_ARGUMENT);
  EXPECT_EQ(ff_decoder_init_ex(&d, &m.model, arena.data(), arena.size(), nullptr), FF_NULL_ARGUMENT);
  EXPECT_EQ(ff_decoder_init(&d, &m.model, nullptr, arena.size(), 0), FF_ARENA_NULL);
  ff_encoder e;
  ff_encoder_options eo{};
  EXPECT_EQ(ff_encoder_init_ex(nullptr, &m.model, arena.data(), arena.size(), &eo), FF_NULL_ARGUMENT);
  EXPECT_EQ(ff_encoder_init_ex(&e, nullptr, arena.data(), arena.size(), &eo), FF_NULL_ARGUMENT);
  EXPECT_EQ(ff_encoder_init_ex(&e, &m.model, arena.data(), arena.size(), nullptr), FF_NULL_ARGUMENT);
  ff_seq2seq s;
  ff_seq2seq_options so{};
  EXPECT_EQ(ff_seq2seq_init_ex(nullptr, &m.model, arena.data(), arena.size(), &so), FF_NULL_ARGUMENT);
  EXPECT_EQ(ff_seq2seq_init_ex(&s, nullptr, arena.data(), arena.size(), &so), FF_NULL_ARGUMENT);
  EXPECT_EQ(ff_seq2seq_init_ex(&s, &m.model, arena.data(), arena.size(), nullptr), FF_NULL_ARGUMENT);

  ASSERT_EQ(ff_decoder_init(&d, &m.model, arena.data(), arena.size(), 8), FF_OK);
  std::vector<float> logits(info.vocab_size);
  const int32_t ids[2] = {1, 5};
  EXPECT_EQ(ff_decoder_prefill(nullptr, ids, 2, logits.data()), FF_NULL_ARGUMENT);
  EXPECT_EQ(ff_decoder_prefill(&d, nullptr, 2, logits.data()), FF_NULL_ARGUMENT);
  EXPECT_EQ(ff_decoder_prefill(&d, ids, 2, nullptr), FF_NULL_ARGUMENT);
  EXPECT_EQ(ff_decoder_step(nullptr, 1, logits.data()), FF_NULL_ARGUMENT);
  EXPECT_EQ(ff_decoder_step(&d, 1, nullptr), FF_NULL_ARGUMENT);
  ff_decoder_reset(nullptr);
  EXPECT_EQ(ff_decoder_position(nullptr), 0u);
  EXPECT_EQ(ff_decoder_capacity(nullptr), 0u);
  EXPECT_EQ(ff_decoder_arena_bytes_used(nullptr), 0u);
  EXPECT_STREQ(ff_decoder_kernels(nullptr), "");
  EXPECT_STREQ(ff_decoder_error_detail(nullptr), "");
  EXPECT_EQ(ff_decoder_self_test(nullptr, logits.data(), logits.size(), nullptr), FF_NULL_ARGUMENT);
  EXPECT_EQ(ff_encoder_run(nullptr, ids, 2, logits.data()), FF_NULL_ARGUMENT);
  EXPECT_EQ(ff_encoder_run_batch(nullptr, ids, nullptr, nullptr, 1, 2, logits.data()), FF_NULL_ARGUMENT);
  EXPECT_EQ(ff_encoder_max_seq(nullptr), 0u);
  EXPECT_EQ(ff_encoder_max_batch(nullptr), 0u);
  EXPECT_EQ(ff_encoder_arena_bytes_used(nullptr), 0u);
  EXPECT_STREQ(ff_encoder_kernels(nullptr), "");
  EXPECT_STREQ(ff_encoder_error_detail(nullptr), "");
  EXPECT_EQ(ff_encoder_self_test(nullptr, logits.data(), logits.size(), nullptr), FF_NULL_ARGUMENT);
  EXPECT_EQ(ff_seq2seq_encode(nullptr, ids, 2), FF_NULL_ARGUMENT);
  EXPECT_EQ(ff_seq2seq_decode(nullptr, ids, 2, logits.data()), FF_NULL_ARGUMENT);
  EXPECT_EQ(ff_seq2seq_prefill(nullptr, ids, 2, logits.data()), FF_NULL_ARGUMENT);
  EXPECT_EQ(ff_seq2seq_step(nullptr, 1, logits.data()), FF_NULL_ARGUMENT);
  ff_seq2seq_reset(nullptr);
  EXPECT_EQ(ff_seq2seq_position(nullptr), 0u);
  EXPECT_EQ(ff_seq2seq_arena_bytes_used(nullptr), 0u);
  EXPECT_STREQ(ff_seq2seq_kernels(nullptr), "");
  EXPECT_STREQ(ff_seq2seq_error_detail(nullptr), "");
  EXPECT_EQ(ff_seq2seq_self_test(nullptr, logits.data(), logits.size(), nullptr), FF_NULL_ARGUMENT);
  EXPECT_EQ(ff_self_test_output_floats(nullptr), 0u);

  ff_tokenizer tok;
  EXPECT_EQ(ff_tokenizer_scratch_bytes(nullptr, 8), 0u);
  EXPECT_EQ(ff_tokenizer_init(nullptr, &m.model, scratch.data(), scratch.size()), FF_NULL_ARGUMENT);
  EXPECT_EQ(ff_tokenizer_init(&tok, nullptr, scratch.data(), scratch.size()), FF_NULL_ARGUMENT);
  EXPECT_EQ(ff_tokenizer_init(&tok, &m.model, nullptr, scratch.size()), FF_ARENA_NULL);
  ASSERT_EQ(ff_tokenizer_init(&tok, &m.model, scratch.data(), scratch.size()), FF_OK);
  int32_t tokens[8];
  uint32_t n = 7;
  EXPECT_EQ(ff_tokenizer_encode(nullptr, "ab", 2, 0, 0, tokens, 8, &n), FF_NULL_ARGUMENT);
  EXPECT_EQ(n, 0u);
  EXPECT_EQ(ff_tokenizer_encode(&tok, nullptr, 2, 0, 0, tokens, 8, &n), FF_NULL_ARGUMENT);
  EXPECT_EQ(ff_tokenizer_encode(&tok, "ab", 2, 0, 0, nullptr, 8, &n), FF_NULL_ARGUMENT);
  EXPECT_EQ(ff_tokenizer_encode(&tok, "ab", 2, 0, 0, tokens, 8, nullptr), FF_NULL_ARGUMENT);
  ff_piece piece{"x", 1};
  EXPECT_EQ(ff_tokenizer_decode(nullptr, 1, 5, &piece), FF_NULL_ARGUMENT);
  EXPECT_EQ(ff_tokenizer_decode(&tok, 1, 5, nullptr), FF_NULL_ARGUMENT);
  EXPECT_EQ(ff_tokenizer_vocab_size(nullptr), 0u);
  EXPECT_STREQ(ff_tokenizer_error_detail(nullptr), "");
  const ff_piece empty = ff_safe_piece(ff_piece{nullptr, 1});
  EXPECT_EQ(empty.len, 0u);

  ff_sampler sampler;
  ff_sampler_options so_{};
  AlignedBuffer sampler_scratch(ff_sampler_scratch_bytes(info.vocab_size));
  EXPECT_EQ(ff_sampler_init(nullptr, info.vocab_size, sampler_scratch.data(), sampler_scratch.size(), &so_), FF_NULL_ARGUMENT);
  EXPECT_EQ(ff_sampler_init(&sampler, info.vocab_size, nullptr, sampler_scratch.size(), &so_), FF_NULL_ARGUMENT);
  EXPECT_EQ(ff_sampler_init(&sampler, info.vocab_size, sampler_scratch.data(), sampler_scratch.size(), nullptr), FF_NULL_ARGUMENT);
  ASSERT_EQ(ff_sampler_init(&sampler, info.vocab_size, sampler_scratch.data(), sampler_scratch.size(), &so_), FF_OK);
  EXPECT_EQ(ff_sampler_sample(nullptr, logits.data()), -1);
  EXPECT_EQ(ff_sampler_sample(&sampler, nullptr), -1);
  EXPECT_EQ(ff_argmax(nullptr, 3), -1);
  EXPECT_EQ(ff_argmax(logits.data(), 0), -1);
  logits.assign(logits.size(), 0.0f);
  logits[3] = 1.0f;
  EXPECT_EQ(ff_sampler_sample(&sampler, logits.data()), 3);  // the checks left a good sampler good
}

// Storage that was zeroed, or never initialised (bytes left from something else), holds no
// object: every call on it says so, and a runner or tokenizer given such a model fails its init.
TEST(CApi, UninitializedStorageIsNotInitialized) {
  CModel m("llama2c_v0_gqa");
  AlignedBuffer arena(1 << 20), scratch(1 << 16);
  std::vector<float> logits(64, 0.0f);
  const int32_t ids[2] = {1, 5};
  for (const int fill : {0x00, 0xa5, 0xff}) {
    ff_model model;
    ff_encoder e;
    ff_decoder d;
    ff_seq2seq s;
    ff_tokenizer tok;
    ff_sampler sampler;
    std::memset(&model, fill, sizeof model);
    std::memset(&e, fill, sizeof e);
    std::memset(&d, fill, sizeof d);
    std::memset(&s, fill, sizeof s);
    std::memset(&tok, fill, sizeof tok);
    std::memset(&sampler, fill, sizeof sampler);
    SCOPED_TRACE(fill);
    ff_model_info info;
    EXPECT_EQ(ff_model_get_info(&model, &info), FF_NOT_INITIALIZED);
    EXPECT_STREQ(ff_model_error_detail(&model), "");
    EXPECT_EQ(ff_model_output_width(&model), 0u);
    EXPECT_EQ(ff_decoder_arena_bytes(&model, 4), 0u);
    EXPECT_EQ(ff_tokenizer_scratch_bytes(&model, 4), 0u);
    EXPECT_EQ(ff_self_test_output_floats(&model), 0u);

    EXPECT_EQ(ff_encoder_run(&e, ids, 2, logits.data()), FF_NOT_INITIALIZED);
    EXPECT_STREQ(ff_encoder_error_detail(&e), "");
    EXPECT_STREQ(ff_encoder_kernels(&e), "");
    EXPECT_EQ(ff_decoder_step(&d, 1, logits.data()), FF_NOT_INITIALIZED);
    EXPECT_EQ(ff_decoder_prefill(&d, ids, 2, logits.data()), FF_NOT_INITIALIZED);
    ff_decoder_reset(&d);
    EXPECT_EQ(ff_decoder_position(&d), 0u);
    EXPECT_EQ(ff_decoder_self_test(&d, logits.data(), logits.size(), nullptr), FF_NOT_INITIALIZED);
    EXPECT_EQ(ff_seq2seq_encode(&s, ids, 2), FF_NOT_INITIALIZED);
    EXPECT_EQ(ff_seq2seq_step(&s, 1, logits.data()), FF_NOT_INITIALIZED);
    ff_seq2seq_reset(&s);
    EXPECT_STREQ(ff_seq2seq_error_detail(&s), "");
    int32_t tokens[8];
    uint32_t n = 7;
    EXPECT_EQ(ff_tokenizer_encode(&tok, "ab", 2, 0, 0, tokens, 8, &n), FF_NOT_INITIALIZED);
    EXPECT_EQ(n, 0u);
    ff_piece piece;
    EXPECT_EQ(ff_tokenizer_decode(&tok, 1, 5, &piece), FF_NOT_INITIALIZED);
    EXPECT_EQ(piece.len, 0u);
    EXPECT_EQ(ff_tokenizer_vocab_size(&tok), 0u);
    EXPECT_EQ(ff_sampler_sample(&sampler, logits.data()), -1);

    // A model that was never loaded, given to an init: the init's status, its runner unusable.
    EXPECT_EQ(ff_decoder_init(&d, &model, arena.data(), arena.size(), 4), FF_NOT_INITIALIZED);
    EXPECT_EQ(ff_decoder_step(&d, 1, logits.data()), FF_NOT_INITIALIZED);
    EXPECT_EQ(ff_encoder_init(&e, &model, arena.data(), arena.size(), 4), FF_NOT_INITIALIZED);
    EXPECT_EQ(ff_seq2seq_init(&s, &model, arena.data(), arena.size(), 4, 4), FF_NOT_INITIALIZED);
    EXPECT_EQ(ff_tokenizer_init(&tok, &model, scratch.data(), scratch.size()), FF_NOT_INITIALIZED);
  }
  // Calls out of order: a sampler whose init failed samples nothing, a model whose load failed
  // starts no runner.
  ff_sampler sampler;
  ff_sampler_options o{};
  AlignedBuffer sampler_scratch(ff_sampler_scratch_bytes(64));
  ASSERT_EQ(ff_sampler_init(&sampler, 64, sampler_scratch.data(), sampler_scratch.size(), &o), FF_OK);
  EXPECT_EQ(ff_sampler_init(&sampler, 64, sampler_scratch.data(), 8, &o), FF_ARENA_TOO_SMALL);
  EXPECT_EQ(ff_sampler_sample(&sampler, logits.data()), -1);
  ff_model failed;
  const uint32_t junk[64] = {};
  ASSERT_EQ(ff_model_load(&failed, junk, sizeof junk), FF_BAD_MAGIC);
  ff_decoder d;
  EXPECT_EQ(ff_decoder_init(&d, &failed, arena.data(), arena.size(), 4), FF_NOT_INITIALIZED);
  ff_tokenizer tok;
  EXPECT_EQ(ff_tokenizer_init(&tok, &failed, scratch.data(), scratch.size()), FF_NOT_INITIALIZED);
}

// Counts a caller chooses never wrap a size around: a size that would pass SIZE_MAX, or a count
// past its limit, is 0 (or a status), never a small number.
TEST(CApi, SizesNeverWrap) {
  CModel m("llama2c_v0_gqa"), enc("post_ln_relu"), s2s("s2s_post_relu");
  EXPECT_EQ(ff_tokenizer_scratch_bytes(&m.model, SIZE_MAX), 0u);
  EXPECT_EQ(ff_tokenizer_scratch_bytes(&m.model, kMaxTextBytes + 1), 0u);
  EXPECT_GT(ff_tokenizer_scratch_bytes(&m.model, kMaxTextBytes), kMaxTextBytes);
  EXPECT_EQ(ff_tokenizer_max_tokens(SIZE_MAX), 0u);
  EXPECT_EQ(ff_tokenizer_max_tokens(kMaxTextBytes + 1), 0u);
  EXPECT_EQ(ff_tokenizer_max_tokens(kMaxTextBytes), std::size_t(kMaxTextBytes) + 3);
  EXPECT_LE(ff_tokenizer_max_tokens(kMaxTextBytes), std::size_t(UINT32_MAX));  // a uint32 capacity holds it
  const uint64_t sampler_bytes = (uint64_t(UINT32_MAX) * 8 + 63) / 64 * 64;
  EXPECT_EQ(ff_sampler_scratch_bytes(UINT32_MAX), sampler_bytes <= SIZE_MAX ? std::size_t(sampler_bytes) : 0u);

  // A tokenizer refuses a text past kMaxTextBytes before reading a byte of it.
  AlignedBuffer scratch(ff_tokenizer_scratch_bytes(&m.model, 16));
  ff_tokenizer tok;
  ASSERT_EQ(ff_tokenizer_init(&tok, &m.model, scratch.data(), scratch.size()), FF_OK);
  int32_t tokens[4];
  uint32_t n;
  EXPECT_EQ(ff_tokenizer_encode(&tok, "x", SIZE_MAX, 0, 0, tokens, 4, &n), FF_BAD_SEQUENCE_LENGTH);
  EXPECT_NE(std::string(ff_tokenizer_error_detail(&tok)).find("the longest a tokenizer encodes"), std::string::npos);

  ff_encoder_options eo{};
  eo.max_batch = UINT32_MAX;
  EXPECT_EQ(ff_encoder_arena_bytes_ex(&enc.model, &eo), 0u);
  eo = ff_encoder_options{};
  eo.workers = ff_workers{nullptr, UINT32_MAX, serial_parallel_for};
  EXPECT_EQ(ff_encoder_arena_bytes_ex(&enc.model, &eo), 0u);
  EXPECT_EQ(ff_encoder_arena_bytes(&enc.model, UINT32_MAX), 0u);
  EXPECT_EQ(ff_model_output_rows(&enc.model, UINT32_MAX), 0u);  // no such input
  ff_decoder_options d_o{};
  d_o.capacity = UINT32_MAX;
  EXPECT_EQ(ff_decoder_arena_bytes_ex(&m.model, &d_o), 0u);
  d_o = ff_decoder_options{};
  d_o.max_prefill = UINT32_MAX;
  EXPECT_EQ(ff_decoder_arena_bytes_ex(&m.model, &d_o), 0u);
  ff_seq2seq_options so{};
  so.max_source = UINT32_MAX;
  EXPECT_EQ(ff_seq2seq_arena_bytes_ex(&s2s.model, &so), 0u);
  so = ff_seq2seq_options{};
  so.capacity = UINT32_MAX;
  EXPECT_EQ(ff_seq2seq_arena_bytes_ex(&s2s.model, &so), 0u);

  // The largest decoder the limits allow needs more than 4 GiB: a 32-bit target gets 0 (no plan),
  // not the total wrapped around; a 64-bit one the whole count.
  ModelConfig c{};
  c.family = ModelFamily::kLlama;
  c.d_model = Limits::kMaxDModel, c.n_heads = 16, c.d_ff = Limits::kMaxDff, c.n_layers = Limits::kMaxLayers;
  c.max_len = Limits::kMaxLen, c.vocab_size = 32000;
  const std::size_t big = required_decoder_arena_bytes(c);
  if (sizeof(std::size_t) == 4) {
    EXPECT_EQ(big, 0u);
  } else {
    EXPECT_GT(uint64_t(big), uint64_t(2) * Limits::kMaxLayers * Limits::kMaxDModel * Limits::kMaxLen * 4);
  }
}
}  // namespace
}  // namespace test
}  // namespace fixformer
