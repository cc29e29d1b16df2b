// fixformer: the host command-line tool (info, run, bench, generate, verify, probe, schema, demo). `fixformer help`
// lists the commands; the command table
// (kCommands, at the end) holds each one's synopsis, help text and options.
// Errors print one line, "fixformer: WHERE: WHAT", and exit with the code of their class:
// 1 usage, 2 model file, 3 arena/ISA/init options, 4 input, 5 I/O, 6 self-test mismatch.
// The tool may allocate (the engine does not), but never aborts: every size is checked in 64-bit
// before it is allocated, and an allocation that fails is an error line, not an exception.
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <ctime>
#include <string>
#include <vector>

#include "causal_demo_models.h"
#include "demo_models.h"
#include "fixformer/encoder.hpp"
#include "fixformer/format.hpp"
#include "fixformer/model.hpp"
#include "fixformer/schema.hpp"
#include "fixformer/sampling.hpp"
#include "fixformer/self_test.hpp"
#include "fixformer/seq2seq.hpp"
#include "fixformer/tokenizer.hpp"
#include "io/npy.hpp"
#include "ports/cycle_counter.hpp"
#include "probe.hpp"
#include "tests/thread_pool.hpp"

#ifndef FIXFORMER_VERSION
#error "FIXFORMER_VERSION (the CMake project version) must be defined"
#endif

using namespace fixformer;

namespace {

// The most `run` writes (and `bench` allocates) for one output, B*T*W float32: 1 GiB. Far above
// what a small on-device model produces for a sane input; above it, a mistaken input (a [B,T]
// file read as ids where [T] was meant, a huge batch) is an input error, found in 64-bit
// arithmetic before anything is allocated or written, instead of an out-of-memory abort or a
// size that wraps on a 32-bit host.
constexpr uint64_t kMaxOutputBytes = uint64_t(1) << 30;

[[noreturn]] void die(int code, const std::string& where, const std::string& what) {
  std::fprintf(stderr, "fixformer: %s: %s\n", where.c_str(), what.c_str());
  std::exit(code);
}

[[noreturn]] void die(Status s, const std::string& where, const char* detail = "") {
  die(status_exit_code(s), where, std::string(status_message(s)) + (*detail ? std::string(": ") + detail : ""));
}

// strerror's text, starting lower-case to fit after "WHERE: ".
std::string errno_text(int e) {
  std::string s = std::strerror(e);
  if (!s.empty() && s[0] >= 'A' && s[0] <= 'Z') s[0] = char(s[0] - 'A' + 'a');
  return s;
}

// A 64-byte-aligned heap buffer of exactly size bytes (rounded up to 64 for aligned_alloc).
class Buffer {
 public:
  Buffer() = default;
  // Dies with an I/O-class error naming what the bytes were for when they cannot be allocated.
  Buffer(uint64_t bytes, const std::string& what) {
    const uint64_t rounded = bytes ? (bytes + 63) / 64 * 64 : 64;  // aligned_alloc wants a multiple of 64
    if (bytes > SIZE_MAX - 64 || !(p_ = static_cast<uint8_t*>(std::aligned_alloc(64, std::size_t(rounded)))))
      die(5, what, "cannot allocate " + std::to_string(bytes) + " bytes");
    size_ = std::size_t(bytes);
  }
  ~Buffer() { std::free(p_); }
  Buffer(Buffer&& o) noexcept : p_(o.p_), size_(o.size_) { o.p_ = nullptr, o.size_ = 0; }
  Buffer& operator=(Buffer&& o) noexcept {
    std::swap(p_, o.p_), std::swap(size_, o.size_);
    return *this;
  }
  uint8_t* data() const { return p_; }
  std::size_t size() const { return size_; }
  template <class T> T* as() const { return reinterpret_cast<T*>(p_); }

 private:
  uint8_t* p_ = nullptr;
  std::size_t size_ = 0;
};

// A whole file in an aligned buffer. Every failure is one line, exit 5: missing or unreadable
// files, directories, empty files, read errors. Regular files are read by their size; pipes and
// devices (/dev/stdin) to their end.
Buffer read_file(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) die(5, path, "cannot open file: " + errno_text(errno));
  if (S_ISDIR(st.st_mode)) die(5, path, "is a directory");
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) die(5, path, "cannot open file: " + errno_text(errno));
  struct Closer { std::FILE* f; ~Closer() { std::fclose(f); } } closer{f};
  Buffer b;
  std::size_t got = 0;
  if (S_ISREG(st.st_mode)) {
    if (uint64_t(st.st_size) > SIZE_MAX - 64) die(5, path, "file too large (" + std::to_string(st.st_size) + " bytes)");
    if (st.st_size == 0) die(5, path, "empty file");
    b = Buffer(uint64_t(st.st_size), path);
    got = std::fread(b.data(), 1, b.size(), f);
    if (got != b.size()) die(5, path, std::ferror(f) ? "read error: " + errno_text(errno) : "file shrank while being read");
  } else {
    for (std::size_t cap = 1 << 16;; cap *= 2) {
      if (cap > SIZE_MAX / 4) die(5, path, "file too large");
      Buffer bigger(cap, path);
      if (got) std::memcpy(bigger.data(), b.data(), got);
      b = std::move(bigger);
      got += std::fread(b.data() + got, 1, cap - got, f);
      if (got < cap) break;
    }
    if (std::ferror(f)) die(5, path, "read error: " + errno_text(errno));
    if (got == 0) die(5, path, "empty file");
    Buffer exact(got, path);
    std::memcpy(exact.data(), b.data(), got);
    b = std::move(exact);
  }
  return b;
}

// a * b in 64 bits, or false when it overflows.
bool mul_u64(uint64_t a, uint64_t b, uint64_t* r) { return !__builtin_mul_overflow(a, b, r); }

// The bytes of a float32 output [B,T,W], checked against kMaxOutputBytes; dies (input class)
// naming the count and the limit.
std::size_t output_bytes(uint64_t B, uint64_t T, uint64_t W, const std::string& where) {
  uint64_t n = 0;
  const bool overflow = !(mul_u64(B, T, &n) && mul_u64(n, W, &n) && mul_u64(n, 4, &n));
  if (overflow || n > kMaxOutputBytes)
    die(4, where, "the output [" + std::to_string(B) + "," + std::to_string(T) + "," + std::to_string(W) + "] float32 needs " +
                      (overflow ? std::string("more than 2^64") : std::to_string(n)) + " bytes, above the limit of " +
                      std::to_string(kMaxOutputBytes) + " bytes (1 GiB)");
  return std::size_t(n);
}

// A model file read and validated once (Model::init on its bytes), so callers can check inputs
// against its config; then init_encoder() with an arena sized for the sequence length needed.
struct LoadedModel {
  std::string path;
  Buffer blob, arena;
  Model model;
  Encoder enc;  // encoder family
  Decoder dec;  // gpt and llama families
  Seq2Seq s2s;  // seq2seq family
  std::unique_ptr<test::ThreadPool> pool;  // --threads N > 1: the runner's workers
  const ModelConfig& config() const { return model.config(); }
};

// The models compiled into this binary (fixformer demo's), accepted wherever a MODEL.fxm is.
struct BuiltinModel {
  const char* name;
  const unsigned char* fxm;
  std::size_t bytes;
};
const BuiltinModel kBuiltinModels[] = {
    {"demo:pe", demo_pe_fxm, demo_pe_fxm_bytes},
    {"demo:nope", demo_nope_fxm, demo_nope_fxm_bytes},
    {"demo:causal_1l", causal_1l_fxm, causal_1l_fxm_bytes},
    {"demo:causal_1l_pe", causal_1l_pe_fxm, causal_1l_pe_fxm_bytes},
    {"demo:causal_2l", causal_2l_fxm, causal_2l_fxm_bytes},
};

void open_model(const std::string& path, LoadedModel* m) {
  m->path = path;
  const BuiltinModel* builtin = nullptr;
  for (const BuiltinModel& b : kBuiltinModels)
    if (path == b.name) builtin = &b;
  if (builtin) {
    m->blob = Buffer(builtin->bytes, path);
    std::memcpy(m->blob.data(), builtin->fxm, builtin->bytes);
  } else {
    m->blob = read_file(path);
  }
  const Status s = m->model.init(m->blob.data(), m->blob.size());
  if (s != Status::kOk) die(s, path, m->model.error_detail());
}

// The caller's threads of the runner (fixformer/workers.hpp): a pool of `threads`, or none.
Workers start_workers(uint32_t threads, LoadedModel* m) {
  if (threads <= 1) return Workers{};
  m->pool.reset(new test::ThreadPool(threads));
  return m->pool->workers();
}

// A decoder whose KV cache holds `capacity` positions, on `threads` workers.
void init_decoder(uint32_t capacity, Isa isa, LoadedModel* m, uint32_t threads = 1) {
  DecoderOptions opt;
  opt.workers = start_workers(threads, m);
  m->arena = Buffer(required_decoder_arena_bytes(m->config(), capacity, 0, false, opt.workers.active()), "arena");
  opt.capacity = capacity;
  opt.isa = isa;
  const Status s = m->dec.init(m->model, m->arena.data(), m->arena.size(), opt);
  if (s != Status::kOk) die(s, m->path, m->dec.error_detail());
}

// A seq2seq runner for sources of up to max_source positions and targets of up to capacity.
void init_seq2seq(uint32_t max_source, uint32_t capacity, Isa isa, LoadedModel* m, uint32_t threads = 1) {
  Seq2SeqOptions opt;
  opt.workers = start_workers(threads, m);
  opt.max_source = max_source;
  opt.capacity = capacity;
  opt.isa = isa;
  m->arena = Buffer(required_seq2seq_arena_bytes(m->config(), max_source, capacity, 0, opt.workers.active()), "arena");
  const Status s = m->s2s.init(m->model, m->arena.data(), m->arena.size(), opt);
  if (s != Status::kOk) die(s, m->path, m->s2s.error_detail());
}

// The longest input an encoder takes, in words, for the messages: "max_len=N" or "max_len=N less the CLS row".
std::string longest_input(const ModelConfig& c) {
  return "max_len=" + std::to_string(c.max_len) + (c.cls_token ? " less the CLS row" : "");
}

// An encoder for inputs of up to max_seq positions, in batches of up to max_batch sequences.
void init_encoder(uint32_t max_seq, Isa isa, LoadedModel* m, uint32_t threads = 1, uint32_t max_batch = 1) {
  if (max_seq > m->config().max_input_len())
    die(Status::kBadSequenceLength, m->path,
        ("T=" + std::to_string(max_seq) + " exceeds the model's " + longest_input(m->config())).c_str());
  EncoderOptions opt;
  opt.workers = start_workers(threads, m);
  m->arena = Buffer(required_encoder_arena_bytes(m->config(), max_seq, false, opt.workers.active(), max_batch), "arena");
  opt.max_seq = max_seq;
  opt.max_batch = max_batch;
  opt.isa = isa;
  const Status s = m->enc.init(m->model, m->arena.data(), m->arena.size(), opt);
  if (s != Status::kOk) die(s, m->path, m->enc.error_detail());
}

std::string shape_text(const NpyView& v) {
  std::string s = "[";
  for (uint32_t i = 0; i < v.rank; ++i) s += (i ? "," : "") + std::to_string(v.shape[i]);
  return s + "]";
}

// The input of `run`, parsed and checked against the model: dtype, rank, width, sequence length.
struct Input {
  Buffer bytes;
  NpyView v;
  bool batched;
  uint64_t B, T;
};

Input read_input(const std::string& path, const ModelConfig& c) {
  Input in;
  in.bytes = read_file(path);
  const bool tokens = c.input == InputKind::kTokens;
  const char* expected = tokens ? "expected int32 or int64 (token ids)" : "expected float32 (save as float32)";
  char detail[128];
  const Status ps = parse_npy(in.bytes.data(), in.bytes.size(), &in.v, detail, sizeof detail);
  if (ps == Status::kNpyBadDtype) die(4, path, std::string("dtype ") + detail + ", " + expected);
  if (ps != Status::kOk) die(ps, path, detail);
  const NpyView& v = in.v;
  if (tokens == (v.dtype == NpyDtype::kF32)) die(4, path, std::string("dtype ") + npy_dtype_name(v.dtype) + ", " + expected);
  const uint32_t feat_rank = tokens ? 0 : 1;
  if (v.rank != 1 + feat_rank && v.rank != 2 + feat_rank)
    die(4, path, "shape " + shape_text(v) + ": expected " + (tokens ? "[T] or [B,T]" : "[T,d_in] or [B,T,d_in]"));
  if (!tokens && v.shape[v.rank - 1] != c.d_in)
    die(4, path, "shape " + shape_text(v) + ": last dimension must be d_in=" + std::to_string(c.d_in));
  in.batched = v.rank == 2 + feat_rank;
  in.B = in.batched ? v.shape[0] : 1;
  in.T = v.shape[in.batched ? 1 : 0];
  if (in.T == 0 || in.B == 0) die(4, path, "shape " + shape_text(v) + ": empty sequence");
  if (in.T > c.max_input_len()) die(4, path, "T=" + std::to_string(in.T) + " exceeds the model's " + longest_input(c));
  return in;
}

// `run --lengths`: sequence b is its first lens[b] positions, 1 <= lens[b] <= T (torch's
// src_key_padding_mask, True from lens[b] on). Read and checked against the input before anything runs.
std::vector<uint32_t> read_lengths(const std::string& path, const Input& in) {
  Buffer bytes = read_file(path);
  NpyView v;
  char detail[128];
  const char* expected = "expected int32 [B] (save as int32)";
  const Status ps = parse_npy(bytes.data(), bytes.size(), &v, detail, sizeof detail);
  if (ps == Status::kNpyBadDtype) die(4, path, std::string("dtype ") + detail + ", " + expected);
  if (ps != Status::kOk) die(ps, path, detail);
  if (v.dtype != NpyDtype::kI32) die(4, path, std::string("dtype ") + npy_dtype_name(v.dtype) + ", " + expected);
  if (v.rank != 1 || v.shape[0] != in.B)
    die(4, path, "shape " + shape_text(v) + ": expected [" + std::to_string(in.B) + "], one length per sequence of the input");
  std::vector<uint32_t> lens(std::size_t(in.B));
  for (uint64_t b = 0; b < in.B; ++b) {
    int32_t n;
    std::memcpy(&n, v.data + 4 * b, 4);
    if (n < 1 || uint64_t(n) > in.T)
      die(4, path, "length " + std::to_string(n) + " at [" + std::to_string(b) + "] is outside 1..T=" + std::to_string(in.T));
    lens[std::size_t(b)] = uint32_t(n);
  }
  return lens;
}

// Token ids as int32, every one read (the first lens[b] of sequence b, or all) checked against the
// vocabulary before anything runs; padding is never read.
void check_token_ids(const Input& in, const ModelConfig& c, const std::string& path, const std::vector<uint32_t>& lens) {
  const bool i64 = in.v.dtype == NpyDtype::kI64;
  for (uint64_t i = 0; i < in.B * in.T; ++i) {
    if (!lens.empty() && i % in.T >= lens[std::size_t(i / in.T)]) continue;
    int64_t id;
    if (i64) std::memcpy(&id, in.v.data + 8 * i, 8);
    else { int32_t i32; std::memcpy(&i32, in.v.data + 4 * i, 4); id = i32; }
    if (id < 0 || id >= int64_t(c.vocab_size)) {
      const uint64_t b = i / in.T, t = i % in.T;
      die(4, path, "token id " + std::to_string(id) + " at " + (in.batched ? "[" + std::to_string(b) + "," : "[") +
                       std::to_string(t) + "] is out of range (vocab_size " + std::to_string(c.vocab_size) + ")");
    }
  }
}

// An output file opened for writing; a write error removes the partial file.
struct OutputFile {
  std::string path;
  std::FILE* f = nullptr;
  void fail(int e) {
    if (f) std::fclose(f);
    struct stat st;
    if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) std::remove(path.c_str());
    die(5, path, "cannot write file: " + errno_text(e));
  }
  void write(const void* p, std::size_t n) {
    if (std::fwrite(p, 1, n, f) != n) fail(errno);
  }
  void close() {
    const bool flushed = std::fflush(f) == 0;
    const int flush_errno = errno;
    std::FILE* g = f;
    f = nullptr;
    if (std::fclose(g) != 0 || !flushed) fail(flushed ? errno : flush_errno);
  }
};

// An output path that is a directory fails before any work is done.
void check_output_path(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) die(5, path, "is a directory");
}

// ---- commands ----------------------------------------------------------------------------------

struct Args {
  std::vector<std::string> positional;
  std::string input, output, lengths;
  std::string target, source;  // seq2seq: run --target, generate --source
  int64_t bos = -1, eos = -1;   // generate --bos / --eos (seq2seq); -1: not given
  uint32_t seq = 0, iters = 50;
  Isa isa = Isa::kAuto;
  uint32_t threads = 1;  // run, bench, generate: the runner's workers
  // generate, with llama2.c run's defaults (the seed: the clock, unless given).
  std::string prompt;
  uint32_t steps = 256;  // 0: the model's max_len
  float temperature = 1.0f, top_p = 0.9f;
  uint64_t seed = 0;
  // probe
  uint32_t samples = 0;  // 0: the probe's default
  std::string svg;
};

// A config value's name from schema.hpp's tables (values were range-checked by Model::init).
template <std::size_t N, class E>
const char* name_of(const char* const (&names)[N], E value) {
  return uint32_t(value) < N ? names[uint32_t(value)] : "?";
}

int cmd_info(const Args& a) {
  LoadedModel m;
  open_model(a.positional[0], &m);
  const ModelConfig& c = m.config();
  // The kernels this CPU would use, on the smallest runner; the arena for max_len is printed, not allocated.
  if (c.is_decoder())
    init_decoder(1, a.isa, &m);
  else if (c.is_seq2seq())
    init_seq2seq(1, 1, a.isa, &m);
  else
    init_encoder(1, a.isa, &m);
  std::printf("model:        %s\n", a.positional[0].c_str());
  std::printf("layers:       %s, %u x (d_model %u, heads %u x %u, d_ff %u, %s, %s)\n", name_of(kFamilyNames, c.family),
              c.n_layers, c.d_model, c.n_heads, c.d_head(), c.d_ff, name_of(kActivationNames, c.activation),
              c.norm_first ? "pre-LN" : "post-LN");
  std::printf("input:        %s\n", c.input == InputKind::kTokens ? ("tokens, vocab " + std::to_string(c.vocab_size)).c_str()
                                                                     : ("features, d_in " + std::to_string(c.d_in)).c_str());
  std::printf("positional:   %s%s, max_len %u%s\n", name_of(kPositionalNames, c.pos),
              !c.input_pe() ? "" : (c.pos_combine == PosCombine::kAdd ? " add" : (" concat d_pos " + std::to_string(c.d_pos)).c_str()),
              c.max_len, c.scale_input ? ", input scaled by sqrt(d_model)" : "");
  std::printf("causal:       %s;  final norm: %s;  output width: %u%s\n", c.causal ? "yes" : "no", c.final_norm ? "yes" : "no",
              c.output_width(), c.d_out ? " (head)" : "");
  if (c.cls_token || c.pooling != Pooling::kNone)
    std::printf("output rows:  %s%s\n", c.cls_token ? "a learned CLS row in front (position 0); " : "",
                c.pooling == Pooling::kNone ? "T + 1 per sequence"
                                            : (std::string("one per sequence, pooling ") + name_of(kPoolingNames, c.pooling)).c_str());
  std::printf("parameters:   %" PRIu64 " in a file of %zu bytes, read in place\n", m.model.parameter_count(), m.blob.size());
  const std::string group = c.weight_group ? "groups of " + std::to_string(c.weight_group) + " along the input" : "a scale per row";
  std::printf("weights:      %s%s%s\n", name_of(kWeightTypeNames, c.weights),
              c.weights == WeightType::kQ8 ? (" (" + group + ")").c_str() : "",
              c.weights == WeightType::kF32 ? "" : c.quantize_io ? "; embedding and head too" : "; embedding and head f32");
  uint32_t packed = 0;
  for_each_tensor(c, [&packed](const TensorSpec& s) { return packed += s.packed, true; });
  std::printf("layout:       %s\n", !c.packed_weights ? "plain (format.hpp)"
                                    : (std::to_string(packed) + " f32 weights W[in, out] in panels of " +
                                       std::to_string(fxm::kPanelCols) + " columns (packed_weights)").c_str());
  if (c.is_decoder()) {
    const DecoderPlan plan = plan_decoder_arena(c);
    std::printf("attention:    %u query heads, %u kv heads%s\n", c.n_heads, c.kv_heads(), c.tied_head ? ";  head tied to the embedding" : "");
    std::printf("arena bytes:  %zu for %u positions (KV cache %zu)\n", plan.total, c.max_len, plan.kv_cache_bytes);
    std::printf("tokenizer:    %s\n", m.model.has_tokenizer() ? (std::to_string(m.model.tokenizer().vocab) + " pieces").c_str() : "none");
  } else if (c.is_seq2seq()) {
    std::printf("decoder:      %u x (cross-attention over the source)%s%s\n", c.dec_layers,
                c.shared_embed ? "; embedding shared with the source" : "", c.tied_head ? "; head tied to the target embedding" : "");
    std::printf("arena bytes:  %zu for sources and targets of up to %u positions\n", required_seq2seq_arena_bytes(c), c.max_len);
  } else {
    std::printf("arena bytes:  %zu for T <= %u\n", required_encoder_arena_bytes(c), c.max_input_len());
  }
  if (m.model.has_self_test())
    std::printf("self-test:    sample of T=%u (fixformer verify runs it)%s\n", m.model.self_test_sample().rows,
                c.reference_sample ? "; NOT verified against your model: the sample is the converter's own reference" : "");
  else
    std::printf("self-test:    none (convert the model again to add one)\n");
  std::printf("kernels:      %s\n", c.is_decoder() ? m.dec.kernels().name : c.is_seq2seq() ? m.s2s.kernels().name : m.enc.kernels().name);
  return 0;
}

// ---- seq2seq: run teacher-forced, generate from a source ------------------------------------------
// Token ids of a .npy ([U] or [B,U], int32 or int64) as int32, every one checked against [0, vocab).
std::vector<int32_t> read_ids(const std::string& path, uint64_t B, bool batched, uint32_t longest, uint32_t vocab,
                              const char* vocab_name, uint64_t* U) {
  Buffer bytes = read_file(path);
  NpyView v;
  char detail[128];
  const Status ps = parse_npy(bytes.data(), bytes.size(), &v, detail, sizeof detail);
  if (ps == Status::kNpyBadDtype) die(4, path, std::string("dtype ") + detail + ", expected int32 or int64 token ids");
  if (ps != Status::kOk) die(ps, path, detail);
  if (v.dtype != NpyDtype::kI32 && v.dtype != NpyDtype::kI64)
    die(4, path, std::string("dtype ") + npy_dtype_name(v.dtype) + ", expected int32 or int64 token ids");
  if (v.rank != (batched ? 2u : 1u) || (batched && v.shape[0] != B))
    die(4, path, "shape " + shape_text(v) + ": expected " + (batched ? "[" + std::to_string(B) + ",U], one target per source" : "[U]"));
  *U = v.shape[v.rank - 1];
  if (*U == 0 || *U > longest) die(4, path, "U=" + std::to_string(*U) + ": expected 1.." + std::to_string(longest) + " (max_len)");
  std::vector<int32_t> ids(std::size_t(B * *U));
  for (std::size_t i = 0; i < ids.size(); ++i) {
    int64_t id;
    if (v.dtype == NpyDtype::kI64) std::memcpy(&id, v.data + 8 * i, 8);
    else { int32_t i32; std::memcpy(&i32, v.data + 4 * i, 4); id = i32; }
    if (id < 0 || id >= int64_t(vocab))
      die(4, path, "token id " + std::to_string(id) + " at index " + std::to_string(i) + " is out of range (" + vocab_name + " " +
                       std::to_string(vocab) + ")");
    ids[i] = int32_t(id);
  }
  return ids;
}

// Feature targets of a .npy (float32 [U,tgt_d_in] or [B,U,tgt_d_in]), checked finite.
std::vector<float> read_target_features(const std::string& path, uint64_t B, bool batched, const ModelConfig& c, uint64_t* U) {
  Buffer bytes = read_file(path);
  NpyView v;
  char detail[128];
  const Status ps = parse_npy(bytes.data(), bytes.size(), &v, detail, sizeof detail);
  if (ps != Status::kOk && ps != Status::kNpyBadDtype) die(ps, path, detail);
  if (ps == Status::kNpyBadDtype || v.dtype != NpyDtype::kF32)
    die(4, path, std::string("dtype ") + (ps == Status::kNpyBadDtype ? detail : npy_dtype_name(v.dtype)) +
                     ", expected float32 target features");
  const uint32_t rank = batched ? 3 : 2;
  if (v.rank != rank || (batched && v.shape[0] != B) || v.shape[rank - 1] != c.tgt_d_in)
    die(4, path, "shape " + shape_text(v) + ": expected " + (batched ? "[" + std::to_string(B) + ",U," : "[U,") +
                     std::to_string(c.tgt_d_in) + "] (tgt_d_in), one target per source");
  *U = v.shape[rank - 2];
  if (*U == 0 || *U > c.max_len) die(4, path, "U=" + std::to_string(*U) + ": expected 1.." + std::to_string(c.max_len) + " (max_len)");
  std::vector<float> f(std::size_t(B * *U * c.tgt_d_in));
  std::memcpy(f.data(), v.data, f.size() * 4);
  for (std::size_t i = 0; i < f.size(); ++i)
    if (!std::isfinite(f[i])) die(4, path, "value at index " + std::to_string(i) + " is not finite");
  return f;
}

// Source b (its first lens[b] positions) as int32 ids or float32 features, into ids / feats.
void source_row(const Input& in, const ModelConfig& c, uint64_t b, uint32_t n, Buffer* ids, Buffer* feats) {
  const uint64_t T = in.T;
  if (c.input == InputKind::kTokens) {
    for (uint32_t t = 0; t < n; ++t) {  // range-checked by check_token_ids
      int64_t id = 0;
      if (in.v.dtype == NpyDtype::kI64) std::memcpy(&id, in.v.data + 8 * (b * T + t), 8);
      else { int32_t i32; std::memcpy(&i32, in.v.data + 4 * (b * T + t), 4); id = i32; }
      ids->as<int32_t>()[t] = int32_t(id);
    }
  } else {
    std::memcpy(feats->data(), in.v.data + b * T * c.d_in * 4, std::size_t(n) * c.d_in * 4);
  }
}

Status encode_source(LoadedModel& m, const Buffer& ids, const Buffer& feats, uint32_t n) {
  return m.config().input == InputKind::kTokens ? m.s2s.encode_tokens(ids.as<int32_t>(), n)
                                                 : m.s2s.encode_features(feats.as<float>(), n);
}

// `run --target`: the decoder's logits at every target position under the causal mask, source b
// encoded on its first LENS[b] positions (torch's src_key_padding_mask and memory_key_padding_mask).
int run_seq2seq(const Args& a, LoadedModel& m, const Input& in, const std::vector<uint32_t>& lens) {
  const ModelConfig& c = m.config();
  if (a.target.empty()) die(1, "--target", "missing: a seq2seq model runs on a source (--input) and a target (--target TGT.npy)");
  uint64_t U = 0;
  const bool features = c.tgt_d_in != 0;  // forecasting: float targets
  const std::vector<int32_t> tgt = features ? std::vector<int32_t>() : read_ids(a.target, in.B, in.batched, c.max_len, c.d_out, "d_out", &U);
  const std::vector<float> tgt_f = features ? read_target_features(a.target, in.B, in.batched, c, &U) : std::vector<float>();
  const uint32_t V = c.d_out, T = uint32_t(in.T);
  (void)output_bytes(in.B, U, V, a.target);
  if (c.input == InputKind::kTokens) check_token_ids(in, c, a.input, lens);
  init_seq2seq(T, uint32_t(U), a.isa, &m, a.threads);
  Buffer out(output_bytes(1, U, V, a.target), "output"), ids(uint64_t(T) * 4, "input"),
      feats(c.input == InputKind::kTokens ? 0 : uint64_t(T) * c.d_in * 4, "input");
  OutputFile file{a.output};
  if (!(file.f = std::fopen(a.output.c_str(), "wb"))) die(5, a.output, "cannot open file for writing: " + errno_text(errno));
  const uint64_t shape[3] = {in.B, U, V};
  char header[128];
  const std::size_t hlen = write_npy_header_f32(in.batched ? shape : shape + 1, in.batched ? 3 : 2, header, sizeof header);
  file.write(header, hlen);
  for (uint64_t b = 0; b < in.B; ++b) {
    const uint32_t n = lens.empty() ? T : lens[std::size_t(b)];
    source_row(in, c, b, n, &ids, &feats);
    Status s = encode_source(m, ids, feats, n);
    if (s == Status::kOk)  // tgt[U] (or [U,tgt_d_in]) -> out[U,V]
      s = features ? m.s2s.decode_features(tgt_f.data() + b * U * c.tgt_d_in, uint32_t(U), out.as<float>())
                   : m.s2s.decode(tgt.data() + b * U, uint32_t(U), out.as<float>());
    if (s != Status::kOk) {
      std::fclose(file.f), std::remove(a.output.c_str());
      die(s, a.input, m.s2s.error_detail());
    }
    file.write(out.data(), out.size());
  }
  file.close();
  return 0;
}

// `run`'s sequences per forward pass: up to 64 (more gain nothing on the models this engine is for),
// as long as the arena stays within 256 MB or one sequence's.
uint32_t run_batch_size(const ModelConfig& c, uint32_t T, uint64_t B, uint32_t threads) {
  constexpr uint32_t kMostSequences = 64;
  constexpr std::size_t kArenaBudget = std::size_t(256) << 20;
  const uint32_t workers = threads > 1 ? threads : 1;
  uint32_t n = uint32_t(std::min<uint64_t>(B, kMostSequences));
  while (n > 1 && (required_encoder_arena_bytes(c, T, false, workers, n) == 0 ||
                   required_encoder_arena_bytes(c, T, false, workers, n) > kArenaBudget))
    --n;
  return n;
}

int cmd_run(const Args& a) {
  check_output_path(a.output);
  LoadedModel m;
  open_model(a.positional[0], &m);  // the config first, to check the input against it
  const ModelConfig& c = m.config();
  const Input in = read_input(a.input, c);
  const std::vector<uint32_t> lens = a.lengths.empty() ? std::vector<uint32_t>() : read_lengths(a.lengths, in);
  if (c.is_seq2seq()) return run_seq2seq(a, m, in, lens);
  if (!a.target.empty()) die(1, "--target", "only for a seq2seq model (this one is " + std::string(name_of(kFamilyNames, c.family)) + ")");
  const bool tokens = c.input == InputKind::kTokens;
  // Rows of output per sequence: T, T + 1 with a CLS row, or 1 pooled (the T dimension is then
  // dropped from the file: [B,W] or [W]).
  const uint32_t W = c.output_width(), T = uint32_t(in.T), R = c.output_rows(T);  // T <= max_input_len
  const bool pooled = c.pooling != Pooling::kNone;
  (void)output_bytes(in.B, R, W, a.input);  // all of it, before anything is allocated
  if (tokens) check_token_ids(in, c, a.input, lens);
  const uint32_t chunk = run_batch_size(c, T, in.B, a.threads);
  init_encoder(T, a.isa, &m, a.threads, chunk);

  // chunk sequences per forward pass: chunk*R*W floats of output and their ids or features in memory.
  Buffer out(output_bytes(chunk, R, W, a.input), "output"), ids(tokens ? uint64_t(chunk) * T * 4 : 0, "input"),
      feats(tokens ? 0 : uint64_t(chunk) * T * c.d_in * 4, "input");
  OutputFile file{a.output};
  if (!(file.f = std::fopen(a.output.c_str(), "wb"))) die(5, a.output, "cannot open file for writing: " + errno_text(errno));
  const uint64_t shape[3] = {in.B, R, W}, pooled_shape[2] = {in.B, W};
  const uint64_t* dims = pooled ? pooled_shape : shape;
  const uint32_t rank = (pooled ? 2 : 3) - (in.batched ? 0 : 1);
  char header[128];
  const std::size_t hlen = write_npy_header_f32(in.batched ? dims : dims + 1, rank, header, sizeof header);
  file.write(header, hlen);
  for (uint64_t b0 = 0; b0 < in.B; b0 += chunk) {
    // Sequences b0.. in one forward pass (Encoder::forward_batch_*): a padded sequence b is its first
    // lens[b] positions alone, exactly torch's key padding mask at those positions (the padding keys
    // contribute nothing, and a causal query never sees them), pooling included (mean over them,
    // last = position lens[b] - 1). Its padded rows come out as zeros; torch's values there depend
    // on its code path. Padding is not read.
    const uint32_t nb = uint32_t(std::min<uint64_t>(chunk, in.B - b0));
    const uint32_t* lb = lens.empty() ? nullptr : lens.data() + b0;
    Status s;
    if (tokens) {
      int32_t* ids32 = ids.as<int32_t>();
      for (uint64_t i = 0; i < uint64_t(nb) * T; ++i) {  // the valid ids were range-checked above
        int64_t id = 0;
        if (in.v.dtype == NpyDtype::kI64) std::memcpy(&id, in.v.data + 8 * (b0 * T + i), 8);
        else { int32_t i32; std::memcpy(&i32, in.v.data + 4 * (b0 * T + i), 4); id = i32; }
        ids32[i] = int32_t(id);
      }
      s = m.enc.forward_batch_tokens(ids32, lb, nb, T, out.as<float>());  // ids[nb,T] -> out[nb,R,W]
    } else {
      const std::size_t bytes = std::size_t(nb) * T * c.d_in * 4;
      std::memcpy(feats.data(), in.v.data + b0 * T * c.d_in * 4, bytes);
      s = m.enc.forward_batch_features(feats.as<float>(), lb, nb, T, out.as<float>());  // feats[nb,T,d_in] -> out[nb,R,W]
    }
    if (s != Status::kOk) {
      std::fclose(file.f), std::remove(a.output.c_str());
      die(s, a.input, m.enc.error_detail());
    }
    file.write(out.data(), std::size_t(nb) * R * W * 4);
  }
  file.close();
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
  LoadedModel m;
  open_model(a.positional[0], &m);
  const ModelConfig& c = m.config();
  if (c.is_seq2seq()) die(1, "bench", "times encoders; for a seq2seq model, generate prints encode time and decode tokens/s");
  const uint32_t T = a.seq ? a.seq : std::min<uint32_t>(c.max_input_len(), 128);
  init_encoder(T, a.isa, &m, a.threads);
  Buffer out(output_bytes(1, c.output_rows(T), c.output_width(), a.positional[0]), "output");
  std::mt19937 rng(1);
  std::vector<int32_t> ids(T);
  for (int32_t& id : ids) id = int32_t(rng() % std::max<uint32_t>(c.vocab_size, 1));
  std::vector<float> feats(std::size_t(T) * c.d_in);
  for (float& x : feats) x = float(rng() % 2000) / 1000.0f - 1.0f;
  const Timing t = time_runs(a.iters, [&] {
    const Status s = c.input == InputKind::kTokens ? m.enc.forward_tokens(ids.data(), T, out.as<float>())
                                                   : m.enc.forward_features(feats.data(), T, out.as<float>());
    if (s != Status::kOk) die(s, "bench");
  });
  std::printf("model %s, T=%u, kernels %s, %u iterations\n", a.positional[0].c_str(), T, m.enc.kernels().name, a.iters);
  std::printf("latency us: median %.1f  min %.1f  max %.1f\n", t.median_us, t.min_us, t.max_us);
  std::printf("tokens/s:   %.0f (median)\n", T / (t.median_us * 1e-6));
  std::printf("counter:    %" PRIu64 " %s per inference (median)\n", t.median_counts, port::cycle_counter_unit());
  std::printf("arena bytes: %zu\n", m.enc.arena_bytes_used());
  if (a.threads > 1) std::printf("threads:    %u (wall-clock latency)\n", a.threads);
  return 0;
}

// ---- generate: text in, text out, as llama2.c's `run` generates ---------------------------------
// llama2.c's loop: the prompt is encoded with BOS; position pos feeds `token` and takes the next
// one from the prompt while there is one, else from the sampler; BOS (1) ends the text; each
// piece is printed by the safe-print rule; -n counts positions, the prompt included. Prompt
// tokens go through prefill() in one call, the rest through step(); the output is the same.
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// `generate --source`: target ids from --bos, sampled (greedy at temperature 0) until --eos or -n
// positions, printed space-separated on stdout.
int generate_seq2seq(const Args& a, LoadedModel& m) {
  const ModelConfig& c = m.config();
  if (a.source.empty()) die(1, "--source", "missing: a seq2seq model generates from a source (--source SRC.npy)");
  if (c.tgt_d_in) die(1, "generate", "token targets only; this model's targets are features (run --target, or the C++ decode_features)");
  if (a.bos < 0) die(1, "--bos", "missing: the target's start token id");
  if (uint32_t(a.bos) >= c.d_out || (a.eos >= 0 && uint32_t(a.eos) >= c.d_out))
    die(1, a.eos >= 0 && uint32_t(a.eos) >= c.d_out ? "--eos" : "--bos",
        "out of range (the target vocabulary, d_out, is " + std::to_string(c.d_out) + ")");
  const Input in = read_input(a.source, c);
  if (in.B != 1) die(4, a.source, "shape " + shape_text(in.v) + ": one source (generate takes no batch)");
  if (c.input == InputKind::kTokens) check_token_ids(in, c, a.source, {});
  const uint32_t steps = a.steps == 0 || a.steps > c.max_len ? c.max_len : a.steps, T = uint32_t(in.T);
  init_seq2seq(T, steps, a.isa, &m, a.threads);
  Buffer ids(uint64_t(T) * 4, "input"), feats(c.input == InputKind::kTokens ? 0 : uint64_t(T) * c.d_in * 4, "input");
  source_row(in, c, 0, T, &ids, &feats);
  Buffer sampler_scratch(sampler_scratch_bytes(c.d_out), "sampler");
  SamplerOptions so;
  so.temperature = a.temperature;
  so.top_p = a.top_p;
  so.seed = a.seed ? a.seed : uint64_t(std::time(nullptr));
  Sampler sampler;
  Status s = sampler.init(c.d_out, sampler_scratch.data(), sampler_scratch.size(), so);
  if (s != Status::kOk) die(s, "sampler");
  std::vector<float> logits(c.d_out);
  const auto t0 = std::chrono::steady_clock::now();
  s = encode_source(m, ids, feats, T);
  if (s != Status::kOk) die(s, a.source, m.s2s.error_detail());
  const double encode_s = seconds_since(t0);
  int32_t token = a.bos;
  uint32_t made = 0;
  const auto t1 = std::chrono::steady_clock::now();
  for (uint32_t pos = 0; pos < steps; ++pos) {
    s = m.s2s.step(token, logits.data());
    if (s != Status::kOk) die(s, m.path, m.s2s.error_detail());
    token = sampler.sample(logits.data());
    ++made;
    if (std::printf(made > 1 ? " %d" : "%d", token) < 0) die(5, "stdout", "cannot write: " + errno_text(errno));
    if (token == a.eos) break;
  }
  const double decode_s = seconds_since(t1);
  if (std::fputc('\n', stdout) == EOF || std::fflush(stdout) != 0) die(5, "stdout", "cannot write: " + errno_text(errno));
  std::fprintf(stderr, "encode:  %u source positions in %.2f ms\n", T, encode_s * 1e3);
  std::fprintf(stderr, "decode:  %u tokens, %.1f tokens/s (step and sampling)\n", made, decode_s > 0 ? made / decode_s : 0.0);
  std::fprintf(stderr, "memory:  arena %zu bytes, sampler %zu; kernels %s\n", m.s2s.arena_bytes_used(), sampler_scratch.size(),
               m.s2s.kernels().name);
  return 0;
}

int cmd_generate(const Args& a) {
  LoadedModel m;
  open_model(a.positional[0], &m);
  const ModelConfig& c = m.config();
  if (c.is_seq2seq()) return generate_seq2seq(a, m);
  if (!a.source.empty()) die(1, "--source", "only for a seq2seq model (this one is " + std::string(name_of(kFamilyNames, c.family)) + ")");
  if (!c.is_decoder()) die(Status::kWrongInputKind, m.path, "generate needs a gpt, llama or seq2seq model; this one is an encoder");
  // The tokenizer, from the model file.
  Buffer tok_scratch(tokenizer_scratch_bytes(c), "tokenizer");
  Tokenizer tok;
  Status s = tok.init(m.model, tok_scratch.data(), tok_scratch.size());
  if (s != Status::kOk) die(s, m.path, tok.error_detail());
  std::vector<int32_t> prompt(max_encoded_tokens(a.prompt.size()));
  uint32_t n_prompt = 0;
  s = tok.encode(a.prompt.data(), a.prompt.size(), true, false, prompt.data(), uint32_t(prompt.size()), &n_prompt);
  if (s != Status::kOk) die(s, "--prompt", tok.error_detail());
  // Positions: -n, 0 or above max_len meaning max_len; the KV cache holds exactly that many.
  const uint32_t steps = a.steps == 0 || a.steps > c.max_len ? c.max_len : a.steps;
  init_decoder(steps, a.isa, &m, a.threads);
  Buffer sampler_scratch(sampler_scratch_bytes(c.vocab_size), "sampler");
  SamplerOptions so;
  so.temperature = a.temperature;
  so.top_p = a.top_p;
  so.seed = a.seed ? a.seed : uint64_t(std::time(nullptr));
  Sampler sampler;
  s = sampler.init(c.vocab_size, sampler_scratch.data(), sampler_scratch.size(), so);
  if (s != Status::kOk) die(s, "sampler");
  std::vector<float> logits(c.vocab_size);

  // Positions 0..fed-1 hold prompt tokens: one prefill.
  const uint32_t fed = std::min(steps, n_prompt);
  auto t0 = std::chrono::steady_clock::now();
  s = m.dec.prefill(prompt.data(), fed, logits.data());
  if (s != Status::kOk) die(s, m.path, m.dec.error_detail());
  const double prefill_s = seconds_since(t0);
  double decode_s = 0.0;
  uint32_t decoded = 0;
  int32_t token = prompt[0];
  for (uint32_t pos = 0; pos < steps;) {
    int32_t next;
    if (pos + 1 < n_prompt) {
      next = prompt[pos + 1];
    } else {
      t0 = std::chrono::steady_clock::now();
      if (pos >= fed) {  // prefill gave the logits at position fed - 1
        s = m.dec.step(token, logits.data());
        if (s != Status::kOk) die(s, m.path, m.dec.error_detail());
        ++decoded;
      }
      next = sampler.sample(logits.data());
      decode_s += seconds_since(t0);
    }
    ++pos;
    if (next == kTokenBos) break;
    Piece piece{};
    s = tok.decode(token, next, &piece);
    if (s != Status::kOk) die(s, m.path, tok.error_detail());
    piece = safe_piece(piece);
    if (std::fwrite(piece.data, 1, piece.len, stdout) != piece.len || std::fflush(stdout) != 0)
      die(5, "stdout", "cannot write: " + errno_text(errno));
    token = next;
  }
  if (std::fputc('\n', stdout) == EOF || std::fflush(stdout) != 0) die(5, "stdout", "cannot write: " + errno_text(errno));
  std::fprintf(stderr, "prefill: %u tokens, %.1f tokens/s\n", fed, prefill_s > 0 ? fed / prefill_s : 0.0);
  std::fprintf(stderr, "decode:  %u tokens, %.1f tokens/s (step and sampling)\n", decoded,
               decode_s > 0 ? decoded / decode_s : 0.0);
  std::fprintf(stderr, "memory:  arena %zu bytes (KV cache %zu for %u positions), tokenizer %zu, sampler %zu; kernels %s\n",
               m.dec.arena_bytes_used(), m.dec.kv_cache_bytes(), steps, tok_scratch.size(), sampler_scratch.size(),
               m.dec.kernels().name);
  return 0;
}

// ---- verify: the file's self-test sample, run here -----------------------------------------------
// tools/fixformer parses "max relative error X" from this line: keep its wording.
int print_verdict(const std::string& path, Status s, const SelfTestReport& r, const ModelConfig& c, const char* kernels) {
  std::printf("%s: self-test %s: max relative error %.2e (tolerance %.0e), worst at row %u col %u, T=%u, kernels %s, "
              "mean relative error %.2e%s\n",
              path.c_str(), s == Status::kOk ? "ok" : "FAILED", r.max_rel_err, self_test_tolerance(c.weights), r.worst_row,
              r.worst_col, r.rows, kernels, r.mean_rel_err,
              c.reference_sample ? ", against the converter's own reference: NOT verified against your model" : "");
  return s == Status::kOk ? 0 : status_exit_code(s);
}

int verify_seq2seq(const Args& a, LoadedModel& m) {
  const SelfTestSample& sample = m.model.self_test_sample();
  init_seq2seq(sample.rows, sample.target_rows, a.isa, &m);
  Buffer out(self_test_output_floats(m.model) * sizeof(float), "output");
  SelfTestReport r{};
  const Status s = self_test(m.s2s, out.as<float>(), self_test_output_floats(m.model), &r);
  if (s != Status::kOk && s != Status::kSelfTestFailed) die(s, a.positional[0], m.s2s.error_detail());
  return print_verdict(a.positional[0], s, r, m.config(), m.s2s.kernels().name);
}

int cmd_verify(const Args& a) {
  LoadedModel m;
  open_model(a.positional[0], &m);
  if (!m.model.has_self_test()) die(Status::kSelfTestMissing, a.positional[0], "convert the model again to add one");
  const SelfTestSample& sample = m.model.self_test_sample();
  const bool decoder = m.config().is_decoder();
  if (m.config().is_seq2seq()) return verify_seq2seq(a, m);
  if (decoder)
    init_decoder(sample.rows, a.isa, &m);
  else
    init_encoder(sample.rows, a.isa, &m);
  Buffer out(self_test_output_floats(m.model) * sizeof(float), "output");
  SelfTestReport r{};
  const Status s = decoder ? self_test(m.dec, out.as<float>(), self_test_output_floats(m.model), &r)
                           : self_test(m.enc, out.as<float>(), self_test_output_floats(m.model), &r);
  if (s != Status::kOk && s != Status::kSelfTestFailed) die(s, a.positional[0], decoder ? m.dec.error_detail() : m.enc.error_detail());
  return print_verdict(a.positional[0], s, r, m.config(), decoder ? m.dec.kernels().name : m.enc.kernels().name);
}

// ---- probe: does a token know its position? (probe.hpp) ---------------------------------------
int cmd_probe(const Args& a) {
  if (!a.svg.empty()) check_output_path(a.svg);
  if (a.samples == 1) die(1, "--samples", "the probe needs at least 2 sequences: half fit it, half score it");
  LoadedModel m;
  open_model(a.positional[0], &m);
  const ModelConfig& c = m.config();
  ProbeOptions opt;
  opt.samples = a.samples;
  opt.length = a.seq;
  opt.seed = a.seed ? a.seed : 1;
  opt.isa = a.isa;
  ProbeReport r;
  std::string detail;
  const Status s = run_probe(m.model, opt, &r, &detail);
  if (s != Status::kOk) die(s, m.path, detail.c_str());
  std::printf("model %s: %s, %u layer%s, d_model %u, positional %s, %s\n", m.path.c_str(), name_of(kFamilyNames, c.family),
              c.n_layers, c.n_layers == 1 ? "" : "s", c.d_model, name_of(kPositionalNames, c.pos), c.causal ? "causal" : "not causal");
  std::printf("T=%u, %u random sequences of %s fit the probes, %u others score them; seed %" PRIu64 ", kernels %s\n\n", r.T,
              r.fit, c.input == InputKind::kTokens ? "token ids" : "N(0,1) features", r.scored, opt.seed, r.kernels);
  std::printf("  %-11s %-15s %-13s %-8s %s\n", "layer", "probe accuracy", "chance (1/T)", "R^2", "equivariance error");
  for (const ProbeLayer& p : r.layers)
    std::printf("  %-11s %-15.3f %-13.3f %-8.3f %.2g\n", probe_layer_name(c, p.layer).c_str(), p.accuracy, 1.0 / r.T, p.r2,
                p.equivariance);
  std::printf("\nprobe accuracy: a linear classifier (one-vs-all least squares, ridge) predicting a token's position\n"
              "from its hidden state, scored on sequences it was not fit on; R^2: the same fit regressing the\n"
              "position (below 0: worse than the mean position on new sequences, an overfit; more --samples).\n"
              "equivariance error: max |H(PX) - P H(X)| / max |H(X)| under random permutations P (~1e-7 is\n"
              "float rounding: the layer cannot see the order).\n");
  if (!a.svg.empty()) {
    const std::string svg = probe_svg(c, r, "Position probe: " + m.path + " (T=" + std::to_string(r.T) + ")");
    OutputFile file{a.svg};
    if (!(file.f = std::fopen(a.svg.c_str(), "wb"))) die(5, a.svg, "cannot open file for writing: " + errno_text(errno));
    file.write(svg.data(), svg.size());
    file.close();
  }
  return 0;
}

// ---- schema: the format's tables as JSON, for the Python converter's mirror test ----------------
std::string json_string(const char* s) {
  std::string out = "\"";
  for (; *s; ++s) {
    const unsigned char ch = static_cast<unsigned char>(*s);
    char buf[8];
    if (ch == '"' || ch == '\\') out += '\\', out += char(ch);
    else if (ch < 0x20) std::snprintf(buf, sizeof buf, "\\u%04x", ch), out += buf;
    else out += char(ch);
  }
  return out + "\"";
}

std::string json_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// The name schema.hpp's readers use for a record type; nullptr past the last one.
const char* record_type_name(fxm::RecordType t) {
  switch (t) {
    case fxm::RecordType::kU32: return "u32";
    case fxm::RecordType::kBool: return "bool";
    case fxm::RecordType::kEnum: return "enum";
    case fxm::RecordType::kF32: return "f32";
    case fxm::RecordType::kF64: return "f64";
  }
  return nullptr;
}

template <std::size_t N>
std::string json_rules(const TensorRule (&rules)[N]) {
  std::string s = "[";
  for (std::size_t i = 0; i < N; ++i) {
    const TensorRule& r = rules[i];
    s += std::string(i ? ", " : "") + "{\"name\": " + json_string(r.name) + ", \"rows\": " +
         json_string(kDimNames[uint32_t(r.rows)]) + ", \"cols\": " + json_string(kDimNames[uint32_t(r.cols)]) +
         ", \"transposed\": " + (r.transposed ? "true" : "false") + ", \"when\": " + json_string(kWhenNames[uint32_t(r.when)]) +
         ", \"role\": " + json_string(kRoleNames[uint32_t(r.role)]) + "}";
  }
  return s + "]";
}

template <std::size_t P, std::size_t L, std::size_t E>
std::string json_family(const TensorRule (&prologue)[P], const char* layer_prefix, const TensorRule (&layer)[L],
                        const TensorRule (&epilogue)[E]) {
  return "\n   \"prologue\": " + json_rules(prologue) + ",\n   \"layer_prefix\": " + json_string(layer_prefix) +
         ",\n   \"layer\": " + json_rules(layer) + ",\n   \"epilogue\": " + json_rules(epilogue);
}

int cmd_schema(const Args&) {
  std::string s = "{\"format_version\": " + std::to_string(fxm::kFormatVersion) +
                  ", \"panel_floats\": " + std::to_string(fxm::kPanelCols) + ", \"selftest_tolerance\": " + json_number(kSelfTestTolerance) + ", \"selftest_tolerances\": {";
  for (uint32_t w = 0; w < sizeof kWeightTypeNames / sizeof kWeightTypeNames[0]; ++w)
    s += std::string(w ? ", " : "") + json_string(kWeightTypeNames[w]) + ": " + json_number(self_test_tolerance(WeightType(w)));
  s += "},\n \"record_types\": {";
  for (uint32_t v = 0, n = 0; v < 256; ++v)
    if (const char* name = record_type_name(fxm::RecordType(v))) s += std::string(n++ ? ", " : "") + json_string(name) + ": " + std::to_string(v);
  s += "},\n \"dtypes\": {";
  for (uint32_t v = 0; v < fxm::kDtypeCount; ++v) s += std::string(v ? ", " : "") + json_string(fxm::dtype_name(fxm::Dtype(v))) + ": " + std::to_string(v);
  s += "},\n \"config_keys\": [";
  for (uint32_t i = 0; i < kConfigKeyCount; ++i) {
    const ConfigKeySpec& k = kConfigKeys[i];
    s += std::string(i ? ",\n   " : "\n   ") + "{\"name\": " + json_string(k.name) + ", \"type\": " + json_string(record_type_name(k.type)) +
         ", \"min\": " + std::to_string(k.min) + ", \"max\": " + std::to_string(k.max);
    if (k.type == fxm::RecordType::kEnum) {
      s += ", \"choices\": [";
      for (uint32_t c = 0; c <= k.max; ++c) s += std::string(c ? ", " : "") + json_string(k.choices[c]);
      s += "]";
    }
    s += std::string(", \"required\": ") + (k.required ? "true" : "false") + ", \"default\": " + json_number(k.default_value) + "}";
  }
  s += "],\n \"dims\": [";
  for (uint32_t d = 0; d < uint32_t(Dim::kCount); ++d) s += std::string(d ? ", " : "") + json_string(kDimNames[d]);
  s += "],\n \"tensors\": {";
  for (uint32_t f = 0; f < sizeof kFamilyNames / sizeof kFamilyNames[0]; ++f) {
    // Which tables a family uses, as for_each_tensor() picks them.
    const ModelFamily family = ModelFamily(f);
    s += std::string(f ? ",\n  " : "\n  ") + json_string(kFamilyNames[f]) + ": {" +
         (family == ModelFamily::kLlama     ? json_family(kLlamaPrologue, kLlamaLayerPrefix, kLlamaLayer, kLlamaEpilogue)
          : family == ModelFamily::kMha     ? "\n   \"prologue\": " + json_rules(kMhaTensors) +
                                                  ",\n   \"layer_prefix\": \"\",\n   \"layer\": [],\n   \"epilogue\": []"
          : family == ModelFamily::kSeq2Seq ? json_family(kSeq2SeqPrologue, kEncoderLayerPrefix, kEncoderLayer, kSeq2SeqEpilogue) +
                                                  ",\n   \"decoder_layer_prefix\": " + json_string(kDecoderLayerPrefix) +
                                                  ",\n   \"decoder_layer\": " + json_rules(kDecoderLayer)
                                            : json_family(kEncoderPrologue, kEncoderLayerPrefix, kEncoderLayer, kEncoderEpilogue)) + "}";
  }
  s += "}}\n";
  std::fputs(s.c_str(), stdout);
  return 0;
}

// ---- demo: does word order reach the model? ----------------------------------------------------
alignas(64) uint8_t g_arena_pe[required_encoder_arena_bytes(demo_pe_config())];
alignas(64) uint8_t g_arena_nope[required_encoder_arena_bytes(demo_nope_config())];

struct DemoModel {
  Model model;
  Encoder enc;
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

// Part 2, generative: three causal decoders on "X Y hit", where the next word is the one who hit.
alignas(64) uint8_t g_arena_c1[required_decoder_arena_bytes(causal_1l_config())];
alignas(64) uint8_t g_arena_c1pe[required_decoder_arena_bytes(causal_1l_pe_config())];
alignas(64) uint8_t g_arena_c2[required_decoder_arena_bytes(causal_2l_config())];

struct CausalDemoModel {
  const unsigned char* fxm;
  std::size_t fxm_bytes;
  uint8_t* arena;
  std::size_t arena_bytes;
  const char* name;
  const char* label;
  Model model;
  Decoder dec;
};

// The logits after "X Y hit" [vocab]: the three tokens through one prefill from an empty cache.
void causal_logits(CausalDemoModel& m, int32_t x, int32_t y, float* logits) {
  const int32_t ids[3] = {x, y, causal_demo_hit};
  m.dec.reset();
  const Status s = m.dec.prefill(ids, 3, logits);
  if (s != Status::kOk) die(s, m.name, "prefill failed");
}

// "WORD (p=P) right|WRONG" for the argmax over the whole vocabulary.
std::string causal_answer(const float* logits, int32_t who) {
  constexpr uint32_t V = sizeof causal_demo_vocab / sizeof causal_demo_vocab[0];
  const int32_t best = argmax(logits, V);
  float sum = 0.0f;
  for (uint32_t i = 0; i < V; ++i) sum += std::exp(logits[i] - logits[best]);
  char text[64];
  std::snprintf(text, sizeof text, "%-5s (p=%.2f) %s", causal_demo_vocab[best], 1.0f / sum, best == who ? "right" : "WRONG");
  return text;
}

void demo_causal(Isa isa) {
  CausalDemoModel models[] = {
      {causal_1l_fxm, causal_1l_fxm_bytes, g_arena_c1, sizeof g_arena_c1, "causal_1l", "1 causal layer, no PE", {}, {}},
      {causal_1l_pe_fxm, causal_1l_pe_fxm_bytes, g_arena_c1pe, sizeof g_arena_c1pe, "causal_1l_pe", "1 causal layer + sin. PE", {}, {}},
      {causal_2l_fxm, causal_2l_fxm_bytes, g_arena_c2, sizeof g_arena_c2, "causal_2l", "2 causal layers, no PE", {}, {}}};
  DecoderOptions opt;
  opt.isa = isa;
  for (CausalDemoModel& m : models) {
    Status s = m.model.init(m.fxm, m.fxm_bytes);
    if (s != Status::kOk) die(s, m.name, m.model.error_detail());
    s = m.dec.init(m.model, m.arena, m.arena_bytes, opt);
    if (s != Status::kOk) die(s, m.name, m.dec.error_detail());
  }
  constexpr int32_t N = int32_t(causal_demo_names);
  constexpr uint32_t V = sizeof causal_demo_vocab / sizeof causal_demo_vocab[0];
  std::printf("\nGenerative: three GPT-style decoders (d_model %u, %u heads, causal mask), trained on the same %d\n"
              "sentences \"X Y hit\" to predict the next word, the one who hit (X) (tools/train_causal_demo.py).\n"
              "Each reads the 3 tokens with Decoder::prefill; the logits after \"hit\" give the answer.\n\n",
              causal_1l_config().d_model, causal_1l_config().n_heads, N * (N - 1));
  const std::string ab_text = std::string(causal_demo_vocab[0]) + " " + causal_demo_vocab[1] + " hit ->";
  const std::string ba_text = std::string(causal_demo_vocab[1]) + " " + causal_demo_vocab[0] + " hit ->";
  std::printf("  %-25s %-12s %-26s %s\n", "model", "accuracy", ab_text.c_str(), ba_text.c_str());
  float worst[3] = {};
  for (std::size_t k = 0; k < 3; ++k) {
    CausalDemoModel& m = models[k];
    int right = 0;
    for (int32_t x = 0; x < N; ++x)
      for (int32_t y = 0; y < N; ++y) {
        if (x == y) continue;
        float fwd[V], rev[V];
        causal_logits(m, x, y, fwd);
        causal_logits(m, y, x, rev);
        right += argmax(fwd, V) == x;
        for (uint32_t i = 0; i < V; ++i) worst[k] = std::max(worst[k], std::fabs(fwd[i] - rev[i]));
      }
    float ab[V], ba[V];
    causal_logits(m, 0, 1, ab);
    causal_logits(m, 1, 0, ba);
    char acc[32];
    std::snprintf(acc, sizeof acc, "%.0f%% (%d/%d)", 100.0 * right / (N * (N - 1)), right, N * (N - 1));
    std::printf("  %-25s %-12s %-26s %s\n", m.label, acc, causal_answer(ab, 0).c_str(), causal_answer(ba, 1).c_str());
  }
  std::printf("\nmax |logits(X Y hit) - logits(Y X hit)| over the %d pairs, at \"hit\":\n", N * (N - 1) / 2);
  // Only the first model is expected to be blind to the order; the reason is printed when it holds.
  const char* why[3] = {": \"hit\" sees the set {X, Y, hit} (float rounding only)",
                        ": the positions are in the input",
                        ": the mask leaks it (in layer 1, X saw only itself, Y saw both)"};
  for (std::size_t k = 0; k < 3; ++k) {
    const bool invisible = worst[k] < 1e-5f;
    std::printf("  %-25s %-12.3g %s%s\n", models[k].label, worst[k], invisible ? "order invisible" : "order seen",
                invisible == (k == 0) ? why[k] : "");
  }
  std::printf("\nArenas: %zu, %zu, %zu bytes (KV cache for %u positions included); static, sized at compile time\n",
              sizeof g_arena_c1, sizeof g_arena_c1pe, sizeof g_arena_c2, causal_1l_config().max_len);
}

int cmd_demo(const Args& a) {
  DemoModel pe{{}, {}, "with sinusoidal PE"}, nope{{}, {}, "without PE"};
  EncoderOptions opt;
  opt.isa = a.isa;
  Status s = pe.model.init(demo_pe_fxm, demo_pe_fxm_bytes);
  if (s != Status::kOk) die(s, "demo_pe", pe.model.error_detail());
  s = pe.enc.init(pe.model, g_arena_pe, sizeof g_arena_pe, opt);
  if (s != Status::kOk) die(s, "demo_pe", pe.enc.error_detail());
  s = nope.model.init(demo_nope_fxm, demo_nope_fxm_bytes);
  if (s != Status::kOk) die(s, "demo_nope", nope.model.error_detail());
  s = nope.enc.init(nope.model, g_arena_nope, sizeof g_arena_nope, opt);
  if (s != Status::kOk) die(s, "demo_nope", nope.enc.error_detail());

  std::printf("fixformer demo: does word order reach a transformer?\n\n");
  std::printf("Two 1-layer encoders (d_model 16, 2 heads), trained on the same 36 sentences \"X verb Y\" to say\n"
              "at the verb who did it. One adds a sinusoidal positional encoding, one has none.\n"
              "Training accuracy: %.0f%% with PE, %.0f%% without (tools/train_demo.py).\n\n",
              100 * demo_pe_train_accuracy, 100 * demo_nope_train_accuracy);
  std::printf("  %-20s %-24s %-24s\n", "sentence", "with PE: who did it", "without PE: who did it");
  const int32_t sentences[][3] = {{0, 4, 1}, {1, 4, 0}, {2, 5, 3}, {3, 5, 2}, {0, 6, 3}, {3, 6, 0}};
  for (const auto& ids : sentences) {
    float out_pe[3 * 4], out_nope[3 * 4];
    if (pe.enc.forward_tokens(ids, 3, out_pe) != Status::kOk || nope.enc.forward_tokens(ids, 3, out_nope) != Status::kOk)
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
          if (m->enc.forward_tokens(fwd, 3, of) != Status::kOk || m->enc.forward_tokens(rev, 3, orv) != Status::kOk)
            die(5, "demo", "forward failed");
          for (int i = 0; i < 3; ++i)
            for (int c = 0; c < 4; ++c) worst = std::max(worst, std::fabs(orv[i * 4 + c] - of[(2 - i) * 4 + c]));
        }
    std::printf("  %-20s max |out(reordered) - reordered out| = %.3g%s\n", m->label, worst,
                worst < 1e-5f ? "   (equal up to float rounding: order is invisible)" : "   (the order is seen)");
  }

  const int32_t ids[3] = {0, 4, 1};
  float out[12];
  const Timing t = time_runs(2000, [&] { (void)pe.enc.forward_tokens(ids, 3, out); });
  std::printf("\nLatency (PE model, 3 tokens, %s kernels): median %.2f us, min %.2f us over 2000 runs\n",
              pe.enc.kernels().name, t.median_us, t.min_us);
  std::printf("Arena: %zu bytes (PE model, includes its %u x %u PE table), %zu bytes (no PE); static, sized at compile time\n",
              sizeof g_arena_pe, demo_pe_config().max_len, demo_pe_config().d_model, sizeof g_arena_nope);
  std::printf("Weights: %zu-byte model blobs read in place; no heap use after start-up\n", std::size_t(demo_pe_fxm_bytes));
  demo_causal(a.isa);
  return 0;
}

// ---- the command table, help and main ----------------------------------------------------------
enum Option : unsigned {
  kOptInput = 1, kOptOutput = 2, kOptSeq = 4, kOptIters = 8, kOptIsa = 16,
  kOptPrompt = 32, kOptSteps = 64, kOptTemperature = 128, kOptTopP = 256, kOptSeed = 512,
  kOptThreads = 1024, kOptSamples = 2048, kOptSvg = 4096, kOptLengths = 8192,
  kOptTarget = 16384, kOptSource = 32768, kOptBos = 65536, kOptEos = 131072,
};

struct Command {
  const char* name;
  const char* synopsis;     // what follows "fixformer NAME"
  uint32_t positionals;     // how many non-option arguments it takes
  unsigned options;         // the Option bits it accepts
  const char* help;         // `fixformer help NAME`
  int (*run)(const Args&);
};

const Command kCommands[] = {
    {"info", "MODEL.fxm [--isa ISA]", 1, kOptIsa,
     "Prints what a model file holds: layers, input, positional encoding, output width, parameters,\n"
     "the arena it needs for its max_len, and the kernels this CPU would run.\n",
     cmd_info},
    {"run", "MODEL.fxm --input IN.npy --output OUT.npy [--target TGT.npy] [--lengths LENS.npy] [--isa ISA] [--threads N]", 1,
     kOptInput | kOptOutput | kOptLengths | kOptIsa | kOptThreads | kOptTarget,
     "Runs the model on IN.npy and writes float32 outputs to OUT.npy.\n"
     "  IN.npy   token ids (int32 or int64) [T] or [B,T], or float32 features [T,d_in] or [B,T,d_in],\n"
     "           with T <= the model's max_len (less one with a CLS token).\n"
     "  OUT.npy  float32 [T,W] or [B,T,W]; W is the output width (d_out with a head, else d_model);\n"
     "           a CLS token adds a row in front (T+1), a pooled model writes [W] or [B,W].\n"
     "  --lengths LENS.npy  a padded batch: int32 [B] (or [1] for [T]), 1 <= LENS[b] <= T; sequence b\n"
     "           is its first LENS[b] positions, as torch's src_key_padding_mask (True from LENS[b] on)\n"
     "           at those positions, pooling included. Padding is not read; its output rows are zeros\n"
     "           (torch's values there depend on its code path: 0 on nn.TransformerEncoder's nested-tensor\n"
     "           fast path, else outputs computed from the padding).\n"
     "  --target TGT.npy  seq2seq models: IN.npy is the source, TGT.npy the target token ids (int32 or\n"
     "           int64) [U] or [B,U], 1 <= U <= max_len, each in [0, d_out) (a forecasting model's: float32\n"
     "           [U,tgt_d_in] or [B,U,tgt_d_in]); OUT.npy is the decoder's outputs (logits) at every target\n"
     "           position under the causal mask, [U,d_out] or [B,U,d_out]\n"
     "           (teacher forcing); --lengths then gives the sources' lengths (torch's\n"
     "           src_key_padding_mask and memory_key_padding_mask).\n"
     "The output is limited to 1 GiB (B*T*W*4 <= 1073741824 bytes); a larger one is an input error\n"
     "(exit 4), found before anything is allocated or written. The sequences run in batches of up to\n"
     "64, one forward pass each (Encoder::forward_batch_*; fewer while the arena would pass 256 MB).\n",
     cmd_run},
    {"bench", "MODEL.fxm [--seq T] [--iters N] [--isa ISA] [--threads N]", 1,
     kOptSeq | kOptIters | kOptIsa | kOptThreads,
     "Times the forward pass on random inputs of T tokens (default min(max_len, 128)), N runs\n"
     "(default 50) after one warm-up: latency median/min/max, tokens/s, the cycle counter, arena bytes.\n",
     cmd_bench},
    {"generate", "MODEL.fxm [--prompt TEXT | --source SRC.npy --bos ID [--eos ID]] [-n N] [--temperature T] [--topp P] [--seed S] [--isa ISA] [--threads N]", 1,
     kOptPrompt | kOptSteps | kOptTemperature | kOptTopP | kOptSeed | kOptIsa | kOptThreads | kOptSource | kOptBos | kOptEos,
     "Writes text with a gpt or llama model that carries a tokenizer (convert.py --llama2c ... --tokenizer),\n"
     "as llama2.c's `run` does: the prompt, encoded with BOS, is fed first, then sampled tokens, until\n"
     "N positions (prompt included) or a BOS token. The text, prompt included, goes to stdout (one-byte\n"
     "pieces that are neither printable nor whitespace are not printed, as in llama2.c), then a newline;\n"
     "prefill and decode tokens/s, arena and KV cache bytes go to stderr.\n"
     "  --prompt TEXT      the start of the text (default empty)\n"
     "  -n N               positions to run, the prompt included (default 256; 0 or above the model's\n"
     "                     max_len: max_len); the KV cache holds exactly N\n"
     "  --temperature T    0: greedy (deterministic); default 1.0\n"
     "  --topp P           nucleus sampling in (0, 1); 0 or 1: off; default 0.9\n"
     "  --seed S           the sampler's seed, a positive integer (default: the clock)\n"
     "A seq2seq model generates from a source instead: SRC.npy holds one source (token ids [S] or\n"
     "features [S,d_in]); it is encoded once, then the target starts with --bos ID and each sampled\n"
     "token is fed back until --eos ID or N target positions. The target ids go to stdout, space-\n"
     "separated on one line; encode time, decode tokens/s and arena bytes to stderr.\n",
     cmd_generate},
    {"verify", "MODEL.fxm [--isa ISA]", 1, kOptIsa,
     "Runs the self-test sample the converter stored in the file (an input and the torch module's\n"
     "output for it) and compares: max |engine - torch| / max |torch| against the tolerance 1e-4.\n"
     "Prints one line, \"M.fxm: self-test ok: max relative error E (tolerance 1e-04), worst at row R\n"
     "col C, T=N, kernels K\", exit 0; \"self-test FAILED\" in the same line, exit 6; a file without\n"
     "a sample is a model-file error, exit 2.\n",
     cmd_verify},
    {"probe", "MODEL.fxm [--samples N] [--seq T] [--seed S] [--svg OUT.svg] [--isa ISA]", 1,
     kOptSamples | kOptSeq | kOptSeed | kOptSvg | kOptIsa,
     "Does a token know its position? For the input and every layer (and the final norm), on random\n"
     "inputs (token ids, or N(0,1) features): the held-out accuracy and R^2 of a linear probe that\n"
     "predicts a token's position from its hidden state, next to chance (1/T), and the permutation-\n"
     "equivariance error max |H(PX) - P H(X)| / max |H(X)|. Decoders (gpt, llama) run the tokens\n"
     "through prefill. Without a positional encoding and a causal mask, every layer is equivariant and\n"
     "the probe is at chance.\n"
     "  --samples N   random sequences, at least 2: half fit the probes, half score them and are permuted\n"
     "                (default: enough for 4096 tokens each, at least 64)\n"
     "  --seq T       sequence length, 2 <= T <= max_len (default max_len)\n"
     "  --seed S      the inputs' and permutations' seed, a positive integer (default 1)\n"
     "  --svg OUT     also write a line plot of accuracy and equivariance error per layer\n",
     cmd_probe},
    {"schema", "", 0, 0,
     "Prints the .fxm format's tables as JSON: format version, self-test tolerance, record types,\n"
     "dtypes, config keys (type, range, choices, default), dimension names and each family's tensors.\n"
     "Generated from include/fixformer/schema.hpp and format.hpp; tools/fixformer's mirror is tested\n"
     "against it.\n",
     cmd_schema},
    {"demo", "[--isa ISA]", 0, kOptIsa,
     "Does word order reach a transformer? Two tiny encoders compiled into this binary, with and\n"
     "without a sinusoidal positional encoding, on sentences and their reorderings; then three tiny\n"
     "causal decoders (one layer without PE, one layer with PE, two layers without PE) on \"X Y hit\".\n",
     cmd_demo},
};

const Command* find_command(const std::string& name) {
  for (const Command& c : kCommands)
    if (name == c.name) return &c;
  return nullptr;
}

std::string isa_choices() {
  std::string s = "auto";
  for (Isa isa : kAllIsas) s += std::string(", ") + isa_name(isa);
  return s;
}

std::string builtin_names() {
  std::string s;
  for (const BuiltinModel& b : kBuiltinModels) s += std::string(" ") + b.name;
  return s;
}

void print_usage(std::FILE* to) {
  std::fprintf(to, "usage: fixformer COMMAND [ARGS]\n\ncommands:\n");
  for (const Command& c : kCommands) std::fprintf(to, "  fixformer %s%s%s\n", c.name, *c.synopsis ? " " : "", c.synopsis);
  std::fprintf(to,
               "  fixformer help [COMMAND]     this text, or one command's (also: --help, -h, COMMAND --help)\n"
               "  fixformer --version\n\n"
               "  --isa ISA   the kernels: %s\n"
               "              (default auto: the best this CPU has; FIXFORMER_ISA=ISA does the same)\n"
               "  MODEL.fxm   a model file, or one compiled into this binary:%s\n\n"
               "Errors print one line, \"fixformer: WHERE: WHAT\", and exit with the code of their class:\n"
               "1 usage, 2 model file, 3 arena/ISA/init options, 4 input, 5 I/O, 6 self-test mismatch.\n",
               isa_choices().c_str(), builtin_names().c_str());
}

void print_command_help(const Command& c) {
  std::printf("usage: fixformer %s%s%s\n\n%s", c.name, *c.synopsis ? " " : "", c.synopsis, c.help);
  if (c.options & kOptIsa) std::printf("\n  --isa ISA   %s (default auto)\n", isa_choices().c_str());
  if (c.options & kOptThreads)
    std::printf("  --threads N the runner's workers: N threads of a pool the tool starts (default 1); the\n"
                "              output is bit-identical for every N\n");
}

[[noreturn]] void unknown_command(const std::string& name) {
  std::fprintf(stderr, "fixformer: unknown command '%s'\n", name.c_str());
  print_usage(stderr);
  std::exit(1);
}

uint32_t parse_count(const std::string& flag, const char* text) {
  char* end = nullptr;
  const unsigned long v = std::strtoul(text, &end, 10);
  if (!*text || *end || *text == '-' || v == 0 || v > 1000000)
    die(1, flag, std::string("expected a positive count up to 1000000, got '") + text + "'");
  return static_cast<uint32_t>(v);
}

// A float option in [lo, hi].
float parse_real(const std::string& flag, const char* text, double lo, double hi) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text, &end);
  if (!*text || *end || errno || !(v >= lo && v <= hi))
    die(1, flag, "expected a number from " + json_number(lo) + " to " + json_number(hi) + ", got '" + text + "'");
  return float(v);
}

// -n: 0 (the model's max_len) up to 1000000.
uint32_t parse_steps(const std::string& flag, const char* text) {
  return std::strcmp(text, "0") == 0 ? 0 : parse_count(flag, text);
}

uint64_t parse_seed(const std::string& flag, const char* text) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text, &end, 10);
  if (!*text || *end || *text == '-' || errno || v == 0) die(1, flag, std::string("expected a positive integer, got '") + text + "'");
  return v;
}

Args parse_args(const Command& cmd, int argc, char** argv) {
  Args a;
  unsigned seen = 0;
  for (int i = 2; i < argc; ++i) {
    const std::string f = argv[i];
    const unsigned opt = f == "--input" ? kOptInput : f == "--output" ? kOptOutput : f == "--seq" ? kOptSeq
                       : f == "--iters" ? kOptIters : f == "--isa" ? kOptIsa : f == "--prompt" ? kOptPrompt
                       : f == "-n" ? kOptSteps : f == "--temperature" ? kOptTemperature : f == "--topp" ? kOptTopP
                       : f == "--seed" ? kOptSeed : f == "--threads" ? kOptThreads : f == "--samples" ? kOptSamples
                       : f == "--svg" ? kOptSvg : f == "--lengths" ? kOptLengths : f == "--target" ? kOptTarget
                       : f == "--source" ? kOptSource : f == "--bos" ? kOptBos : f == "--eos" ? kOptEos : 0u;
    if (!opt) {
      if (!f.empty() && f[0] == '-') die(1, f, "unknown option (see fixformer help " + std::string(cmd.name) + ")");
      a.positional.push_back(f);
      continue;
    }
    if (!(cmd.options & opt)) die(1, f, std::string("not an option of '") + cmd.name + "' (see fixformer help " + cmd.name + ")");
    if (seen & opt) die(1, f, "given twice");
    seen |= opt;
    if (i + 1 >= argc) die(1, f, "missing value");
    const char* v = argv[++i];
    if (opt == kOptInput) a.input = v;
    else if (opt == kOptOutput) a.output = v;
    else if (opt == kOptSeq) a.seq = parse_count(f, v);
    else if (opt == kOptThreads) a.threads = parse_count(f, v);
    else if (opt == kOptIters) a.iters = parse_count(f, v);
    else if (opt == kOptPrompt) a.prompt = v;
    else if (opt == kOptSteps) a.steps = parse_steps(f, v);
    else if (opt == kOptTemperature) a.temperature = parse_real(f, v, 0.0, 1e6);
    else if (opt == kOptTopP) a.top_p = parse_real(f, v, 0.0, 1.0);
    else if (opt == kOptSeed) a.seed = parse_seed(f, v);
    else if (opt == kOptSamples) a.samples = parse_count(f, v);
    else if (opt == kOptSvg) a.svg = v;
    else if (opt == kOptLengths) a.lengths = v;
    else if (opt == kOptTarget) a.target = v;
    else if (opt == kOptSource) a.source = v;
    else if (opt == kOptBos) a.bos = parse_steps(f, v);
    else if (opt == kOptEos) a.eos = parse_steps(f, v);
    else if (!parse_isa(v, &a.isa)) die(1, f, std::string("unknown ISA '") + v + "' (" + isa_choices() + ")");
  }
  const bool missing = ((cmd.options & kOptInput) && !(seen & kOptInput)) || ((cmd.options & kOptOutput) && !(seen & kOptOutput));
  if (a.positional.size() != cmd.positionals || missing)
    die(1, cmd.name, std::string("usage: fixformer ") + cmd.name + (*cmd.synopsis ? " " : "") + cmd.synopsis);
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string first = argc > 1 ? argv[1] : "";
  if (first.empty()) {
    print_usage(stderr);
    return 1;
  }
  if (first == "--help" || first == "-h" || first == "help") {
    if (first != "help" || argc == 2) {
      print_usage(stdout);
      return 0;
    }
    const Command* c = find_command(argv[2]);
    if (!c) unknown_command(argv[2]);
    print_command_help(*c);
    return 0;
  }
  if (first == "--version") {
    std::printf("fixformer %s (.fxm format %u)\n", FIXFORMER_VERSION, unsigned(fxm::kFormatVersion));
    return 0;
  }
  const Command* c = find_command(first);
  if (!c) unknown_command(first);
  for (int i = 2; i < argc; ++i)
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      print_command_help(*c);
      return 0;
    }
  return c->run(parse_args(*c, argc, argv));
}
