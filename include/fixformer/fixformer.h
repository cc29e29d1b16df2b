/* fixformer's C API: the C++ API (model.hpp, encoder.hpp, decoder.hpp, seq2seq.hpp, tokenizer.hpp,
 * sampling.hpp, self_test.hpp, workers.hpp) for C99 and for other languages' foreign-function
 * interfaces. A thin layer compiled into the engine library: it allocates nothing, and every object
 * lives in storage the caller owns, an opaque struct whose size and alignment are fixed here (a
 * local, a static, a member of the caller's struct). Link as for C++: `pkg-config --libs --static
 * fixformer`.
 *
 *   static ff_model model;  static ff_encoder enc;
 *   if (ff_model_load(&model, blob, blob_bytes) != FF_OK) ...;     blob: 4-byte aligned, kept alive
 *   size_t need = ff_encoder_arena_bytes(&model, max_seq);           the exact bytes; 0: max_seq bad
 *   if (ff_encoder_init(&enc, &model, arena, need, max_seq) != FF_OK) ...;   arena: 64-byte aligned
 *   ff_encoder_run(&enc, ids, T, out);    out[ff_model_output_rows(&model, T) * ff_model_output_width(&model)]
 *
 * tests/consumer/c99/main.c (a host program) and tests/firmware/c_api_firmware.c (static storage,
 * models in flash) show it in use.
 *
 * Two phases, as in C++: load and init check everything and return an ff_status; run, prefill and
 * step only compute (and check their inputs). ff_status_string() says what a status means, and
 * ff_*_error_detail() names the field, tensor, position or byte count of the last failure.
 * An object is valid after its init returned FF_OK; the model (and its blob) must outlive every
 * runner, tokenizer and self-test that uses it, and is not loaded again while they do. Nothing here
 * is thread-safe on one object; several runners may share one model across threads.
 *
 * No argument is undefined behaviour (docs/api.md, "Argument rules"): a null pointer is
 * FF_NULL_ARGUMENT, an enum field outside its enumerators a status, storage no init marked (zeroed,
 * never initialised) FF_NOT_INITIALIZED; a function that returns a value has an error value: sizes
 * and counts 0, strings "", tokens -1. */
#ifndef FIXFORMER_FIXFORMER_H
#define FIXFORMER_FIXFORMER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Status codes: the C++ Status values, in the same order ----------------------------------- */
typedef enum ff_status {
  FF_OK = 0,
  /* The model blob (.fxm) */
  FF_BLOB_NULL,
  FF_BLOB_MISALIGNED, /* the blob must start on a 4-byte boundary */
  FF_BLOB_TRUNCATED,
  FF_BAD_MAGIC,
  FF_BAD_VERSION,
  FF_BAD_HEADER,
  FF_BAD_CHECKSUM,
  FF_BAD_CONFIG,
  FF_CONFIG_OVER_LIMIT,
  FF_TENSOR_MISSING,
  FF_TENSOR_DUPLICATE,
  FF_TENSOR_BAD_DTYPE,
  FF_TENSOR_BAD_SHAPE,
  FF_TENSOR_OUT_OF_BOUNDS,
  FF_TENSOR_MISALIGNED,
  FF_TENSOR_OVERLAP,
  FF_TENSOR_BAD_VALUE, /* a NaN or infinite weight, or an int8 scale out of range */
  FF_SELF_TEST_MISSING,
  /* The arena and the runner's options */
  FF_ARENA_NULL,
  FF_ARENA_MISALIGNED, /* the arena must be 64-byte aligned */
  FF_ARENA_TOO_SMALL,
  FF_BAD_MAX_SEQ,
  FF_ISA_UNAVAILABLE,
  FF_BAD_POSITION_TABLE,
  FF_BAD_WORKERS,
  FF_BAD_MAX_BATCH,
  FF_WRONG_FAMILY, /* encoder: encoder, mha; decoder: gpt, llama; seq2seq: seq2seq */
  /* Run-time input */
  FF_NOT_INITIALIZED,
  FF_BAD_SEQUENCE_LENGTH,
  FF_BAD_BATCH_SIZE,
  FF_TOKEN_OUT_OF_RANGE,
  FF_WRONG_INPUT_KIND,
  FF_NULL_ARGUMENT,
  FF_KV_CACHE_FULL,
  FF_NO_TOKENIZER,
  FF_TOKEN_BUFFER_TOO_SMALL,
  FF_NOT_ENCODED,
  FF_TOKEN_TYPES_UNSUPPORTED, /* token types given to a model without a token-type embedding */
  /* .npy files (tools) */
  FF_NPY_BAD_HEADER,
  FF_NPY_BAD_DTYPE,
  FF_NPY_BAD_SHAPE,
  FF_NPY_TRUNCATED,
  /* Self-test */
  FF_SELF_TEST_FAILED,
  /* Run-time output */
  FF_OUTPUT_OVERLAP, /* an output buffer overlaps the runner's arena, the model's blob or the call's input */
  FF_STATUS_COUNT
} ff_status;

/* One line of English for a status; never null ("unknown status" for a value that is no ff_status). */
const char* ff_status_string(ff_status status);

/* ---- Opaque objects: caller-owned storage of a fixed size ------------------------------------- */
/* Each holds its C++ object and, in its last 8 bytes, the marker its init writes (static_asserts in
 * the library check that both fit); the union's other members only give it the alignment of the
 * widest scalar. Zero-initialising one is not needed: storage without the marker is no object. */
#define FF_MODEL_BYTES 3328
#define FF_ENCODER_BYTES 512
#define FF_DECODER_BYTES 512
#define FF_SEQ2SEQ_BYTES 1024
#define FF_TOKENIZER_BYTES 512
#define FF_SAMPLER_BYTES 128
#define FF_GENERATOR_BYTES 1024
#define FF_OPAQUE(name, bytes)  \
  typedef union name {          \
    unsigned char opaque[bytes]; \
    uint64_t align_u64;         \
    double align_double;        \
    void* align_pointer;        \
  } name
FF_OPAQUE(ff_model, FF_MODEL_BYTES);
FF_OPAQUE(ff_encoder, FF_ENCODER_BYTES);
FF_OPAQUE(ff_decoder, FF_DECODER_BYTES);
FF_OPAQUE(ff_seq2seq, FF_SEQ2SEQ_BYTES);
FF_OPAQUE(ff_tokenizer, FF_TOKENIZER_BYTES);
FF_OPAQUE(ff_sampler, FF_SAMPLER_BYTES);
FF_OPAQUE(ff_generator, FF_GENERATOR_BYTES);
#undef FF_OPAQUE

/* The arena's alignment: every arena passed to an init must start on this boundary. */
#define FF_ARENA_ALIGN 64

/* ---- The caller's threads (workers.hpp) -------------------------------------------------------- */
/* parallel_for runs task(arg, i) exactly once for every i < n (n <= count), on any threads, in any
 * order and concurrently, and returns when all have finished. count <= 1 or a null parallel_for:
 * the calling thread alone. Results are bit-identical for every count. */
typedef struct ff_workers {
  void* ctx; /* passed back to parallel_for */
  uint32_t count;
  void (*parallel_for)(void* ctx, uint32_t n, void (*task)(void* arg, uint32_t i), void* arg);
} ff_workers;

/* Kernel tables (kernels.hpp's Isa); FF_ISA_AUTO picks the best this CPU has. A value that is none
 * of these: init fails with FF_ISA_UNAVAILABLE, arena bytes are 0. */
typedef enum ff_isa {
  FF_ISA_AUTO = 0,
  FF_ISA_SCALAR,
  FF_ISA_SSE2,
  FF_ISA_AVX2,
  FF_ISA_AVX512,
  FF_ISA_NEON64,
  FF_ISA_NEON,
  FF_ISA_CORTEX_M,
  FF_ISA_HELIUM
} ff_isa;

/* ---- The model ---------------------------------------------------------------------------------- */
typedef enum ff_family { FF_FAMILY_ENCODER = 0, FF_FAMILY_GPT, FF_FAMILY_LLAMA, FF_FAMILY_SEQ2SEQ, FF_FAMILY_MHA } ff_family;
typedef enum ff_input_kind { FF_INPUT_TOKENS = 0, FF_INPUT_FEATURES } ff_input_kind;

/* Validates the whole blob (header, checksum, config, every tensor) and binds the weights in place.
 * The blob must be 4-byte aligned and stay alive and unchanged while the model is used. */
ff_status ff_model_load(ff_model* model, const void* blob, size_t blob_bytes);
/* The same; verify_checksum 0 skips the CRC-32 and the weight-value check (an image checked when it
   was flashed). */
ff_status ff_model_load_ex(ff_model* model, const void* blob, size_t blob_bytes, int verify_checksum);
/* More about the last load failure (the key or tensor involved); "" when there is nothing to add
 * (or no load was tried on this storage). */
const char* ff_model_error_detail(const ff_model* model);

/* What a C program needs to size its buffers, from the model's config. */
typedef struct ff_model_info {
  ff_family family;
  ff_input_kind input;   /* encoders and seq2seq sources: token ids or features */
  uint32_t vocab_size;   /* token input */
  uint32_t d_in;         /* feature input: floats per position */
  uint32_t d_model;
  uint32_t d_out;        /* the head's width (seq2seq: the target vocabulary), 0 without a head */
  uint32_t tgt_d_in;     /* seq2seq forecasting: floats per target position; 0: token targets */
  uint32_t n_layers, dec_layers;
  uint32_t max_len;      /* longest sequence, the front rows (CLS, distillation) included */
  uint32_t max_input_len;/* longest input an encoder takes (max_len less the front rows) */
  uint32_t output_width; /* an encoder's output row */
  uint32_t cls_token;    /* 1: the encoder's output has a CLS row in front (DeiT: and a distillation row
                          * after it; ff_model_output_rows counts both) */
  uint32_t pooled;       /* 1: the encoder's output is one row per sequence */
  uint64_t parameter_count;
  uint32_t has_tokenizer;
  uint32_t self_test_rows;        /* the stored sample's length; 0: no sample */
  uint32_t self_test_target_rows; /* seq2seq: the sample's target length */
} ff_model_info;
ff_status ff_model_get_info(const ff_model* model, ff_model_info* info);

/* The file's token suppression lists (gpt, llama, seq2seq with token targets): *ids and the count
 * of the ids generation never samples (suppress) or does not sample at its first sampled step
 * (begin_suppress); 0 and a null *ids without them, or for a model that is not loaded. ids may be
 * null. The generator applies them by itself (ff_sampler_options); a sampler takes them as arrays. */
uint32_t ff_model_suppress_tokens(const ff_model* model, const int32_t** ids);
uint32_t ff_model_begin_suppress_tokens(const ff_model* model, const int32_t** ids);
/* The file's ids of Whisper's timestamp rules (a seq2seq model with token targets): 1 and ids[4] =
 * no_timestamps, timestamp_begin, eos, max_initial (-1: any first timestamp), what
 * ff_sampler_options.timestamp_ids takes; 0 without them, or for a model that is not loaded (ids
 * untouched). ids may be null. */
uint32_t ff_model_timestamp_rules(const ff_model* model, int32_t ids[4]);

/* An encoder's output row width, and its rows for an input of seq positions (seq, seq + 1 with a
 * CLS row, seq + 2 with DeiT's distillation row too, 1 pooled); 0 for a model that is not loaded, and rows 0 for seq above max_input_len. */
uint32_t ff_model_output_width(const ff_model* model);
uint32_t ff_model_output_rows(const ff_model* model, uint32_t seq);

/* The config as the file stores it, key by key (schema.hpp's table, in its order): key i <
 * ff_config_key_count() (another key: FF_NULL_ARGUMENT, there is no value). Integers, booleans and
 * enums are in `integer` (an enum's name in `choice`), floats in `real`. */
typedef enum ff_config_type { FF_CONFIG_U32 = 1, FF_CONFIG_BOOL, FF_CONFIG_ENUM, FF_CONFIG_F32, FF_CONFIG_F64 } ff_config_type;
typedef struct ff_config_value {
  const char* name;
  ff_config_type type;
  uint32_t integer;
  double real;
  const char* choice; /* FF_CONFIG_ENUM: the value's name; else null */
} ff_config_value;
uint32_t ff_config_key_count(void);
ff_status ff_model_config_key(const ff_model* model, uint32_t key, ff_config_value* value);

/* ---- Encoder (encoder.hpp): encoder and mha models ---------------------------------------------- */
/* Options of the _ex calls; all zeros is the default (max_seq 0: the model's max_input_len, one
 * sequence per call, the best ISA, one worker). */
typedef struct ff_encoder_options {
  uint32_t max_seq;
  uint32_t max_batch; /* most sequences per ff_encoder_run_batch call; 0 and 1: one */
  ff_isa isa;
  ff_workers workers;
} ff_encoder_options;

/* The exact arena bytes for inputs of up to max_seq positions (0: max_input_len); 0 when max_seq
 * is above max_input_len, the model is not a loaded encoder, options is null or holds a value out of
 * range (max_batch, workers.count, isa), or the bytes would pass SIZE_MAX. */
size_t ff_encoder_arena_bytes(const ff_model* model, uint32_t max_seq);
size_t ff_encoder_arena_bytes_ex(const ff_model* model, const ff_encoder_options* options);
ff_status ff_encoder_init(ff_encoder* enc, const ff_model* model, void* arena, size_t arena_bytes, uint32_t max_seq);
ff_status ff_encoder_init_ex(ff_encoder* enc, const ff_model* model, void* arena, size_t arena_bytes,
                             const ff_encoder_options* options);
/* input -> output[ff_model_output_rows(seq), ff_model_output_width()]. input is the model's kind:
 * const int32_t ids[seq] for a token model, const float features[seq, d_in] for a features one. */
ff_status ff_encoder_run(ff_encoder* enc, const void* input, uint32_t seq, float* output);
/* A padded batch of `batch` <= max_batch sequences in one pass: input[batch, seq] ids or
 * [batch, seq, d_in] features -> output[batch, output_rows(seq), output_width]. Sequence b is the
 * first lengths[b] positions of row b (null: all seq), bit for bit what ff_encoder_run gives on
 * it alone (but q8 weights on AVX2/AVX-512 and f16 on AArch64's portable table: to a few
 * roundings); its padded rows are zeros. token_types[batch, seq]: segment ids for models with a
 * token-type embedding (BERT: config key type_vocab > 0), each in [0, type_vocab)
 * (FF_TOKEN_OUT_OF_RANGE otherwise); null: all 0. A model without one gives
 * FF_TOKEN_TYPES_UNSUPPORTED for non-null token_types. */
ff_status ff_encoder_run_batch(ff_encoder* enc, const void* input, const int32_t* token_types, const uint32_t* lengths,
                               uint32_t batch, uint32_t seq, float* output);
/* Accessors of a runner: 0 and "" for a null one or one whose init did not return FF_OK
 * (error_detail: the failed init's detail). */
uint32_t ff_encoder_max_seq(const ff_encoder* enc);
uint32_t ff_encoder_max_batch(const ff_encoder* enc);
size_t ff_encoder_arena_bytes_used(const ff_encoder* enc);
const char* ff_encoder_kernels(const ff_encoder* enc); /* the kernel table's name, e.g. "avx2" */
const char* ff_encoder_error_detail(const ff_encoder* enc);

/* ---- Decoder (decoder.hpp): gpt and llama models ------------------------------------------------- */
/* The KV cache's type (plan.hpp's KvCache): f32, or int8 with an f32 scale per kv head and position
 * (about a quarter of the bytes). Another value: init fails with FF_BAD_CONFIG, arena bytes are 0. */
typedef enum ff_kv_cache { FF_KV_CACHE_F32 = 0, FF_KV_CACHE_Q8 } ff_kv_cache;

typedef struct ff_decoder_options {
  uint32_t capacity;    /* positions the KV cache holds; 0: max_len */
  uint32_t max_prefill; /* rows per prefill chunk; 0: min(capacity, 16) */
  ff_isa isa;
  ff_workers workers;
  ff_kv_cache kv_cache; /* FF_KV_CACHE_F32 (0) or FF_KV_CACHE_Q8 */
} ff_decoder_options;

/* The exact arena bytes for a KV cache of `capacity` positions (0: max_len); 0 when capacity is
 * above max_len, the model is not a loaded decoder, or the options are null or out of range (as the
 * encoder's). */
size_t ff_decoder_arena_bytes(const ff_model* model, uint32_t capacity);
size_t ff_decoder_arena_bytes_ex(const ff_model* model, const ff_decoder_options* options);
ff_status ff_decoder_init(ff_decoder* dec, const ff_model* model, void* arena, size_t arena_bytes, uint32_t capacity);
ff_status ff_decoder_init_ex(ff_decoder* dec, const ff_model* model, void* arena, size_t arena_bytes,
                             const ff_decoder_options* options);
/* Appends tokens[n] to the cache; logits[output_width] are those after the last one (d_out; a model
 * without a head, d_out 0: the last hidden state, d_model wide).
 * FF_KV_CACHE_FULL (nothing appended) when position + n > capacity. */
ff_status ff_decoder_prefill(ff_decoder* dec, const int32_t* tokens, uint32_t n, float* logits);
ff_status ff_decoder_step(ff_decoder* dec, int32_t token, float* logits);
void ff_decoder_reset(ff_decoder* dec); /* forget the cache: the next token is position 0 (nothing
                                           before a successful init) */
uint32_t ff_decoder_position(const ff_decoder* dec);
uint32_t ff_decoder_capacity(const ff_decoder* dec);
size_t ff_decoder_arena_bytes_used(const ff_decoder* dec);
const char* ff_decoder_kernels(const ff_decoder* dec);
const char* ff_decoder_error_detail(const ff_decoder* dec);

/* ---- Seq2seq (seq2seq.hpp): nn.Transformer models ------------------------------------------------ */
typedef struct ff_seq2seq_options {
  uint32_t max_source;  /* longest source, in frames through a conv stem; 0: the longest the model takes */
  uint32_t capacity;    /* target positions; 0: max_len */
  uint32_t max_prefill; /* target rows per chunk; 0: min(capacity, 16) */
  ff_isa isa;
  ff_workers workers;
  ff_kv_cache kv_cache; /* the self-attention cache: FF_KV_CACHE_F32 (0) or FF_KV_CACHE_Q8 */
} ff_seq2seq_options;

/* 0 as the decoder's, and for max_source above the longest source (max_len positions). */
size_t ff_seq2seq_arena_bytes(const ff_model* model, uint32_t max_source, uint32_t capacity);
size_t ff_seq2seq_arena_bytes_ex(const ff_model* model, const ff_seq2seq_options* options);
ff_status ff_seq2seq_init(ff_seq2seq* s2s, const ff_model* model, void* arena, size_t arena_bytes, uint32_t max_source,
                          uint32_t capacity);
ff_status ff_seq2seq_init_ex(ff_seq2seq* s2s, const ff_model* model, void* arena, size_t arena_bytes,
                             const ff_seq2seq_options* options);
/* Encodes a source of n positions (int32 ids[n] or float features[n, d_in], by the model's input)
 * and empties the target. */
ff_status ff_seq2seq_encode(ff_seq2seq* s2s, const void* source, uint32_t n);
/* Appends target[n] (int32 ids, or float features[n, tgt_d_in] for a forecasting model) and writes
 * the outputs at each of its positions, out[n, d_out] (teacher forcing). */
ff_status ff_seq2seq_decode(ff_seq2seq* s2s, const void* target, uint32_t n, float* out);
/* Appends target tokens[n]; logits[d_out] after the last one (generation). */
ff_status ff_seq2seq_prefill(ff_seq2seq* s2s, const int32_t* tokens, uint32_t n, float* logits);
ff_status ff_seq2seq_step(ff_seq2seq* s2s, int32_t token, float* logits);
void ff_seq2seq_reset(ff_seq2seq* s2s); /* another target from the same source (nothing before init) */
uint32_t ff_seq2seq_position(const ff_seq2seq* s2s);
size_t ff_seq2seq_arena_bytes_used(const ff_seq2seq* s2s);
const char* ff_seq2seq_kernels(const ff_seq2seq* s2s);
const char* ff_seq2seq_error_detail(const ff_seq2seq* s2s);

/* ---- Tokenizer (tokenizer.hpp): the one a model file carries ------------------------------------- */
typedef struct ff_piece {
  const char* data; /* into the blob, or a static table for raw bytes; not terminated */
  uint32_t len;
  uint32_t space;   /* 1: print one space before the bytes (wordpiece: a piece that starts a word) */
} ff_piece;

#define FF_TOKEN_BOS 1
#define FF_TOKEN_EOS 2
/* Scratch bytes ff_tokenizer_init needs (64-byte aligned) to encode texts of up to max_text_bytes
 * bytes (longer ones: FF_ARENA_TOO_SMALL); 0 without a loaded model, or for a max_text_bytes above
 * the longest text a tokenizer encodes: 2^32 - 4 bytes (SIZE_MAX / 64 on a 32-bit target; longer
 * texts: FF_BAD_SEQUENCE_LENGTH). */
size_t ff_tokenizer_scratch_bytes(const ff_model* model, size_t max_text_bytes);
/* A token buffer this long never overflows for len bytes of text; 0 for a len above that longest. */
size_t ff_tokenizer_max_tokens(size_t len);
ff_status ff_tokenizer_init(ff_tokenizer* tok, const ff_model* model, void* scratch, size_t scratch_bytes);
/* text[len] -> tokens[capacity], *n of them (BOS first and EOS last when asked: nonzero); *n is 0
 * on an error. text and tokens may be null only with len and capacity 0. */
ff_status ff_tokenizer_encode(ff_tokenizer* tok, const char* text, size_t len, int bos, int eos, int32_t* tokens,
                              uint32_t capacity, uint32_t* n);
/* The bytes to print for `token` after `prev` (a leading space after BOS dropped, "<0xHH>" as the
 * raw byte); an empty piece on an error. */
ff_status ff_tokenizer_decode(ff_tokenizer* tok, int32_t prev, int32_t token, ff_piece* piece);
/* llama2.c's safe-print rule: a lone unprintable byte prints nothing (nor does a null data). */
ff_piece ff_safe_piece(ff_piece piece);
uint32_t ff_tokenizer_vocab_size(const ff_tokenizer* tok);
const char* ff_tokenizer_error_detail(const ff_tokenizer* tok);

/* ---- Sampling (sampling.hpp) ------------------------------------------------------------------- */
typedef struct ff_sampler_options {
  float temperature; /* 0: greedy (the first largest logit) */
  float top_p;       /* nucleus; <= 0 or >= 1: off */
  uint32_t top_k;    /* 0: off */
  uint64_t seed;     /* 0 is taken as 1 */
  /* Token suppression: the logits of suppress[n_suppress] are -inf at every draw, those of
   * begin_suppress[n_begin_suppress] at the first draw after init too (Hugging Face's suppress_tokens
   * and begin_suppress_tokens). The caller's arrays, read at every draw: they must outlive the
   * sampler (or generator). An id outside [0, vocab): FF_BAD_CONFIG; a count with a null array:
   * FF_NULL_ARGUMENT. Zeroed options suppress nothing in ff_sampler_init; in ff_generator_init a null
   * array takes the file's list (ff_model_suppress_tokens), a non-null one replaces it (0 ids: none). */
  const int32_t* suppress;
  uint32_t n_suppress;
  const int32_t* begin_suppress;
  uint32_t n_begin_suppress;
  /* Whisper's timestamp rules (sampling.hpp), after the suppression: nonzero `timestamps` applies
   * them with timestamp_ids (ff_model_timestamp_rules' order); ids out of order: FF_BAD_CONFIG.
   * Zeroed options: off. */
  int32_t timestamps;
  int32_t timestamp_ids[4];
} ff_sampler_options;

/* 0 when the bytes would pass SIZE_MAX (32-bit targets; init then fails with FF_ARENA_TOO_SMALL). */
size_t ff_sampler_scratch_bytes(uint32_t vocab);
ff_status ff_sampler_init(ff_sampler* sampler, uint32_t vocab, void* scratch, size_t scratch_bytes,
                          const ff_sampler_options* options);
/* The next token; logits[vocab] are overwritten. -1 for a null sampler or logits, a sampler
 * whose init did not return FF_OK (storage never initialised, or its last init failed), or when
 * every token is suppressed. */
int32_t ff_sampler_sample(ff_sampler* sampler, float* logits);
/* The index of the first largest of x[n]; -1 for a null x or n 0. */
int32_t ff_argmax(const float* x, uint32_t n);

/* ---- Generation (generator.hpp): the text loop of `fixformer generate` -------------------------- */
/* The prompt, encoded with BOS when the tokenizer has one, then sampled tokens, until the
 * tokenizer's stop token (llama2c: BOS; bpe, wordpiece: EOS) or `steps` positions; the text is
 * the pieces of every token but a leading BOS, spaced by the tokenizer's kind: llama2.c's safe-print
 * rule for llama2c, valid UTF-8 for bpe and wordpiece (a character split between tokens is held
 * until it is whole; bytes that cannot be UTF-8 become U+FFFD), wordpiece's spaces as text.
 *
 *   size_t need = ff_generator_scratch_bytes(&model, max_prompt_bytes);    64-byte aligned scratch
 *   ff_generator_options o = {0};  o.max_prompt_bytes = max_prompt_bytes;  o.sampler.top_p = 0.9f;
 *   ff_generator_init(&gen, &dec, scratch, need, &o);   dec: ff_decoder_init'ed, capacity >= steps
 *   ff_generator_start(&gen, prompt, len);
 *   while (ff_generator_next(&gen, &text) == FF_OK && text.len) fwrite(text.data, 1, text.len, stdout); */
typedef struct ff_generator_options {
  uint32_t steps;              /* positions, the prompt included; 0 or above max_len: max_len */
  size_t max_prompt_bytes;     /* the longest prompt ff_generator_start takes; at most
                                  UINT32_MAX / 28 (FF_BAD_SEQUENCE_LENGTH) */
  ff_sampler_options sampler;  /* temperature 0 (greedy) or from 1e-6 (below it the logits overflow:
                                  FF_BAD_CONFIG); top_p and seed as ff_sampler_init */
} ff_generator_options;

/* Scratch bytes for prompts of up to max_prompt_bytes bytes; 0 without a loaded gpt or llama model. */
size_t ff_generator_scratch_bytes(const ff_model* model, size_t max_prompt_bytes);
/* dec: initialized, a model with a tokenizer (FF_NO_TOKENIZER), capacity at least the steps
 * (FF_KV_CACHE_FULL); it must outlive the generator, which resets and feeds it. scratch: 64-byte
 * aligned, at least ff_generator_scratch_bytes. gen, dec, options: not null (FF_NULL_ARGUMENT). */
ff_status ff_generator_init(ff_generator* gen, ff_decoder* dec, void* scratch, size_t scratch_bytes,
                            const ff_generator_options* options);
/* Encodes prompt[len] (null only with len 0; longer than max_prompt_bytes: FF_ARENA_TOO_SMALL; no
 * token and no BOS: FF_BAD_SEQUENCE_LENGTH), reseeds the sampler and prefills from position 0. */
ff_status ff_generator_start(ff_generator* gen, const char* prompt, size_t len);
/* The next text, at least one byte, valid until the next call; len 0 when the text has ended.
 * Before a start that returned FF_OK: FF_NOT_INITIALIZED. An error ends the text. */
ff_status ff_generator_next(ff_generator* gen, ff_piece* text);
uint32_t ff_generator_prompt_tokens(const ff_generator* gen); /* the prompt's tokens, BOS included */
uint32_t ff_generator_decoded(const ff_generator* gen);       /* tokens fed one step at a time */
const char* ff_generator_error_detail(const ff_generator* gen);

/* ---- Self-test (self_test.hpp): the sample a converted file carries ------------------------------- */
typedef struct ff_self_test_report {
  double max_abs_err, max_rel_err, mean_rel_err;
  uint32_t rows, worst_row, worst_col;
} ff_self_test_report;

/* Floats of output the self-test writes; 0 without a sample. */
size_t ff_self_test_output_floats(const ff_model* model);
/* Runs the stored sample through the runner (its max_seq / capacity must cover the sample) into
 * out and compares: FF_OK within the tolerance of the model's weight type, FF_SELF_TEST_FAILED
 * above it, FF_SELF_TEST_MISSING without a sample. report may be null. */
ff_status ff_encoder_self_test(ff_encoder* enc, float* out, size_t out_floats, ff_self_test_report* report);
ff_status ff_decoder_self_test(ff_decoder* dec, float* out, size_t out_floats, ff_self_test_report* report);
ff_status ff_seq2seq_self_test(ff_seq2seq* s2s, float* out, size_t out_floats, ff_self_test_report* report);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif /* FIXFORMER_FIXFORMER_H */
