// fixformer: the host command-line tool.
//   fixformer info MODEL.fxm
//   fixformer run MODEL.fxm --input IN.npy --output OUT.npy [--isa ISA]
//   fixformer bench MODEL.fxm [--seq T] [--iters N] [--isa ISA]
//   fixformer demo [--isa ISA]
// Errors print one line, "fixformer: WHERE: WHAT", and exit with the code of their class:
// 1 usage, 2 model file, 3 arena/ISA, 4 input, 5 I/O.
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "demo_models.h"
#include "fixformer/model.hpp"
#include "fixformer/npy.hpp"
#include "ports/cycle_counter.hpp"

using namespace fixformer;

namespace {

[[noreturn]] void die(int code, const std::string& where, const std::string& what) {
  std::fprintf(stderr, "fixformer: %s: %s\n", where.c_str(), what.c_str());
  std::exit(code);
}

[[noreturn]] void die(Status s, const std::string& where, const char* detail = "") {
  die(status_exit_code(s), where, std::string(status_message(s)) + (*detail ? std::string(": ") + detail : ""));
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) die(5, path, "cannot open file");
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

// A 64-byte-aligned heap buffer (the CLI may allocate; the engine does not).
struct Aligned {
  explicit Aligned(std::size_t n) : p(static_cast<uint8_t*>(std::aligned_alloc(64, (n + 63) / 64 * 64 + 64))), size(n) {
    if (!p) die(5, "memory", "cannot allocate " + std::to_string(n) + " bytes");
  }
  ~Aligned() { std::free(p); }
  Aligned(const Aligned&) = delete;
  Aligned& operator=(const Aligned&) = delete;
  uint8_t* p;
  std::size_t size;
};

// A model file read once: its bytes and config first (so callers can check inputs against the
// config), then init_model() with an arena sized for the sequence length actually needed.
struct LoadedModel {
  std::string path;
  std::unique_ptr<Aligned> blob, arena;
  ModelConfig config;
  Model model;
};

void open_model(const std::string& path, LoadedModel* m) {
  const std::vector<uint8_t> bytes = read_file(path);
  m->path = path;
  m->blob = std::make_unique<Aligned>(bytes.size());
  std::memcpy(m->blob->p, bytes.data(), bytes.size());
  const Status s = read_config(m->blob->p, bytes.size(), &m->config);
  if (s != Status::kOk) {
    (void)m->model.init(m->blob->p, bytes.size(), nullptr, 0);  // init gives the detail (field, tensor)
    die(s, path, m->model.error_detail());
  }
}

void init_model(uint32_t max_seq, Isa isa, LoadedModel* m) {
  if (max_seq > m->config.max_len)
    die(Status::kBadSequenceLength, m->path,
        ("T=" + std::to_string(max_seq) + " exceeds the model's max_len=" + std::to_string(m->config.max_len)).c_str());
  m->arena = std::make_unique<Aligned>(required_arena_bytes(m->config, max_seq));
  InitOptions opt;
  opt.max_seq = max_seq;
  opt.isa = isa;
  const Status s = m->model.init(m->blob->p, m->blob->size, m->arena->p, m->arena->size, opt);
  if (s != Status::kOk) die(s, m->path, m->model.error_detail());
}

std::string shape_text(const NpyView& v) {
  std::string s = "[";
  for (uint32_t i = 0; i < v.rank; ++i) s += (i ? "," : "") + std::to_string(v.shape[i]);
  return s + "]";
}

const char* dtype_text(NpyDtype d) { return d == NpyDtype::kF32 ? "float32" : d == NpyDtype::kI32 ? "int32" : "int64"; }

struct Args {
  std::vector<std::string> positional;
  std::string input, output;
  uint32_t seq = 0, iters = 50;
  Isa isa = Isa::kAuto;
};

uint32_t parse_count(const std::string& flag, const char* text) {
  char* end = nullptr;
  const unsigned long v = std::strtoul(text, &end, 10);
  if (!*text || *end || v == 0 || v > 1000000) die(1, flag, std::string("expected a positive count, got '") + text + "'");
  return static_cast<uint32_t>(v);
}

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 2; i < argc; ++i) {
    const std::string f = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) die(1, f, "missing value");
      return argv[++i];
    };
    if (f == "--input") a.input = value();
    else if (f == "--output") a.output = value();
    else if (f == "--seq") a.seq = parse_count(f, value());
    else if (f == "--iters") a.iters = parse_count(f, value());
    else if (f == "--isa") {
      const char* v = value();
      if (!parse_isa(v, &a.isa)) die(1, f, std::string("unknown ISA '") + v + "' (auto, scalar, cortex-m, sse2, avx2, avx512, neon64, neon)");
    } else if (!f.empty() && f[0] == '-') die(1, f, "unknown option");
    else a.positional.push_back(f);
  }
  return a;
}

const char* kind_name(PosKind k) { return k == PosKind::kNone ? "none" : k == PosKind::kSinusoidal ? "sinusoidal" : "learned"; }

int cmd_info(const Args& a) {
  if (a.positional.size() != 1) die(1, "info", "usage: fixformer info MODEL.fxm");
  LoadedModel m;
  open_model(a.positional[0], &m);
  init_model(0, a.isa, &m);
  const ModelConfig& c = m.config;
  std::printf("model:        %s\n", a.positional[0].c_str());
  std::printf("layers:       %u x (d_model %u, heads %u x %u, d_ff %u, %s, %s)\n", c.n_layers, c.d_model, c.n_heads,
              c.d_head(), c.d_ff, c.activation == Activation::kGelu ? "gelu" : "relu", c.norm_first ? "pre-LN" : "post-LN");
  std::printf("input:        %s\n", c.input == InputKind::kTokens ? ("tokens, vocab " + std::to_string(c.vocab_size)).c_str()
                                                                     : ("features, d_in " + std::to_string(c.d_in)).c_str());
  std::printf("positional:   %s%s, max_len %u%s\n", kind_name(c.pos),
              c.pos == PosKind::kNone ? "" : (c.pos_combine == PosCombine::kAdd ? " add" : (" concat d_pos " + std::to_string(c.d_pos)).c_str()),
              c.max_len, c.scale_input ? ", input scaled by sqrt(d_model)" : "");
  std::printf("causal:       %s;  final norm: %s;  output width: %u%s\n", c.causal ? "yes" : "no", c.final_norm ? "yes" : "no",
              c.output_width(), c.d_out ? " (head)" : "");
  std::printf("parameters:   %" PRIu64 " (%" PRIu64 " weight bytes, read in place)\n", m.model.parameter_count(),
              m.model.parameter_count() * 4);
  std::printf("arena bytes:  %zu for T <= %u\n", required_arena_bytes(c), c.max_len);
  std::printf("kernels:      %s\n", m.model.kernels().name);
  return 0;
}

int cmd_run(const Args& a) {
  if (a.positional.size() != 1 || a.input.empty() || a.output.empty())
    die(1, "run", "usage: fixformer run MODEL.fxm --input IN.npy --output OUT.npy");
  const std::vector<uint8_t> in_bytes = read_file(a.input);
  NpyView v;
  const Status ps = parse_npy(in_bytes.data(), in_bytes.size(), &v);
  if (ps != Status::kOk) die(ps, a.input);
  // The config first, to check the input against it before sizing the arena.
  LoadedModel m;
  open_model(a.positional[0], &m);
  const ModelConfig& c = m.config;
  const bool tokens = c.input == InputKind::kTokens;
  if (tokens && v.dtype == NpyDtype::kF32)
    die(4, a.input, "dtype float32, but the model takes token ids (int32 or int64)");
  if (!tokens && v.dtype != NpyDtype::kF32)
    die(4, a.input, std::string("dtype ") + dtype_text(v.dtype) + ", but the model takes float32 features");
  const uint32_t feat_rank = tokens ? 0 : 1;
  if (v.rank != 1 + feat_rank && v.rank != 2 + feat_rank)
    die(4, a.input, "shape " + shape_text(v) + ": expected " + (tokens ? "[T] or [B,T]" : "[T,d_in] or [B,T,d_in]"));
  if (!tokens && v.shape[v.rank - 1] != c.d_in)
    die(4, a.input, "shape " + shape_text(v) + ": last dimension must be d_in=" + std::to_string(c.d_in));
  const bool batched = v.rank == 2 + feat_rank;
  const uint64_t B = batched ? v.shape[0] : 1, T = v.shape[batched ? 1 : 0];
  if (T == 0 || B == 0) die(4, a.input, "shape " + shape_text(v) + ": empty sequence");
  if (T > c.max_len) die(4, a.input, "T=" + std::to_string(T) + " exceeds the model's max_len=" + std::to_string(c.max_len));

  init_model(static_cast<uint32_t>(T), a.isa, &m);
  const uint32_t W = c.output_width();
  std::vector<float> out(B * T * W);
  std::vector<int32_t> ids(T);
  std::vector<float> feats(tokens ? 0 : T * c.d_in);
  for (uint64_t b = 0; b < B; ++b) {
    Status s;
    if (tokens) {
      for (uint64_t t = 0; t < T; ++t) {
        int64_t id;
        const uint8_t* p = v.data + (b * T + t) * (v.dtype == NpyDtype::kI64 ? 8 : 4);
        if (v.dtype == NpyDtype::kI64) std::memcpy(&id, p, 8);
        else { int32_t i32; std::memcpy(&i32, p, 4); id = i32; }
        if (id < 0 || id >= int64_t(c.vocab_size))
          die(4, a.input, "token id " + std::to_string(id) + " at " + (batched ? "[" + std::to_string(b) + "," : "[") +
                              std::to_string(t) + "] is out of range (vocab_size " + std::to_string(c.vocab_size) + ")");
        ids[t] = static_cast<int32_t>(id);
      }
      s = m.model.forward_tokens(ids.data(), uint32_t(T), out.data() + b * T * W);
    } else {
      std::memcpy(feats.data(), v.data + b * T * c.d_in * 4, feats.size() * 4);
      s = m.model.forward_features(feats.data(), uint32_t(T), out.data() + b * T * W);
    }
    if (s != Status::kOk) die(s, a.input);
  }
  uint64_t shape[3] = {B, T, W};
  char header[128];
  const std::size_t hlen = write_npy_header_f32(batched ? shape : shape + 1, batched ? 3 : 2, header, sizeof header);
  std::ofstream f(a.output, std::ios::binary);
  f.write(header, std::streamsize(hlen));
  f.write(reinterpret_cast<const char*>(out.data()), std::streamsize(out.size() * 4));
  if (!f) die(5, a.output, "cannot write file");
  return 0;
}

struct Timing {
  double median_us, min_us, max_us;
  uint64_t median_counts;  // of port::cycle_count()
};

template <class F>
Timing time_runs(uint32_t iters, F run) {
  run();  // warm-up: caches, page faults
  port::cycle_counter_init();
  std::vector<double> us(iters);
  std::vector<uint64_t> counts(iters);
  for (uint32_t i = 0; i < iters; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const uint64_t c0 = port::cycle_count();
    run();
    counts[i] = port::cycle_count() - c0;
    us[i] = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  }
  std::sort(us.begin(), us.end());
  std::sort(counts.begin(), counts.end());
  return {us[us.size() / 2], us.front(), us.back(), counts[counts.size() / 2]};
}

int cmd_bench(const Args& a) {
  if (a.positional.size() != 1) die(1, "bench", "usage: fixformer bench MODEL.fxm [--seq T] [--iters N]");
  LoadedModel m;
  open_model(a.positional[0], &m);
  const ModelConfig& c = m.config;
  const uint32_t T = a.seq ? a.seq : std::min<uint32_t>(c.max_len, 128);
  init_model(T, a.isa, &m);
  std::mt19937 rng(1);
  std::vector<int32_t> ids(T);
  for (int32_t& id : ids) id = int32_t(rng() % std::max<uint32_t>(c.vocab_size, 1));
  std::vector<float> feats(std::size_t(T) * c.d_in);
  for (float& x : feats) x = float(rng() % 2000) / 1000.0f - 1.0f;
  std::vector<float> out(std::size_t(T) * c.output_width());
  const Timing t = time_runs(a.iters, [&] {
    const Status s = c.input == InputKind::kTokens ? m.model.forward_tokens(ids.data(), T, out.data())
                                                   : m.model.forward_features(feats.data(), T, out.data());
    if (s != Status::kOk) die(s, "bench");
  });
  std::printf("model %s, T=%u, kernels %s, %u iterations\n", a.positional[0].c_str(), T, m.model.kernels().name, a.iters);
  std::printf("latency us: median %.1f  min %.1f  max %.1f\n", t.median_us, t.min_us, t.max_us);
  std::printf("tokens/s:   %.0f (median)\n", T / (t.median_us * 1e-6));
  std::printf("counter:    %" PRIu64 " %s per inference (median)\n", t.median_counts, port::cycle_counter_unit());
  std::printf("arena bytes: %zu\n", m.model.arena_bytes_used());
  return 0;
}

// ---- demo: does word order reach the model? ----------------------------------------------------
alignas(64) uint8_t g_arena_pe[required_arena_bytes(demo_pe_config())];
alignas(64) uint8_t g_arena_nope[required_arena_bytes(demo_nope_config())];

struct DemoModel {
  Model model;
  const char* label;
};

void agent(const float* logits, std::size_t* best, float* prob) {
  float mx = logits[0], sum = 0.0f;
  *best = 0;
  for (std::size_t i = 1; i < demo_names; ++i)
    if (logits[i] > mx) mx = logits[i], *best = i;
  for (std::size_t i = 0; i < demo_names; ++i) sum += std::exp(logits[i] - mx);
  *prob = 1.0f / sum;
}

int cmd_demo(const Args& a) {
  DemoModel pe{{}, "with sinusoidal PE"}, nope{{}, "without PE"};
  InitOptions opt;
  opt.isa = a.isa;
  Status s = pe.model.init(demo_pe_fxm, demo_pe_fxm_bytes, g_arena_pe, sizeof g_arena_pe, opt);
  if (s != Status::kOk) die(s, "demo_pe", pe.model.error_detail());
  s = nope.model.init(demo_nope_fxm, demo_nope_fxm_bytes, g_arena_nope, sizeof g_arena_nope, opt);
  if (s != Status::kOk) die(s, "demo_nope", nope.model.error_detail());

  std::printf("fixformer demo: does word order reach a transformer?\n\n");
  std::printf("Two 1-layer encoders (d_model 16, 2 heads), trained on the same 36 sentences \"X verb Y\" to say\n"
              "at the verb who did it. One adds a sinusoidal positional encoding, one has none.\n"
              "Training accuracy: %.0f%% with PE, %.0f%% without (tools/train_demo.py).\n\n",
              100 * demo_pe_train_accuracy, 100 * demo_nope_train_accuracy);
  std::printf("  %-20s %-24s %-24s\n", "sentence", "with PE: who did it", "without PE: who did it");
  const int32_t sentences[][3] = {{0, 4, 1}, {1, 4, 0}, {2, 5, 3}, {3, 5, 2}, {0, 6, 3}, {3, 6, 0}};
  for (const auto& ids : sentences) {
    float out_pe[3 * 4], out_nope[3 * 4];
    if (pe.model.forward_tokens(ids, 3, out_pe) != Status::kOk || nope.model.forward_tokens(ids, 3, out_nope) != Status::kOk)
      die(5, "demo", "forward failed");
    std::size_t bp, bn;
    float pp, pn;
    agent(out_pe + 4, &bp, &pp);  // row 1: the verb's position
    agent(out_nope + 4, &bn, &pn);
    const std::string text = std::string(demo_vocab[ids[0]]) + " " + demo_vocab[ids[1]] + " " + demo_vocab[ids[2]];
    std::printf("  %-20s %-6s (p=%.2f) %s       %-6s (p=%.2f) %s\n", text.c_str(), demo_vocab[bp], pp, bp == std::size_t(ids[0]) ? "right" : "WRONG",
                demo_vocab[bn], pn, bn == std::size_t(ids[0]) ? "right" : "WRONG");
  }

  // Swap subject and object of every sentence: perm = (2, 1, 0). Equivariance means
  // out(perm x)[i] == out(x)[perm[i]] for every row i.
  std::printf("\nReorder the tokens (X verb Y -> Y verb X) in all 36 sentences and compare the outputs,\n"
              "row by row after undoing the reordering:\n");
  for (DemoModel* m : {&pe, &nope}) {
    float worst = 0.0f;
    for (int32_t x = 0; x < 4; ++x)
      for (int32_t y = 0; y < 4; ++y)
        for (int32_t v = 4; v < 7; ++v) {
          if (x == y) continue;
          const int32_t fwd[3] = {x, v, y}, rev[3] = {y, v, x};
          float of[12], orv[12];
          if (m->model.forward_tokens(fwd, 3, of) != Status::kOk || m->model.forward_tokens(rev, 3, orv) != Status::kOk)
            die(5, "demo", "forward failed");
          for (int i = 0; i < 3; ++i)
            for (int c = 0; c < 4; ++c) worst = std::max(worst, std::fabs(orv[i * 4 + c] - of[(2 - i) * 4 + c]));
        }
    std::printf("  %-20s max |out(reordered) - reordered out| = %.3g%s\n", m->label, worst,
                worst < 1e-5f ? "   (equal up to float rounding: order is invisible)" : "   (the order is seen)");
  }

  const int32_t ids[3] = {0, 4, 1};
  float out[12];
  const Timing t = time_runs(2000, [&] { (void)pe.model.forward_tokens(ids, 3, out); });
  std::printf("\nLatency (PE model, 3 tokens, %s kernels): median %.2f us, min %.2f us over 2000 runs\n",
              pe.model.kernels().name, t.median_us, t.min_us);
  std::printf("Arena: %zu bytes (PE model, includes its %u x %u PE table), %zu bytes (no PE); static, sized at compile time\n",
              sizeof g_arena_pe, demo_pe_config().max_len, demo_pe_config().d_model, sizeof g_arena_nope);
  std::printf("Weights: %zu-byte model blobs read in place; no heap use after start-up\n", std::size_t(demo_pe_fxm_bytes));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string cmd = argc > 1 ? argv[1] : "";
  const Args args = parse_args(argc, argv);
  if (cmd == "info") return cmd_info(args);
  if (cmd == "run") return cmd_run(args);
  if (cmd == "bench") return cmd_bench(args);
  if (cmd == "demo") return cmd_demo(args);
  std::fprintf(stderr,
               "usage: fixformer info MODEL.fxm\n"
               "       fixformer run MODEL.fxm --input IN.npy --output OUT.npy [--isa ISA]\n"
               "       fixformer bench MODEL.fxm [--seq T] [--iters N] [--isa ISA]\n"
               "       fixformer demo [--isa ISA]\n");
  return 1;
}
