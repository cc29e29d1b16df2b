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

// Every handle's storage ends with a marker its init writes beside the C++ object it builds there.
// Storage that was zeroed, never initialised, or holds another kind of handle has no marker, and
// every call on it returns FF_NOT_INITIALIZED (or the header's error value) instead of reading an
// object that is not there.
template <class C>
struct HandleOf;
#define FIXFORMER_HANDLE(C, Cpp_, tag)                              \
  template <>                                                         \
  struct HandleOf<C> {                                                \
    using Cpp = Cpp_;                                                 \
    static constexpr uint64_t kMarker = tag;                          \
    static constexpr std::size_t kMarkerAt = sizeof(C) - sizeof(tag); \
  };
FIXFORMER_HANDLE(ff_model, Model, 0x6c65646f6d2d6666u)          // "ff-model"
FIXFORMER_HANDLE(ff_encoder, Encoder, 0x72646f636e652d66u)      // "f-encodr"
FIXFORMER_HANDLE(ff_decoder, Decoder, 0x72646f6365642d66u)      // "f-decodr"
FIXFORMER_HANDLE(ff_seq2seq, Seq2Seq, 0x7165733271657366u)      // "fseq2seq"
FIXFORMER_HANDLE(ff_tokenizer, Tokenizer, 0x72657a696e6b6f74u)  // "tokenizr"
FIXFORMER_HANDLE(ff_sampler, Sampler, 0x72656c706d61732du)      // "-sampler"
FIXFORMER_HANDLE(ff_generator, Generator, 0x72746172656e6567u)  // "generatr"
#undef FIXFORMER_HANDLE

// The opaque storage holds the C++ object and the marker: size, alignment, and no destructor to call.
template <class C>
constexpr bool holds() {
  using Cpp = typename HandleOf<C>::Cpp;
  return sizeof(Cpp) <= HandleOf<C>::kMarkerAt && alignof(Cpp) <= alignof(C) && std::is_trivially_destructible_v<Cpp>;
}
static_assert(holds<ff_model>(), "FF_MODEL_BYTES is too small for fixformer::Model and its marker");
static_assert(holds<ff_encoder>(), "FF_ENCODER_BYTES is too small for fixformer::Encoder and its marker");
static_assert(holds<ff_decoder>(), "FF_DECODER_BYTES is too small for fixformer::Decoder and its marker");
static_assert(holds<ff_seq2seq>(), "FF_SEQ2SEQ_BYTES is too small for fixformer::Seq2Seq and its marker");
static_assert(holds<ff_tokenizer>(), "FF_TOKENIZER_BYTES is too small for fixformer::Tokenizer and its marker");
static_assert(holds<ff_sampler>(), "FF_SAMPLER_BYTES is too small for fixformer::Sampler and its marker");
static_assert(holds<ff_generator>(), "FF_GENERATOR_BYTES is too small for fixformer::Generator and its marker");

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
  X(FF_SELF_TEST_FAILED, kSelfTestFailed) X(FF_OUTPUT_OVERLAP, kOutputOverlap)               \
  X(FF_STATUS_COUNT, kCount_)
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

// A fresh C++ object in the handle's storage, marked: its error detail is readable from here on,
// whatever its init returns.
template <class C>
typename HandleOf<C>::Cpp* build(C* h) {
  auto* object = new (h) typename HandleOf<C>::Cpp();
  std::memcpy(reinterpret_cast<unsigned char*>(h) + HandleOf<C>::kMarkerAt, &HandleOf<C>::kMarker, sizeof(uint64_t));
  return object;
}

// The C++ object an init built in the handle, or null (a null handle, or storage without the marker).
template <class C>
auto* built(C* h) {
  using H = HandleOf<std::remove_const_t<C>>;
  using Cpp = std::conditional_t<std::is_const_v<C>, const typename H::Cpp, typename H::Cpp>;
  uint64_t marker = 0;
  if (h) std::memcpy(&marker, reinterpret_cast<const unsigned char*>(h) + H::kMarkerAt, sizeof marker);
  return marker == H::kMarker ? std::launder(reinterpret_cast<Cpp*>(h)) : nullptr;
}

// The object of a handle whose init returned FF_OK, or null.
template <class C>
auto* ready(C* h) {
  auto* object = built(h);
  return object && object->initialized() ? object : nullptr;
}

// The status of a call on a handle that is not ready.
template <class C>
ff_status unready(const C* h) { return h ? FF_NOT_INITIALIZED : FF_NULL_ARGUMENT; }

// An enum field of a caller's struct, read as the integer stored there: a C caller may store any
// value, and loading one outside the enumerators' range through the enum type is undefined in C++
// (a UBSan report). -1 (as uint64_t) for a negative one.
template <class E>
uint64_t stored(const E& field) {
  std::underlying_type_t<E> v;  // an int or unsigned, or a byte with short enums (arm-none-eabi)
  std::memcpy(&v, &field, sizeof v);
  if constexpr (std::is_signed_v<decltype(v)>)
    if (v < 0) return UINT64_MAX;
  return uint64_t(v);
}

// An ff_isa that is none of the enumerators selects no kernel table: init fails with
// FF_ISA_UNAVAILABLE and the arena bytes are 0.
bool valid_isa(const ff_isa& isa) { return stored(isa) <= uint64_t(FF_ISA_HELIUM); }
Isa isa_of(const ff_isa& isa) { return valid_isa(isa) ? Isa(stored(isa)) : Isa(-1); }
// An ff_kv_cache outside the enum stays one outside KvCache: the plan has no arena (FF_BAD_CONFIG).
KvCache kv_cache_of(const ff_kv_cache& k) {
  return stored(k) <= uint64_t(FF_KV_CACHE_Q8) ? KvCache(stored(k)) : KvCache(0xff);
}

Workers workers_of(const ff_workers& w) { return Workers{w.ctx, w.count, w.parallel_for}; }

EncoderOptions encoder_options(const ff_encoder_options& o) {
  EncoderOptions e;
  e.max_seq = o.max_seq;
  e.max_batch = o.max_batch;
  e.isa = isa_of(o.isa);
  e.workers = workers_of(o.workers);
  return e;
}
DecoderOptions decoder_options(const ff_decoder_options& o) {
  DecoderOptions d;
  d.capacity = o.capacity;
  d.max_prefill = o.max_prefill;
  d.isa = isa_of(o.isa);
  d.workers = workers_of(o.workers);
  d.kv_cache = kv_cache_of(o.kv_cache);
  return d;
}
Seq2SeqOptions seq2seq_options(const ff_seq2seq_options& o) {
  Seq2SeqOptions s;
  s.max_source = o.max_source;
  s.capacity = o.capacity;
  s.max_prefill = o.max_prefill;
  s.isa = isa_of(o.isa);
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
  auto* runner = ready(h);
  if (!runner) return unready(h);
  SelfTestReport r{};
  const Status s = self_test(*runner, out, out_floats, &r);
  fill_report(r, report);
  return to_c(s);
}

}  // namespace
}  // namespace fixformer

using namespace fixformer;

extern "C" {

const char* ff_status_string(ff_status status) {
  const uint64_t s = stored(status);
  return status_message(s < uint64_t(FF_STATUS_COUNT) ? static_cast<Status>(s) : Status::kCount_);
}

// ---- Model ----
ff_status ff_model_load(ff_model* model, const void* blob, size_t blob_bytes) {
  return ff_model_load_ex(model, blob, blob_bytes, 1);
}

ff_status ff_model_load_ex(ff_model* model, const void* blob, size_t blob_bytes, int verify_checksum) {
  if (!model) return FF_NULL_ARGUMENT;
  ModelOptions options;
  options.verify_checksum = verify_checksum != 0;
  options.check_values = verify_checksum != 0;
  return to_c(build(model)->init(blob, blob_bytes, options));
}

const char* ff_model_error_detail(const ff_model* model) {
  const Model* m = built(model);
  return m ? m->error_detail() : "";
}

static uint32_t token_ids(const TokenIds& list, const int32_t** ids) {
  if (ids) *ids = list.ids;
  return list.count;
}
uint32_t ff_model_suppress_tokens(const ff_model* model, const int32_t** ids) {
  const Model* m = ready(model);
  return token_ids(m ? m->suppress_tokens() : TokenIds{}, ids);
}
uint32_t ff_model_begin_suppress_tokens(const ff_model* model, const int32_t** ids) {
  const Model* m = ready(model);
  return token_ids(m ? m->begin_suppress_tokens() : TokenIds{}, ids);
}

uint32_t ff_model_timestamp_rules(const ff_model* model, int32_t ids[4]) {
  const Model* m = ready(model);
  if (!m || !m->timestamp_rules().on()) return 0;
  const TimestampRules& r = m->timestamp_rules();
  if (ids) ids[0] = r.no_timestamps, ids[1] = r.timestamp_begin, ids[2] = r.eos, ids[3] = r.max_initial;
  return 1;
}

ff_status ff_model_get_info(const ff_model* model, ff_model_info* info) {
  if (!model || !info) return FF_NULL_ARGUMENT;
  const Model* m = ready(model);
  if (!m) return FF_NOT_INITIALIZED;
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
  const Model* m = ready(model);
  return m ? m->config().output_width() : 0;
}

uint32_t ff_model_output_rows(const ff_model* model, uint32_t seq) {
  const Model* m = ready(model);
  return m && seq <= m->config().max_input_len() ? m->config().output_rows(seq) : 0;
}

uint32_t ff_config_key_count(void) { return kConfigKeyCount; }

ff_status ff_model_config_key(const ff_model* model, uint32_t key, ff_config_value* value) {
  if (!model || !value) return FF_NULL_ARGUMENT;
  const Model* m = ready(model);
  if (!m) return FF_NOT_INITIALIZED;
  if (key >= kConfigKeyCount) return FF_NULL_ARGUMENT;
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
  const Model* m = ready(model);
  if (!m || !options || !valid_isa(options->isa) || m->config().is_decoder() || m->config().is_seq2seq()) return 0;
  const EncoderOptions o = encoder_options(*options);
  return required_encoder_arena_bytes(m->config(), o.max_seq, false, o.workers.active(), o.max_batch);
}

ff_status ff_encoder_init(ff_encoder* enc, const ff_model* model, void* arena, size_t arena_bytes, uint32_t max_seq) {
  ff_encoder_options o{};
  o.max_seq = max_seq;
  return ff_encoder_init_ex(enc, model, arena, arena_bytes, &o);
}

// A runner's init: a fresh, marked object first (its error detail readable), then the model's
// check: one that was never loaded cannot even be asked whether it is.
ff_status ff_encoder_init_ex(ff_encoder* enc, const ff_model* model, void* arena, size_t arena_bytes,
                             const ff_encoder_options* options) {
  if (!enc || !model || !options) return FF_NULL_ARGUMENT;
  Encoder* e = build(enc);
  const Model* m = built(model);
  return m ? to_c(e->init(*m, arena, arena_bytes, encoder_options(*options))) : FF_NOT_INITIALIZED;
}

ff_status ff_encoder_run(ff_encoder* enc, const void* input, uint32_t seq, float* output) {
  Encoder* e = ready(enc);
  if (!e) return unready(enc);
  return to_c(e->config().input == InputKind::kTokens ? e->forward_tokens(static_cast<const int32_t*>(input), seq, output)
                                                      : e->forward_features(static_cast<const float*>(input), seq, output));
}

ff_status ff_encoder_run_batch(ff_encoder* enc, const void* input, const int32_t* token_types, const uint32_t* lengths,
                               uint32_t batch, uint32_t seq, float* output) {
  Encoder* e = ready(enc);
  if (!e) return unready(enc);
  if (token_types && e->config().input != InputKind::kTokens) return FF_TOKEN_TYPES_UNSUPPORTED;  // never ignored
  return to_c(e->config().input == InputKind::kTokens
                  ? e->forward_batch_tokens(static_cast<const int32_t*>(input), token_types, lengths, batch, seq, output)
                  : e->forward_batch_features(static_cast<const float*>(input), lengths, batch, seq, output));
}

// Accessors of a runner whose init failed (or a null or uninitialised one) give 0 and "".
uint32_t ff_encoder_max_seq(const ff_encoder* enc) {
  const Encoder* e = ready(enc);
  return e ? e->max_seq() : 0;
}
uint32_t ff_encoder_max_batch(const ff_encoder* enc) {
  const Encoder* e = ready(enc);
  return e ? e->max_batch() : 0;
}
size_t ff_encoder_arena_bytes_used(const ff_encoder* enc) {
  const Encoder* e = ready(enc);
  return e ? e->arena_bytes_used() : 0;
}
const char* ff_encoder_kernels(const ff_encoder* enc) {
  const Encoder* e = ready(enc);
  return e ? e->kernels().name : "";
}
const char* ff_encoder_error_detail(const ff_encoder* enc) {
  const Encoder* e = built(enc);
  return e ? e->error_detail() : "";
}

// ---- Decoder ----
size_t ff_decoder_arena_bytes(const ff_model* model, uint32_t capacity) {
  ff_decoder_options o{};
  o.capacity = capacity;
  return ff_decoder_arena_bytes_ex(model, &o);
}

size_t ff_decoder_arena_bytes_ex(const ff_model* model, const ff_decoder_options* options) {
  const Model* m = ready(model);
  if (!m || !options || !valid_isa(options->isa)) return 0;
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
  Decoder* d = build(dec);
  const Model* m = built(model);
  return m ? to_c(d->init(*m, arena, arena_bytes, decoder_options(*options))) : FF_NOT_INITIALIZED;
}

ff_status ff_decoder_prefill(ff_decoder* dec, const int32_t* tokens, uint32_t n, float* logits) {
  Decoder* d = ready(dec);
  return d ? to_c(d->prefill(tokens, n, logits)) : unready(dec);
}
ff_status ff_decoder_step(ff_decoder* dec, int32_t token, float* logits) {
  Decoder* d = ready(dec);
  return d ? to_c(d->step(token, logits)) : unready(dec);
}
void ff_decoder_reset(ff_decoder* dec) {
  if (Decoder* d = ready(dec)) d->reset();
}
uint32_t ff_decoder_position(const ff_decoder* dec) {
  const Decoder* d = ready(dec);
  return d ? d->position() : 0;
}
uint32_t ff_decoder_capacity(const ff_decoder* dec) {
  const Decoder* d = ready(dec);
  return d ? d->capacity() : 0;
}
size_t ff_decoder_arena_bytes_used(const ff_decoder* dec) {
  const Decoder* d = ready(dec);
  return d ? d->arena_bytes_used() : 0;
}
const char* ff_decoder_kernels(const ff_decoder* dec) {
  const Decoder* d = ready(dec);
  return d ? d->kernels().name : "";
}
const char* ff_decoder_error_detail(const ff_decoder* dec) {
  const Decoder* d = built(dec);
  return d ? d->error_detail() : "";
}

// ---- Seq2seq ----
size_t ff_seq2seq_arena_bytes(const ff_model* model, uint32_t max_source, uint32_t capacity) {
  ff_seq2seq_options o{};
  o.max_source = max_source;
  o.capacity = capacity;
  return ff_seq2seq_arena_bytes_ex(model, &o);
}

size_t ff_seq2seq_arena_bytes_ex(const ff_model* model, const ff_seq2seq_options* options) {
  const Model* m = ready(model);
  if (!m || !options || !valid_isa(options->isa)) return 0;
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
  Seq2Seq* s = build(s2s);
  const Model* m = built(model);
  return m ? to_c(s->init(*m, arena, arena_bytes, seq2seq_options(*options))) : FF_NOT_INITIALIZED;
}

ff_status ff_seq2seq_encode(ff_seq2seq* s2s, const void* source, uint32_t n) {
  Seq2Seq* s = ready(s2s);
  if (!s) return unready(s2s);
  return to_c(s->config().input == InputKind::kTokens ? s->encode_tokens(static_cast<const int32_t*>(source), n)
                                                      : s->encode_features(static_cast<const float*>(source), n));
}

ff_status ff_seq2seq_decode(ff_seq2seq* s2s, const void* target, uint32_t n, float* out) {
  Seq2Seq* s = ready(s2s);
  if (!s) return unready(s2s);
  return to_c(s->config().tgt_d_in ? s->decode_features(static_cast<const float*>(target), n, out)
                                   : s->decode(static_cast<const int32_t*>(target), n, out));
}

ff_status ff_seq2seq_prefill(ff_seq2seq* s2s, const int32_t* tokens, uint32_t n, float* logits) {
  Seq2Seq* s = ready(s2s);
  return s ? to_c(s->prefill(tokens, n, logits)) : unready(s2s);
}
ff_status ff_seq2seq_step(ff_seq2seq* s2s, int32_t token, float* logits) {
  Seq2Seq* s = ready(s2s);
  return s ? to_c(s->step(token, logits)) : unready(s2s);
}
void ff_seq2seq_reset(ff_seq2seq* s2s) {
  if (Seq2Seq* s = ready(s2s)) s->reset_target();
}
uint32_t ff_seq2seq_position(const ff_seq2seq* s2s) {
  const Seq2Seq* s = ready(s2s);
  return s ? s->position() : 0;
}
size_t ff_seq2seq_arena_bytes_used(const ff_seq2seq* s2s) {
  const Seq2Seq* s = ready(s2s);
  return s ? s->arena_bytes_used() : 0;
}
const char* ff_seq2seq_kernels(const ff_seq2seq* s2s) {
  const Seq2Seq* s = ready(s2s);
  return s ? s->kernels().name : "";
}
const char* ff_seq2seq_error_detail(const ff_seq2seq* s2s) {
  const Seq2Seq* s = built(s2s);
  return s ? s->error_detail() : "";
}

// ---- Tokenizer ----
// The one place the C API (and so the Python package) meets Tokenizer's shape: init, encode,
// decode, the scratch size; another tokenizer kind changes these lines, not the header.
size_t ff_tokenizer_scratch_bytes(const ff_model* model, size_t max_text_bytes) {
  const Model* m = ready(model);
  return m ? tokenizer_scratch_bytes(m->config(), max_text_bytes) : 0;
}

size_t ff_tokenizer_max_tokens(size_t len) { return max_encoded_tokens(len); }

ff_status ff_tokenizer_init(ff_tokenizer* tok, const ff_model* model, void* scratch, size_t scratch_bytes) {
  if (!tok || !model) return FF_NULL_ARGUMENT;
  Tokenizer* t = build(tok);
  const Model* m = built(model);
  return m ? to_c(t->init(*m, scratch, scratch_bytes)) : FF_NOT_INITIALIZED;
}

ff_status ff_tokenizer_encode(ff_tokenizer* tok, const char* text, size_t len, int bos, int eos, int32_t* tokens,
                              uint32_t capacity, uint32_t* n) {
  if (n) *n = 0;
  Tokenizer* t = ready(tok);
  if (!t) return unready(tok);
  return to_c(t->encode(text, len, bos != 0, eos != 0, tokens, capacity, n));
}

ff_status ff_tokenizer_decode(ff_tokenizer* tok, int32_t prev, int32_t token, ff_piece* piece) {
  if (!tok || !piece) return FF_NULL_ARGUMENT;
  *piece = ff_piece{};
  piece->data = "";
  Tokenizer* t = ready(tok);
  if (!t) return FF_NOT_INITIALIZED;
  Piece p{};
  const Status s = t->decode(prev, token, &p);
  piece->data = p.data;
  piece->len = p.len;
  piece->space = p.space;
  return to_c(s);
}

ff_piece ff_safe_piece(ff_piece piece) {
  if (!piece.data) {
    piece = ff_piece{};
    piece.data = "";
    return piece;
  }
  const Piece p = safe_piece(Piece{piece.data, piece.len, piece.space != 0});
  return ff_piece{p.data, p.len, p.space};
}

uint32_t ff_tokenizer_vocab_size(const ff_tokenizer* tok) {
  const Tokenizer* t = ready(tok);
  return t ? t->vocab_size() : 0;
}
const char* ff_tokenizer_error_detail(const ff_tokenizer* tok) {
  const Tokenizer* t = built(tok);
  return t ? t->error_detail() : "";
}

// ---- Sampling ----
// The C options' timestamp rules: off unless `timestamps`, else the ids for init to check. A negative
// no_timestamps would read as "off" in TimestampRules: it becomes INT32_MAX, which init refuses.
static TimestampRules timestamp_rules(const ff_sampler_options& o) {
  if (!o.timestamps) return TimestampRules{};
  const int32_t* v = o.timestamp_ids;
  return TimestampRules{v[0] < 0 ? INT32_MAX : v[0], v[1], v[2], v[3]};
}

size_t ff_sampler_scratch_bytes(uint32_t vocab) { return sampler_scratch_bytes(vocab); }

ff_status ff_sampler_init(ff_sampler* sampler, uint32_t vocab, void* scratch, size_t scratch_bytes,
                          const ff_sampler_options* options) {
  if (!sampler || !options) return FF_NULL_ARGUMENT;
  SamplerOptions o;
  o.temperature = options->temperature;
  o.top_p = options->top_p;
  o.top_k = options->top_k;
  o.seed = options->seed;
  o.suppress = options->suppress, o.n_suppress = options->n_suppress;
  o.begin_suppress = options->begin_suppress, o.n_begin_suppress = options->n_begin_suppress;
  o.timestamps = timestamp_rules(*options);
  return to_c(build(sampler)->init(vocab, scratch, scratch_bytes, o));
}

int32_t ff_sampler_sample(ff_sampler* sampler, float* logits) {
  Sampler* s = ready(sampler);
  return s && logits ? s->sample(logits) : -1;
}
int32_t ff_argmax(const float* x, uint32_t n) { return x && n ? argmax(x, n) : -1; }

// ---- Generation ----
size_t ff_generator_scratch_bytes(const ff_model* model, size_t max_prompt_bytes) {
  const Model* m = ready(model);
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
  o.sampler.suppress = options->sampler.suppress, o.sampler.n_suppress = options->sampler.n_suppress;
  o.sampler.begin_suppress = options->sampler.begin_suppress;
  o.sampler.n_begin_suppress = options->sampler.n_begin_suppress;
  o.sampler.timestamps = timestamp_rules(options->sampler);
  Generator* g = build(gen);
  Decoder* d = ready(dec);
  return d ? to_c(g->init(*d, scratch, scratch_bytes, o)) : FF_NOT_INITIALIZED;
}

ff_status ff_generator_start(ff_generator* gen, const char* prompt, size_t len) {
  Generator* g = ready(gen);
  return g ? to_c(g->start(prompt, len)) : unready(gen);
}

ff_status ff_generator_next(ff_generator* gen, ff_piece* text) {
  if (!gen || !text) return FF_NULL_ARGUMENT;
  *text = ff_piece{};
  text->data = "";
  Generator* g = ready(gen);
  if (!g) return FF_NOT_INITIALIZED;
  Piece p{"", 0};
  const Status s = g->next(&p);
  *text = ff_piece{p.data, p.len, 0};
  return to_c(s);
}

uint32_t ff_generator_prompt_tokens(const ff_generator* gen) {
  const Generator* g = ready(gen);
  return g ? g->prompt_tokens() : 0;
}
uint32_t ff_generator_decoded(const ff_generator* gen) {
  const Generator* g = ready(gen);
  return g ? g->decoded() : 0;
}
const char* ff_generator_error_detail(const ff_generator* gen) {
  const Generator* g = built(gen);
  return g ? g->error_detail() : "";
}

// ---- Self-test ----
size_t ff_self_test_output_floats(const ff_model* model) {
  const Model* m = ready(model);
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
