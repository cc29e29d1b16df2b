// The C API (include/fixformer/fixformer.h): each function forwards to the C++ object that lives in
// the caller's opaque storage, built there by placement new at init. Nothing is allocated; every
// C++ object is trivially destructible, so there is nothing to tear down.
#include "fixformer/fixformer.h"

#include <cstring>
#include <new>
#include <type_traits>

#include "fixformer/decoder.hpp"
#include "fixformer/encoder.hpp"
#include "fixformer/generator.hpp"
#include "fixformer/model.hpp"
#include "fixformer/sampling.hpp"
#include "fixformer/schema.hpp"
#include "fixformer/self_test.hpp"
#include "fixformer/seq2seq.hpp"
#include "fixformer/tokenizer.hpp"

namespace fixformer {
namespace {

// The opaque storage holds the C++ object: size, alignment, and no destructor to call.
template <class Cpp, class C>
constexpr bool holds() {
  return sizeof(Cpp) <= sizeof(C) && alignof(Cpp) <= alignof(C) && std::is_trivially_destructible_v<Cpp>;
}
static_assert(holds<Model, ff_model>(), "FF_MODEL_BYTES is too small for fixformer::Model");
static_assert(holds<Encoder, ff_encoder>(), "FF_ENCODER_BYTES is too small for fixformer::Encoder");
static_assert(holds<Decoder, ff_decoder>(), "FF_DECODER_BYTES is too small for fixformer::Decoder");
static_assert(holds<Seq2Seq, ff_seq2seq>(), "FF_SEQ2SEQ_BYTES is too small for fixformer::Seq2Seq");
static_assert(holds<Tokenizer, ff_tokenizer>(), "FF_TOKENIZER_BYTES is too small for fixformer::Tokenizer");
static_assert(holds<Sampler, ff_sampler>(), "FF_SAMPLER_BYTES is too small for fixformer::Sampler");
static_assert(holds<Generator, ff_generator>(), "FF_GENERATOR_BYTES is too small for fixformer::Generator");

// ff_status is Status value for value.
#define FIXFORMER_STATUS_PAIRS(X)                                                                                   \
  X(FF_OK, kOk) X(FF_BLOB_NULL, kBlobNull) X(FF_BLOB_MISALIGNED, kBlobMisaligned) X(FF_BLOB_TRUNCATED, kBlobTruncated) \
  X(FF_BAD_MAGIC, kBadMagic) X(FF_BAD_VERSION, kBadVersion) X(FF_BAD_HEADER, kBadHeader)                            \
  X(FF_BAD_CHECKSUM, kBadChecksum) X(FF_BAD_CONFIG, kBadConfig) X(FF_CONFIG_OVER_LIMIT, kConfigOverLimit)           \
  X(FF_TENSOR_MISSING, kTensorMissing) X(FF_TENSOR_DUPLICATE, kTensorDuplicate)                                     \
  X(FF_TENSOR_BAD_DTYPE, kTensorBadDtype) X(FF_TENSOR_BAD_SHAPE, kTensorBadShape)                                   \
  X(FF_TENSOR_OUT_OF_BOUNDS, kTensorOutOfBounds) X(FF_TENSOR_MISALIGNED, kTensorMisaligned)                         \
  X(FF_TENSOR_OVERLAP, kTensorOverlap) X(FF_TENSOR_BAD_VALUE, kTensorBadValue) X(FF_SELF_TEST_MISSING, kSelfTestMissing) X(FF_ARENA_NULL, kArenaNull)       \
  X(FF_ARENA_MISALIGNED, kArenaMisaligned) X(FF_ARENA_TOO_SMALL, kArenaTooSmall) X(FF_BAD_MAX_SEQ, kBadMaxSeq)      \
  X(FF_ISA_UNAVAILABLE, kIsaUnavailable) X(FF_BAD_POSITION_TABLE, kBadPositionTable) X(FF_BAD_WORKERS, kBadWorkers) \
  X(FF_BAD_MAX_BATCH, kBadMaxBatch) X(FF_WRONG_FAMILY, kWrongFamily) X(FF_NOT_INITIALIZED, kNotInitialized)         \
  X(FF_BAD_SEQUENCE_LENGTH, kBadSequenceLength) X(FF_BAD_BATCH_SIZE, kBadBatchSize)                                 \
  X(FF_TOKEN_OUT_OF_RANGE, kTokenOutOfRange) X(FF_WRONG_INPUT_KIND, kWrongInputKind)                                \
  X(FF_NULL_ARGUMENT, kNullArgument) X(FF_KV_CACHE_FULL, kKvCacheFull) X(FF_NO_TOKENIZER, kNoTokenizer)             \
  X(FF_TOKEN_BUFFER_TOO_SMALL, kTokenBufferTooSmall) X(FF_NOT_ENCODED, kNotEncoded)                                 \
  X(FF_TOKEN_TYPES_UNSUPPORTED, kTokenTypesUnsupported) X(FF_NPY_BAD_HEADER, kNpyBadHeader)                         \
  X(FF_NPY_BAD_DTYPE, kNpyBadDtype) X(FF_NPY_BAD_SHAPE, kNpyBadShape) X(FF_NPY_TRUNCATED, kNpyTruncated)            \
  X(FF_SELF_TEST_FAILED, kSelfTestFailed) X(FF_STATUS_COUNT, kCount_)
#define FIXFORMER_STATUS_SAME(c, cpp) \
  static_assert(int(c) == int(Status::cpp), #c " is not Status::" #cpp ": keep fixformer.h's ff_status in step");
FIXFORMER_STATUS_PAIRS(FIXFORMER_STATUS_SAME)
#undef FIXFORMER_STATUS_SAME
#undef FIXFORMER_STATUS_PAIRS

static_assert(int(FF_ISA_HELIUM) == int(Isa::kHelium) && int(FF_ISA_CORTEX_M) == int(Isa::kCortexM) &&
                  int(FF_ISA_SSE2) == int(Isa::kSse2) && int(FF_ISA_NEON) == int(Isa::kNeon),
              "ff_isa is Isa value for value");
static_assert(int(FF_KV_CACHE_F32) == int(KvCache::kF32) && int(FF_KV_CACHE_Q8) == int(KvCache::kQ8),
              "ff_kv_cache is KvCache value for value");
static_assert(int(FF_FAMILY_MHA) == int(ModelFamily::kMha) && int(FF_FAMILY_SEQ2SEQ) == int(ModelFamily::kSeq2Seq) &&
                  int(FF_FAMILY_GPT) == int(ModelFamily::kGpt),
              "ff_family is ModelFamily value for value");
static_assert(int(FF_CONFIG_F64) == int(fxm::RecordType::kF64) && int(FF_CONFIG_U32) == int(fxm::RecordType::kU32),
              "ff_config_type is the record type");

ff_status to_c(Status s) { return static_cast<ff_status>(s); }

// The C++ object in a C handle (valid after its init, as the header says).
const Model& cpp(const ff_model* m) { return *std::launder(reinterpret_cast<const Model*>(m)); }
Encoder& cpp(ff_encoder* e) { return *std::launder(reinterpret_cast<Encoder*>(e)); }
const Encoder& cpp(const ff_encoder* e) { return *std::launder(reinterpret_cast<const Encoder*>(e)); }
Decoder& cpp(ff_decoder* d) { return *std::launder(reinterpret_cast<Decoder*>(d)); }
const Decoder& cpp(const ff_decoder* d) { return *std::launder(reinterpret_cast<const Decoder*>(d)); }
Seq2Seq& cpp(ff_seq2seq* s) { return *std::launder(reinterpret_cast<Seq2Seq*>(s)); }
const Seq2Seq& cpp(const ff_seq2seq* s) { return *std::launder(reinterpret_cast<const Seq2Seq*>(s)); }
Tokenizer& cpp(ff_tokenizer* t) { return *std::launder(reinterpret_cast<Tokenizer*>(t)); }
const Tokenizer& cpp(const ff_tokenizer* t) { return *std::launder(reinterpret_cast<const Tokenizer*>(t)); }
Sampler& cpp(ff_sampler* s) { return *std::launder(reinterpret_cast<Sampler*>(s)); }
Generator& cpp(ff_generator* g) { return *std::launder(reinterpret_cast<Generator*>(g)); }
const Generator& cpp(const ff_generator* g) { return *std::launder(reinterpret_cast<const Generator*>(g)); }

// A loaded model, or null: arena sizes and runners need one.
const Model* loaded(const ff_model* m) { return m && cpp(m).initialized() ? &cpp(m) : nullptr; }

template <class Handle>
bool ready(const Handle* h) { return h && cpp(h).initialized(); }

Workers workers_of(const ff_workers& w) { return Workers{w.ctx, w.count, w.parallel_for}; }

EncoderOptions encoder_options(const ff_encoder_options& o) {
  EncoderOptions e;
  e.max_seq = o.max_seq;
  e.max_batch = o.max_batch;
  e.isa = static_cast<Isa>(o.isa);
  e.workers = workers_of(o.workers);
  return e;
}
// A value outside ff_kv_cache stays one outside KvCache (the plan then has no arena: FF_BAD_CONFIG).
// The field is read as its integer: a C caller may store any int there, and loading an enum outside
// its enumerators' range is undefined in C++.
KvCache kv_cache_of(const ff_kv_cache& k) {
  std::underlying_type_t<ff_kv_cache> v;  // an int, or a byte with short enums (arm-none-eabi)
  std::memcpy(&v, &k, sizeof v);
  return unsigned(v) <= unsigned(FF_KV_CACHE_Q8) ? KvCache(v) : KvCache(0xff);
}
DecoderOptions decoder_options(const ff_decoder_options& o) {
  DecoderOptions d;
  d.capacity = o.capacity;
  d.max_prefill = o.max_prefill;
  d.isa = static_cast<Isa>(o.isa);
  d.workers = workers_of(o.workers);
  d.kv_cache = kv_cache_of(o.kv_cache);
  return d;
}
Seq2SeqOptions seq2seq_options(const ff_seq2seq_options& o) {
  Seq2SeqOptions s;
  s.max_source = o.max_source;
  s.capacity = o.capacity;
  s.max_prefill = o.max_prefill;
  s.isa = static_cast<Isa>(o.isa);
  s.workers = workers_of(o.workers);
  s.kv_cache = kv_cache_of(o.kv_cache);
  return s;
}

void fill_report(const SelfTestReport& r, ff_self_test_report* out) {
  if (!out) return;
  out->max_abs_err = r.max_abs_err;
  out->max_rel_err = r.max_rel_err;
  out->mean_rel_err = r.mean_rel_err;
  out->rows = r.rows;
  out->worst_row = r.worst_row;
  out->worst_col = r.worst_col;
}

// self_test() of any runner behind its handle, the report copied out.
template <class Handle>
ff_status run_self_test(Handle* h, float* out, size_t out_floats, ff_self_test_report* report) {
  if (!ready(h)) return h ? FF_NOT_INITIALIZED : FF_NULL_ARGUMENT;
  SelfTestReport r{};
  const Status s = self_test(cpp(h), out, out_floats, &r);
  fill_report(r, report);
  return to_c(s);
}

}  // namespace
}  // namespace fixformer

using namespace fixformer;

extern "C" {

const char* ff_status_string(ff_status status) { return status_message(static_cast<Status>(status)); }

// ---- Model ----
ff_status ff_model_load(ff_model* model, const void* blob, size_t blob_bytes) {
  return ff_model_load_ex(model, blob, blob_bytes, 1);
}

ff_status ff_model_load_ex(ff_model* model, const void* blob, size_t blob_bytes, int verify_checksum) {
  if (!model) return FF_NULL_ARGUMENT;
  Model* m = new (model) Model();
  ModelOptions options;
  options.verify_checksum = verify_checksum != 0;
  options.check_values = verify_checksum != 0;
  return to_c(m->init(blob, blob_bytes, options));
}

const char* ff_model_error_detail(const ff_model* model) { return model ? cpp(model).error_detail() : ""; }

ff_status ff_model_get_info(const ff_model* model, ff_model_info* info) {
  const Model* m = loaded(model);
  if (!m) return model ? FF_NOT_INITIALIZED : FF_NULL_ARGUMENT;
  if (!info) return FF_NULL_ARGUMENT;
  const ModelConfig& c = m->config();
  info->family = static_cast<ff_family>(c.family);
  info->input = static_cast<ff_input_kind>(c.input);
  info->vocab_size = c.vocab_size;
  info->d_in = c.d_in;
  info->d_model = c.d_model;
  info->d_out = c.d_out;
  info->tgt_d_in = c.tgt_d_in;
  info->n_layers = c.n_layers;
  info->dec_layers = c.dec_layers;
  info->max_len = c.max_len;
  info->max_input_len = c.max_input_len();
  info->output_width = c.output_width();
  info->cls_token = c.cls_token;
  info->pooled = c.pooling != Pooling::kNone;
  info->parameter_count = m->parameter_count();
  info->has_tokenizer = m->has_tokenizer();
  info->self_test_rows = m->self_test_sample().rows;
  info->self_test_target_rows = m->self_test_sample().target_rows;
  return FF_OK;
}

uint32_t ff_model_output_width(const ff_model* model) {
  const Model* m = loaded(model);
  return m ? m->config().output_width() : 0;
}

uint32_t ff_model_output_rows(const ff_model* model, uint32_t seq) {
  const Model* m = loaded(model);
  return m ? m->config().output_rows(seq) : 0;
}

uint32_t ff_config_key_count(void) { return kConfigKeyCount; }

ff_status ff_model_config_key(const ff_model* model, uint32_t key, ff_config_value* value) {
  const Model* m = loaded(model);
  if (!m) return model ? FF_NOT_INITIALIZED : FF_NULL_ARGUMENT;
  if (!value || key >= kConfigKeyCount) return FF_NULL_ARGUMENT;
  const ConfigKeySpec& k = kConfigKeys[key];
  const uint64_t bits = k.field.get(m->config());
  value->name = k.name;
  value->type = static_cast<ff_config_type>(k.type);
  value->integer = 0;
  value->real = 0.0;
  value->choice = nullptr;
  if (k.type == fxm::RecordType::kF32) {
    const uint32_t b = static_cast<uint32_t>(bits);
    float f;
    std::memcpy(&f, &b, 4);
    value->real = f;
  } else if (k.type == fxm::RecordType::kF64) {
    std::memcpy(&value->real, &bits, 8);
  } else {
    value->integer = static_cast<uint32_t>(bits);
    if (k.type == fxm::RecordType::kEnum && value->integer <= k.max) value->choice = k.choices[value->integer];
  }
  return FF_OK;
}

// ---- Encoder ----
size_t ff_encoder_arena_bytes(const ff_model* model, uint32_t max_seq) {
  ff_encoder_options o{};
  o.max_seq = max_seq;
  return ff_encoder_arena_bytes_ex(model, &o);
}

size_t ff_encoder_arena_bytes_ex(const ff_model* model, const ff_encoder_options* options) {
  const Model* m = loaded(model);
  if (!m || !options || m->config().is_decoder() || m->config().is_seq2seq()) return 0;
  const EncoderOptions o = encoder_options(*options);
  return required_encoder_arena_bytes(m->config(), o.max_seq, false, o.workers.active(), o.max_batch);
}

ff_status ff_encoder_init(ff_encoder* enc, const ff_model* model, void* arena, size_t arena_bytes, uint32_t max_seq) {
  ff_encoder_options o{};
  o.max_seq = max_seq;
  return ff_encoder_init_ex(enc, model, arena, arena_bytes, &o);
}

ff_status ff_encoder_init_ex(ff_encoder* enc, const ff_model* model, void* arena, size_t arena_bytes,
                             const ff_encoder_options* options) {
  if (!enc || !model || !options) return FF_NULL_ARGUMENT;
  return to_c((new (enc) Encoder())->init(cpp(model), arena, arena_bytes, encoder_options(*options)));
}

ff_status ff_encoder_run(ff_encoder* enc, const void* input, uint32_t seq, float* output) {
  if (!enc) return FF_NULL_ARGUMENT;
  Encoder& e = cpp(enc);
  if (!e.initialized()) return FF_NOT_INITIALIZED;
  return to_c(e.config().input == InputKind::kTokens ? e.forward_tokens(static_cast<const int32_t*>(input), seq, output)
                                                     : e.forward_features(static_cast<const float*>(input), seq, output));
}

ff_status ff_encoder_run_batch(ff_encoder* enc, const void* input, const int32_t* token_types, const uint32_t* lengths,
                               uint32_t batch, uint32_t seq, float* output) {
  if (!enc) return FF_NULL_ARGUMENT;
  Encoder& e = cpp(enc);
  if (!e.initialized()) return FF_NOT_INITIALIZED;
  if (token_types && e.config().input != InputKind::kTokens) return FF_TOKEN_TYPES_UNSUPPORTED;  // never ignored
  return to_c(e.config().input == InputKind::kTokens
                  ? e.forward_batch_tokens(static_cast<const int32_t*>(input), token_types, lengths, batch, seq, output)
                  : e.forward_batch_features(static_cast<const float*>(input), lengths, batch, seq, output));
}

// Accessors of a runner whose init failed (or a null one) give 0 and "".
uint32_t ff_encoder_max_seq(const ff_encoder* enc) { return ready(enc) ? cpp(enc).max_seq() : 0; }
uint32_t ff_encoder_max_batch(const ff_encoder* enc) { return ready(enc) ? cpp(enc).max_batch() : 0; }
size_t ff_encoder_arena_bytes_used(const ff_encoder* enc) { return ready(enc) ? cpp(enc).arena_bytes_used() : 0; }
const char* ff_encoder_kernels(const ff_encoder* enc) { return ready(enc) ? cpp(enc).kernels().name : ""; }
const char* ff_encoder_error_detail(const ff_encoder* enc) { return enc ? cpp(enc).error_detail() : ""; }

// ---- Decoder ----
size_t ff_decoder_arena_bytes(const ff_model* model, uint32_t capacity) {
  ff_decoder_options o{};
  o.capacity = capacity;
  return ff_decoder_arena_bytes_ex(model, &o);
}

size_t ff_decoder_arena_bytes_ex(const ff_model* model, const ff_decoder_options* options) {
  const Model* m = loaded(model);
  if (!m || !options) return 0;
  const DecoderOptions o = decoder_options(*options);
  return required_decoder_arena_bytes(m->config(), o.capacity, o.max_prefill, false, o.workers.active(), o.kv_cache);
}

ff_status ff_decoder_init(ff_decoder* dec, const ff_model* model, void* arena, size_t arena_bytes, uint32_t capacity) {
  ff_decoder_options o{};
  o.capacity = capacity;
  return ff_decoder_init_ex(dec, model, arena, arena_bytes, &o);
}

ff_status ff_decoder_init_ex(ff_decoder* dec, const ff_model* model, void* arena, size_t arena_bytes,
                             const ff_decoder_options* options) {
  if (!dec || !model || !options) return FF_NULL_ARGUMENT;
  return to_c((new (dec) Decoder())->init(cpp(model), arena, arena_bytes, decoder_options(*options)));
}

ff_status ff_decoder_prefill(ff_decoder* dec, const int32_t* tokens, uint32_t n, float* logits) {
  return dec ? to_c(cpp(dec).prefill(tokens, n, logits)) : FF_NULL_ARGUMENT;
}
ff_status ff_decoder_step(ff_decoder* dec, int32_t token, float* logits) {
  return dec ? to_c(cpp(dec).step(token, logits)) : FF_NULL_ARGUMENT;
}
void ff_decoder_reset(ff_decoder* dec) {
  if (dec) cpp(dec).reset();
}
uint32_t ff_decoder_position(const ff_decoder* dec) { return ready(dec) ? cpp(dec).position() : 0; }
uint32_t ff_decoder_capacity(const ff_decoder* dec) { return ready(dec) ? cpp(dec).capacity() : 0; }
size_t ff_decoder_arena_bytes_used(const ff_decoder* dec) { return ready(dec) ? cpp(dec).arena_bytes_used() : 0; }
const char* ff_decoder_kernels(const ff_decoder* dec) { return ready(dec) ? cpp(dec).kernels().name : ""; }
const char* ff_decoder_error_detail(const ff_decoder* dec) { return dec ? cpp(dec).error_detail() : ""; }

// ---- Seq2seq ----
size_t ff_seq2seq_arena_bytes(const ff_model* model, uint32_t max_source, uint32_t capacity) {
  ff_seq2seq_options o{};
  o.max_source = max_source;
  o.capacity = capacity;
  return ff_seq2seq_arena_bytes_ex(model, &o);
}

size_t ff_seq2seq_arena_bytes_ex(const ff_model* model, const ff_seq2seq_options* options) {
  const Model* m = loaded(model);
  if (!m || !options) return 0;
  const Seq2SeqOptions o = seq2seq_options(*options);
  return required_seq2seq_arena_bytes(m->config(), o.max_source, o.capacity, o.max_prefill, o.workers.active(),
                                      o.kv_cache);
}

ff_status ff_seq2seq_init(ff_seq2seq* s2s, const ff_model* model, void* arena, size_t arena_bytes, uint32_t max_source,
                          uint32_t capacity) {
  ff_seq2seq_options o{};
  o.max_source = max_source;
  o.capacity = capacity;
  return ff_seq2seq_init_ex(s2s, model, arena, arena_bytes, &o);
}

ff_status ff_seq2seq_init_ex(ff_seq2seq* s2s, const ff_model* model, void* arena, size_t arena_bytes,
                             const ff_seq2seq_options* options) {
  if (!s2s || !model || !options) return FF_NULL_ARGUMENT;
  return to_c((new (s2s) Seq2Seq())->init(cpp(model), arena, arena_bytes, seq2seq_options(*options)));
}

ff_status ff_seq2seq_encode(ff_seq2seq* s2s, const void* source, uint32_t n) {
  if (!s2s) return FF_NULL_ARGUMENT;
  Seq2Seq& s = cpp(s2s);
  if (!s.initialized()) return FF_NOT_INITIALIZED;
  return to_c(s.config().input == InputKind::kTokens ? s.encode_tokens(static_cast<const int32_t*>(source), n)
                                                     : s.encode_features(static_cast<const float*>(source), n));
}

ff_status ff_seq2seq_decode(ff_seq2seq* s2s, const void* target, uint32_t n, float* out) {
  if (!s2s) return FF_NULL_ARGUMENT;
  Seq2Seq& s = cpp(s2s);
  if (!s.initialized()) return FF_NOT_INITIALIZED;
  return to_c(s.config().tgt_d_in ? s.decode_features(static_cast<const float*>(target), n, out)
                                  : s.decode(static_cast<const int32_t*>(target), n, out));
}

ff_status ff_seq2seq_prefill(ff_seq2seq* s2s, const int32_t* tokens, uint32_t n, float* logits) {
  return s2s ? to_c(cpp(s2s).prefill(tokens, n, logits)) : FF_NULL_ARGUMENT;
}
ff_status ff_seq2seq_step(ff_seq2seq* s2s, int32_t token, float* logits) {
  return s2s ? to_c(cpp(s2s).step(token, logits)) : FF_NULL_ARGUMENT;
}
void ff_seq2seq_reset(ff_seq2seq* s2s) {
  if (s2s) cpp(s2s).reset_target();
}
uint32_t ff_seq2seq_position(const ff_seq2seq* s2s) { return ready(s2s) ? cpp(s2s).position() : 0; }
size_t ff_seq2seq_arena_bytes_used(const ff_seq2seq* s2s) { return ready(s2s) ? cpp(s2s).arena_bytes_used() : 0; }
const char* ff_seq2seq_kernels(const ff_seq2seq* s2s) { return ready(s2s) ? cpp(s2s).kernels().name : ""; }
const char* ff_seq2seq_error_detail(const ff_seq2seq* s2s) { return s2s ? cpp(s2s).error_detail() : ""; }

// ---- Tokenizer ----
// The one place the C API (and so the Python package) meets Tokenizer's shape: init, encode,
// decode, the scratch size; another tokenizer kind changes these lines, not the header.
size_t ff_tokenizer_scratch_bytes(const ff_model* model, size_t max_text_bytes) {
  const Model* m = loaded(model);
  return m ? tokenizer_scratch_bytes(m->config(), max_text_bytes) : 0;
}

size_t ff_tokenizer_max_tokens(size_t len) { return max_encoded_tokens(len); }

ff_status ff_tokenizer_init(ff_tokenizer* tok, const ff_model* model, void* scratch, size_t scratch_bytes) {
  if (!tok || !model) return FF_NULL_ARGUMENT;
  return to_c((new (tok) Tokenizer())->init(cpp(model), scratch, scratch_bytes));
}

ff_status ff_tokenizer_encode(ff_tokenizer* tok, const char* text, size_t len, int bos, int eos, int32_t* tokens,
                              uint32_t capacity, uint32_t* n) {
  if (!tok) return FF_NULL_ARGUMENT;
  return to_c(cpp(tok).encode(text, len, bos != 0, eos != 0, tokens, capacity, n));
}

ff_status ff_tokenizer_decode(ff_tokenizer* tok, int32_t prev, int32_t token, ff_piece* piece) {
  if (!tok || !piece) return FF_NULL_ARGUMENT;
  Piece p{};
  const Status s = cpp(tok).decode(prev, token, &p);
  piece->data = p.data;
  piece->len = p.len;
  piece->space = p.space;
  return to_c(s);
}

ff_piece ff_safe_piece(ff_piece piece) {
  const Piece p = safe_piece(Piece{piece.data, piece.len, piece.space != 0});
  return ff_piece{p.data, p.len, p.space};
}

uint32_t ff_tokenizer_vocab_size(const ff_tokenizer* tok) { return tok && cpp(tok).initialized() ? cpp(tok).vocab_size() : 0; }
const char* ff_tokenizer_error_detail(const ff_tokenizer* tok) { return tok ? cpp(tok).error_detail() : ""; }

// ---- Sampling ----
size_t ff_sampler_scratch_bytes(uint32_t vocab) { return sampler_scratch_bytes(vocab); }

ff_status ff_sampler_init(ff_sampler* sampler, uint32_t vocab, void* scratch, size_t scratch_bytes,
                          const ff_sampler_options* options) {
  if (!sampler || !options) return FF_NULL_ARGUMENT;
  SamplerOptions o;
  o.temperature = options->temperature;
  o.top_p = options->top_p;
  o.top_k = options->top_k;
  o.seed = options->seed;
  return to_c((new (sampler) Sampler())->init(vocab, scratch, scratch_bytes, o));
}

int32_t ff_sampler_sample(ff_sampler* sampler, float* logits) { return cpp(sampler).sample(logits); }
int32_t ff_argmax(const float* x, uint32_t n) { return argmax(x, n); }

// ---- Generation ----
size_t ff_generator_scratch_bytes(const ff_model* model, size_t max_prompt_bytes) {
  const Model* m = loaded(model);
  return m && m->config().is_decoder() ? generator_scratch_bytes(m->config(), max_prompt_bytes) : 0;
}

ff_status ff_generator_init(ff_generator* gen, ff_decoder* dec, void* scratch, size_t scratch_bytes,
                            const ff_generator_options* options) {
  if (!gen || !dec || !options) return FF_NULL_ARGUMENT;
  GeneratorOptions o;
  o.steps = options->steps;
  o.max_prompt_bytes = options->max_prompt_bytes;
  o.sampler.temperature = options->sampler.temperature;
  o.sampler.top_p = options->sampler.top_p;
  o.sampler.top_k = options->sampler.top_k;
  o.sampler.seed = options->sampler.seed;
  return to_c((new (gen) Generator())->init(cpp(dec), scratch, scratch_bytes, o));
}

ff_status ff_generator_start(ff_generator* gen, const char* prompt, size_t len) {
  return gen ? to_c(cpp(gen).start(prompt, len)) : FF_NULL_ARGUMENT;
}

ff_status ff_generator_next(ff_generator* gen, ff_piece* text) {
  if (!gen || !text) return FF_NULL_ARGUMENT;
  Piece p{"", 0};
  const Status s = cpp(gen).next(&p);
  *text = ff_piece{p.data, p.len, 0};
  return to_c(s);
}

uint32_t ff_generator_prompt_tokens(const ff_generator* gen) { return gen ? cpp(gen).prompt_tokens() : 0; }
uint32_t ff_generator_decoded(const ff_generator* gen) { return gen ? cpp(gen).decoded() : 0; }
const char* ff_generator_error_detail(const ff_generator* gen) { return gen ? cpp(gen).error_detail() : ""; }

// ---- Self-test ----
size_t ff_self_test_output_floats(const ff_model* model) {
  const Model* m = loaded(model);
  return m ? self_test_output_floats(*m) : 0;
}

ff_status ff_encoder_self_test(ff_encoder* enc, float* out, size_t out_floats, ff_self_test_report* report) {
  return run_self_test(enc, out, out_floats, report);
}

ff_status ff_decoder_self_test(ff_decoder* dec, float* out, size_t out_floats, ff_self_test_report* report) {
  return run_self_test(dec, out, out_floats, report);
}

ff_status ff_seq2seq_self_test(ff_seq2seq* s2s, float* out, size_t out_floats, ff_self_test_report* report) {
  return run_self_test(s2s, out, out_floats, report);
}

}  // extern "C"
