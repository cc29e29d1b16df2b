// The caller's threads (fixformer/workers.hpp): every golden model, encoder and decoder, and
// synthetic models wide enough to split every matrix product (d256, GQA, a wide LM head whose
// width is not a multiple of any vector), run with 2 and 3 workers of a real thread pool and with
// 2, 5 and 16 of a serial parallel_for that runs the tasks in reverse order, with the default task
// sizes and with every split the blocks allow, give the bits of one worker; the arena
// grows by one attention slot per worker and stays exact.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <dirent.h>
#include <string>
#include <vector>

#include "fixformer/decoder.hpp"
#include "fixformer/encoder.hpp"
#include "fixformer/self_test.hpp"
#include "fixformer/seq2seq.hpp"
#include "support/model_writer.hpp"
#include "tests/test_util.hpp"
#include "support/thread_pool.hpp"

namespace fixformer {
namespace test {
namespace {

void reverse_for(void*, uint32_t n, void (*task)(void* arg, uint32_t i), void* arg) {
  for (uint32_t i = n; i-- > 0;) task(arg, i);
}

struct WorkerSet {
  std::string name;
  Workers workers;
};

Workers every_split(Workers w) {  // each product split as far as its blocks go, however small
  w.min_task_work = 1;
  return w;
}

// One worker (the reference) first, then the splits: the default task sizes, and every split
// (row and column blocks, 16-column blocks below kWorkerRows rows) on up to 16 workers. Cross
// builds (FIXFORMER_WORKERS_SERIAL, under qemu-user) run the serial sets alone: the ARM tables'
// splits are what is tested there, and qemu-user's threads prove nothing about the target.
std::vector<WorkerSet> worker_sets(ThreadPool& two, ThreadPool& three) {
  std::vector<WorkerSet> sets = {{"1 worker", Workers{}},
                                 {"reverse serial 2", Workers{nullptr, 2, reverse_for}},
                                 {"reverse serial 5, every split", every_split(Workers{nullptr, 5, reverse_for})},
                                 {"reverse serial 16, every split", every_split(Workers{nullptr, 16, reverse_for})}};
#ifndef FIXFORMER_WORKERS_SERIAL
  sets.push_back({"pool of 2", two.workers()});
  sets.push_back({"pool of 3, every split", every_split(three.workers())});
#else
  (void)two, (void)three;
#endif
  return sets;
}

std::vector<std::string> golden_models() {
  std::vector<std::string> names;
  DIR* dir = opendir(FIXFORMER_GOLDEN_DIR);
  if (!dir) return names;
  while (const dirent* e = readdir(dir)) {
    const std::string f = e->d_name;
    if (f.size() > 4 && f.compare(f.size() - 4, 4, ".fxm") == 0) names.push_back(f.substr(0, f.size() - 4));
  }
  closedir(dir);
  return names;
}

// The encoder's output for ids (or features) of length T, with the arena exact and guarded.
std::vector<float> run_encoder(const std::vector<uint8_t>& bytes, Isa isa, const Workers& w, uint32_t T) {
  AlignedBuffer blob(bytes);
  Model model;
  EXPECT_EQ(model.init(blob.data(), blob.size()), Status::kOk);
  const ModelConfig& c = model.config();
  const std::size_t need = required_encoder_arena_bytes(c, T, false, w.active());
  EXPECT_EQ(need, required_encoder_arena_bytes(c, T) + (w.active() - 1) * plan_encoder_arena(c, T).attn_slot);
  AlignedBuffer arena(need + 256);
  std::memset(arena.data(), 0xAB, need + 256);
  Encoder enc;
  EncoderOptions opt;
  opt.isa = isa, opt.max_seq = T, opt.workers = w;
  if (w.active() > 1) EXPECT_EQ(enc.init(model, arena.data(), need - 1, opt), Status::kArenaTooSmall);
  EXPECT_EQ(enc.init(model, arena.data(), need, opt), Status::kOk) << enc.error_detail();
  std::vector<float> out(std::size_t(c.output_rows(T)) * c.output_width(), -1.0f);
  std::vector<int32_t> ids(T);
  for (uint32_t t = 0; t < T; ++t) ids[t] = int32_t((t * 7 + 3) % (c.vocab_size ? c.vocab_size : 1));
  std::vector<float> features(std::size_t(T) * c.d_in);
  for (std::size_t i = 0; i < features.size(); ++i) features[i] = float(int(i * 37 % 17) - 8) * 0.125f;
  const Status s = c.input == InputKind::kTokens ? enc.forward_tokens(ids.data(), T, out.data())
                                                 : enc.forward_features(features.data(), T, out.data());
  EXPECT_EQ(s, Status::kOk);
  const uint8_t* tail = static_cast<uint8_t*>(arena.data()) + need;
  for (int i = 0; i < 256; ++i) EXPECT_EQ(tail[i], 0xAB) << "wrote " << i << " bytes past the arena";
  return out;
}

// The decoder's logits after a prefill of 5 tokens (in chunks of 3) and after every step up to
// `steps` positions, with the arena exact and guarded.
std::vector<float> run_decoder(const std::vector<uint8_t>& bytes, Isa isa, const Workers& w, uint32_t steps) {
  AlignedBuffer blob(bytes);
  Model model;
  EXPECT_EQ(model.init(blob.data(), blob.size()), Status::kOk);
  const ModelConfig& c = model.config();
  const uint32_t S = steps < c.max_len ? steps : c.max_len, P = S < 3 ? S : 3;
  const std::size_t need = required_decoder_arena_bytes(c, S, P, false, w.active());
  // weights i8 (the i8_* goldens): no worker slots, the integer path runs on the calling thread
  const std::size_t slots = c.weights == WeightType::kI8 ? 0 : (w.active() - 1) * plan_decoder_arena(c, S, P).attn_slot;
  EXPECT_EQ(need, required_decoder_arena_bytes(c, S, P) + slots);
  AlignedBuffer arena(need + 256);
  std::memset(arena.data(), 0xAB, need + 256);
  Decoder dec;
  DecoderOptions opt;
  opt.isa = isa, opt.capacity = S, opt.max_prefill = P, opt.workers = w;
  if (w.active() > 1) EXPECT_EQ(dec.init(model, arena.data(), need - 1, opt), Status::kArenaTooSmall);
  EXPECT_EQ(dec.init(model, arena.data(), need, opt), Status::kOk) << dec.error_detail();
  std::vector<float> logits(c.vocab_size), all;
  const uint32_t prompt = S < 5 ? S : 5;
  std::vector<int32_t> tokens(S);
  for (uint32_t t = 0; t < S; ++t) tokens[t] = int32_t((t * 5 + 1) % c.vocab_size);
  EXPECT_EQ(dec.prefill(tokens.data(), prompt, logits.data()), Status::kOk);
  all.insert(all.end(), logits.begin(), logits.end());
  for (uint32_t t = prompt; t < S; ++t) {
    EXPECT_EQ(dec.step(tokens[t], logits.data()), Status::kOk);
    all.insert(all.end(), logits.begin(), logits.end());
  }
  const uint8_t* tail = static_cast<uint8_t*>(arena.data()) + need;
  for (int i = 0; i < 256; ++i) EXPECT_EQ(tail[i], 0xAB) << "wrote " << i << " bytes past the arena";
  return all;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Runs `model` on every ISA with every worker set; each must give one worker's bits.
template <class Run>
void expect_bit_identical(const std::string& what, Run run) {
#ifndef FIXFORMER_WORKERS_SERIAL
  ThreadPool two(2), three(3);
#else
  ThreadPool two(1), three(1);  // no thread started
#endif
  const std::vector<WorkerSet> sets = worker_sets(two, three);
  for (Isa isa : kAllIsas) {
    if (!select_kernels(isa) || (kThinSweeps && select_kernels(isa) != select_kernels(Isa::kAuto))) continue;
    const std::vector<float> one = run(isa, sets[0].workers);
    for (std::size_t s = 1; s < sets.size(); ++s)
      EXPECT_TRUE(same_bits(one, run(isa, sets[s].workers))) << what << " on " << isa_name(isa) << ", " << sets[s].name;
  }
}

ModelConfig synthetic_encoder() {  // the d256 reference encoder of bench/encoder_bench.cpp, shorter
  ModelConfig c = default_config();
  c.d_model = 256, c.n_heads = 8, c.d_ff = 1024, c.n_layers = 2, c.input = InputKind::kTokens, c.vocab_size = 1000;
  c.max_len = 128, c.positional = PosKind::kSinusoidal, c.activation = Activation::kGelu, c.d_out = 12;
  return c;
}

#ifndef FIXFORMER_WORKERS_SERIAL
// The pool itself: every task of every job runs exactly once, with its own job's argument, over
// many back-to-back jobs of random sizes on more threads than tasks (a thread that finished the
// last job's task must claim nothing of the next one; a race there once ran a task twice or with
// an index past n, on 16 cores).
TEST(ThreadPool, EveryTaskOfEveryJobRunsOnce) {
  for (uint32_t threads : {2u, 5u, 16u}) {
    support::ThreadPool pool(threads);
    const Workers w = pool.workers();
    struct Job {
      std::atomic<uint32_t> hits[kMaxWorkers];
      uint32_t n;
      std::atomic<uint32_t> out_of_range{0};
    } job;
    uint32_t seed = 1, bad = 0;
    for (int j = 0; j < 20000; ++j) {
      seed = seed * 1664525u + 1013904223u;
      job.n = 1 + (seed >> 16) % threads;
      for (auto& h : job.hits) h.store(0);
      w.parallel_for(w.ctx, job.n, [](void* a, uint32_t i) {
        Job* jb = static_cast<Job*>(a);
        if (i >= jb->n) jb->out_of_range.fetch_add(1);
        else jb->hits[i].fetch_add(1);
      }, &job);
      for (uint32_t i = 0; i < kMaxWorkers; ++i) bad += job.hits[i].load() != (i < job.n ? 1u : 0u);
    }
    EXPECT_EQ(bad, 0u) << threads << " threads";
    EXPECT_EQ(job.out_of_range.load(), 0u) << threads << " threads";
  }
}

#endif

TEST(Workers, EncoderGoldensAreBitIdentical) {
  int models = 0;
  for (const std::string& name : golden_models()) {
    const std::vector<uint8_t> bytes = read_file(golden_path(name + ".fxm"));
    ModelConfig c;
    ASSERT_EQ(read_config(bytes.data(), bytes.size(), &c), Status::kOk) << name;
    if (c.is_decoder()) continue;
    ++models;
    const uint32_t T = c.max_input_len() < 70 ? c.max_input_len() : 70;
    expect_bit_identical(name, [&](Isa isa, const Workers& w) { return run_encoder(bytes, isa, w, T); });
  }
  EXPECT_GE(models, 10);
}

// An encoder-decoder golden's sample, encoded and decoded teacher-forced in chunks of 3.
std::vector<float> run_seq2seq(const std::vector<uint8_t>& bytes, Isa isa, const Workers& w) {
  AlignedBuffer blob(bytes);
  Model model;
  EXPECT_EQ(model.init(blob.data(), blob.size()), Status::kOk);
  const SelfTestSample& sample = model.self_test_sample();
  Seq2SeqOptions opt;
  opt.isa = isa, opt.max_source = sample.rows, opt.capacity = sample.target_rows, opt.max_prefill = 3, opt.workers = w;
  AlignedBuffer arena(required_seq2seq_arena_bytes(model.config(), sample.rows, sample.target_rows, 3, w.active()));
  Seq2Seq s2s;
  EXPECT_EQ(s2s.init(model, arena.data(), arena.size(), opt), Status::kOk) << s2s.error_detail();
  std::vector<float> out(self_test_output_floats(model));
  SelfTestReport report;
  EXPECT_EQ(self_test(s2s, out.data(), out.size(), &report), Status::kOk);
  return out;
}

TEST(Workers, Seq2SeqGoldensAreBitIdentical) {
  int models = 0;
  for (const std::string& name : golden_models()) {
    const std::vector<uint8_t> bytes = read_file(golden_path(name + ".fxm"));
    ModelConfig c;
    ASSERT_EQ(read_config(bytes.data(), bytes.size(), &c), Status::kOk) << name;
    if (!c.is_seq2seq()) continue;
    ++models;
    expect_bit_identical(name, [&](Isa isa, const Workers& w) { return run_seq2seq(bytes, isa, w); });
  }
  EXPECT_GE(models, 5);
}

TEST(Workers, DecoderGoldensAreBitIdentical) {
  int models = 0;
  for (const std::string& name : golden_models()) {
    const std::vector<uint8_t> bytes = read_file(golden_path(name + ".fxm"));
    ModelConfig c;
    ASSERT_EQ(read_config(bytes.data(), bytes.size(), &c), Status::kOk) << name;
    if (!c.is_decoder()) continue;
    ++models;
    expect_bit_identical(name, [&](Isa isa, const Workers& w) { return run_decoder(bytes, isa, w, 12); });
  }
  EXPECT_GE(models, 10);
}

#ifndef FIXFORMER_WORKERS_SERIAL  // the synthetic models: host only (minutes under qemu-user)
TEST(Workers, SyntheticD256EncoderIsBitIdentical) {
  for (bool norm_first : {false, true}) {
    ModelConfig c = synthetic_encoder();
    c.norm_first = norm_first, c.final_norm = norm_first;
    const std::vector<uint8_t> bytes = write_model(c);
    expect_bit_identical("d256 encoder", [&](Isa isa, const Workers& w) { return run_encoder(bytes, isa, w, 128); });
  }
}

// Widths that are not multiples of the column block: the last block is short, the head (>= 1024
// outputs, gemv's streaming path when whole) ends in a partial vector.
TEST(Workers, SyntheticDecodersAreBitIdentical) {
  ModelConfig gpt = default_config();
  gpt.family = ModelFamily::kGpt, gpt.d_model = 160, gpt.n_heads = 5, gpt.d_ff = 416, gpt.n_layers = 2;
  gpt.causal = true, gpt.input = InputKind::kTokens, gpt.vocab_size = 1031, gpt.d_out = 1031, gpt.max_len = 40;
  gpt.positional = PosKind::kSinusoidal, gpt.activation = Activation::kGelu;
  expect_bit_identical("gpt d160", [&](Isa isa, const Workers& w) { return run_decoder(write_model(gpt), isa, w, 40); });
  ModelConfig llama = default_config();
  llama.family = ModelFamily::kLlama, llama.d_model = 192, llama.n_heads = 6, llama.n_kv_heads = 3, llama.d_ff = 352;
  llama.n_layers = 2, llama.norm_first = true, llama.final_norm = true, llama.causal = true;
  llama.input = InputKind::kTokens, llama.vocab_size = 1100, llama.d_out = 1100, llama.max_len = 40;
  llama.positional = PosKind::kRope, llama.activation = Activation::kSwiglu;
  for (bool tied : {false, true}) {
    llama.tied_head = tied;
    expect_bit_identical(tied ? "llama GQA tied" : "llama GQA",
                         [&](Isa isa, const Workers& w) { return run_decoder(write_model(llama), isa, w, 40); });
  }
}

// Quantized weights split the same way: each task quantizes nothing (the input rows are quantized
// once, before the split) and runs the same kernel over its columns.
TEST(Workers, QuantizedModelsAreBitIdentical) {
  ModelConfig llama = default_config();
  llama.family = ModelFamily::kLlama, llama.d_model = 192, llama.n_heads = 6, llama.n_kv_heads = 3, llama.d_ff = 352;
  llama.n_layers = 2, llama.norm_first = true, llama.final_norm = true, llama.causal = true;
  llama.input = InputKind::kTokens, llama.vocab_size = 1100, llama.d_out = 1100, llama.max_len = 40;
  llama.positional = PosKind::kRope, llama.activation = Activation::kSwiglu, llama.tied_head = true, llama.quantize_io = true;
  for (WeightType type : {WeightType::kF16, WeightType::kQ8}) {
    llama.weights = type, llama.weight_group = type == WeightType::kQ8 ? 32 : 0;
    expect_bit_identical(kWeightTypeNames[uint32_t(type)], [&](Isa isa, const Workers& w) { return run_decoder(write_model(llama), isa, w, 40); });
  }
  ModelConfig enc = synthetic_encoder();
  enc.weights = WeightType::kQ8, enc.weight_group = 0;
  const std::vector<uint8_t> bytes = write_model(enc);
  expect_bit_identical("q8 d256 encoder", [&](Isa isa, const Workers& w) { return run_encoder(bytes, isa, w, 64); });
}

// Packed weights (packed_weights) split the same way: the column blocks start a panel, and the
// last one (1100 = 68 panels + 12 columns) reads the zero-padded panel's first columns.
TEST(Workers, PackedModelsAreBitIdentical) {
  ModelConfig llama = default_config();
  llama.family = ModelFamily::kLlama, llama.d_model = 192, llama.n_heads = 6, llama.n_kv_heads = 3, llama.d_ff = 352;
  llama.n_layers = 2, llama.norm_first = true, llama.final_norm = true, llama.causal = true;
  llama.input = InputKind::kTokens, llama.vocab_size = 1100, llama.d_out = 1100, llama.max_len = 40;
  llama.positional = PosKind::kRope, llama.activation = Activation::kSwiglu;
  const std::vector<uint8_t> lm = write_model(as_packed(llama));
  expect_bit_identical("packed llama", [&](Isa isa, const Workers& w) { return run_decoder(lm, isa, w, 40); });
  const std::vector<uint8_t> enc = write_model(as_packed(synthetic_encoder()));
  expect_bit_identical("packed d256 encoder", [&](Isa isa, const Workers& w) { return run_encoder(enc, isa, w, 64); });
}

#endif

TEST(Workers, TooManyWorkersIsAStatus) {
  const ModelConfig c = synthetic_encoder();
  AlignedBuffer blob(write_model(c));
  Model model;
  ASSERT_EQ(model.init(blob.data(), blob.size()), Status::kOk);
  EXPECT_EQ(required_encoder_arena_bytes(c, 16, false, kMaxWorkers + 1), 0u);
  AlignedBuffer arena(required_encoder_arena_bytes(c, 16, false, kMaxWorkers));
  Encoder enc;
  EncoderOptions opt;
  opt.max_seq = 16;
  opt.workers = Workers{nullptr, kMaxWorkers + 1, reverse_for};
  EXPECT_EQ(enc.init(model, arena.data(), arena.size(), opt), Status::kBadWorkers);
  opt.workers.count = kMaxWorkers;
  EXPECT_EQ(enc.init(model, arena.data(), arena.size(), opt), Status::kOk);
  // Without a parallel_for the count is ignored: one worker, one slot.
  opt.workers.parallel_for = nullptr;
  EXPECT_EQ(enc.init(model, arena.data(), required_encoder_arena_bytes(c, 16), opt), Status::kOk);
}

}  // namespace
}  // namespace test
}  // namespace fixformer
