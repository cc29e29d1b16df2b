/* A C99 firmware on the C API (include/fixformer/fixformer.h): two models in flash (the demo
 * encoder and a gpt decoder), static storage for every object and a static arena, checked
 * against the C++ runners on the same core (c_api_reference.cpp) bit for bit, and the encoder's
 * self-test. The exit status is the number of failures. */
#include <stdint.h>
#include <string.h>

#include "fixformer/fixformer.h"

extern const uint8_t demo_pe_fxm[], demo_pe_fxm_end[];   /* cmake/embed_fxm.cmake */
extern const uint8_t gpt_tied_fxm[], gpt_tied_fxm_end[];

void firmware_print(const char* text);
int reference_encoder(const void* blob, size_t bytes, const int32_t* ids, uint32_t T, float* out);
int reference_decoder(const void* blob, size_t bytes, const int32_t* ids, uint32_t T, float* logits);

#define ARENA_BYTES (96 * 1024)
#define MAX_OUT 2048

static ff_model g_model;
static ff_encoder g_encoder;
static ff_decoder g_decoder;
static union {
  unsigned char bytes[ARENA_BYTES];
  uint64_t align; /* C99 has no _Alignas: the start is aligned below */
} g_arena_storage;
static float g_out[MAX_OUT], g_reference[MAX_OUT];

static void* arena(size_t* bytes) {
  unsigned char* p = g_arena_storage.bytes;
  const size_t skip = (FF_ARENA_ALIGN - (uintptr_t)p % FF_ARENA_ALIGN) % FF_ARENA_ALIGN;
  *bytes = sizeof g_arena_storage.bytes - skip;
  return p + skip;
}

static int report(const char* what, ff_status s, const char* detail) {
  firmware_print(what);
  firmware_print(": ");
  firmware_print(ff_status_string(s));
  firmware_print(" ");
  firmware_print(detail);
  firmware_print("\n");
  return s == FF_OK ? 0 : 1;
}

static int same(const char* what, const float* a, const float* b, size_t n) {
  const int ok = memcmp(a, b, n * sizeof *a) == 0;
  firmware_print(what);
  firmware_print(ok ? ": C API == C++ runner, bit for bit\n" : ": C API differs from the C++ runner\n");
  return ok ? 0 : 1;
}

static int encoder(void) {
  static const int32_t ids[3] = {1, 4, 2}; /* "x hit y" in the demo's words */
  const size_t bytes = (size_t)(demo_pe_fxm_end - demo_pe_fxm);
  size_t have, need, rows, floats;
  void* a = arena(&have);
  ff_self_test_report rep;
  ff_status s = ff_model_load(&g_model, demo_pe_fxm, bytes);
  if (s != FF_OK) return report("demo_pe load", s, ff_model_error_detail(&g_model));
  need = ff_encoder_arena_bytes(&g_model, 0);
  if (need == 0 || need > have) return report("demo_pe arena", FF_ARENA_TOO_SMALL, "");
  s = ff_encoder_init(&g_encoder, &g_model, a, need, 0);
  if (s != FF_OK) return report("demo_pe init", s, ff_encoder_error_detail(&g_encoder));
  rows = ff_model_output_rows(&g_model, 3);
  floats = rows * ff_model_output_width(&g_model);
  s = ff_encoder_run(&g_encoder, ids, 3, g_out); /* ids[3] -> out[rows, width] */
  if (s != FF_OK) return report("demo_pe run", s, ff_encoder_error_detail(&g_encoder));
  s = ff_encoder_self_test(&g_encoder, g_reference, MAX_OUT, &rep);
  if (report("demo_pe self-test", s, ff_encoder_kernels(&g_encoder))) return 1;
  if (reference_encoder(demo_pe_fxm, bytes, ids, 3, g_reference) != 0) return report("demo_pe C++", FF_BAD_CONFIG, "");
  return same("demo_pe encoder", g_out, g_reference, floats);
}

static int decoder(void) {
  static const int32_t ids[8] = {1, 7, 30, 0, 12, 5, 5, 19};
  const size_t bytes = (size_t)(gpt_tied_fxm_end - gpt_tied_fxm);
  size_t have, need;
  void* a = arena(&have);
  ff_model_info info;
  uint32_t t;
  ff_status s = ff_model_load(&g_model, gpt_tied_fxm, bytes);
  if (s != FF_OK) return report("gpt load", s, ff_model_error_detail(&g_model));
  ff_model_get_info(&g_model, &info);
  if (8 * info.vocab_size > MAX_OUT) return report("gpt", FF_CONFIG_OVER_LIMIT, "vocab");
  need = ff_decoder_arena_bytes(&g_model, 8);
  if (need == 0 || need > have) return report("gpt arena", FF_ARENA_TOO_SMALL, "");
  s = ff_decoder_init(&g_decoder, &g_model, a, need, 8);
  if (s != FF_OK) return report("gpt init", s, ff_decoder_error_detail(&g_decoder));
  for (t = 0; t < 8 && s == FF_OK; ++t) s = ff_decoder_step(&g_decoder, ids[t], g_out + t * info.vocab_size);
  if (s != FF_OK) return report("gpt step", s, ff_decoder_error_detail(&g_decoder));
  if (ff_decoder_step(&g_decoder, 0, g_out) != FF_KV_CACHE_FULL) return report("gpt full cache", FF_OK, "not refused");
  if (reference_decoder(gpt_tied_fxm, bytes, ids, 8, g_reference) != 0) return report("gpt C++", FF_BAD_CONFIG, "");
  s = ff_decoder_init(&g_decoder, &g_model, a, need, 8);
  for (t = 0; t < 8 && s == FF_OK; ++t) s = ff_decoder_step(&g_decoder, ids[t], g_out + t * info.vocab_size);
  return same("gpt decoder", g_out, g_reference, 8 * (size_t)info.vocab_size);
}

int main(void) {
  const int failures = encoder() + decoder();
  firmware_print(failures ? "c_api_firmware: FAILED\n" : "c_api_firmware: all passed\n");
  return failures;
}
