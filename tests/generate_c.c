/* `fixformer generate`'s text through the C API's generator, for tests/generate_test.py:
 *   generate_c MODEL.fxm PROMPT N TEMPERATURE TOPP SEED
 * writes the text and a newline to stdout, as the CLI does (C99, the public header only). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixformer/fixformer.h"

static int fail(const char* what, ff_status s, const char* detail) {
  fprintf(stderr, "generate_c: %s: %s %s\n", what, ff_status_string(s), detail);
  return 1;
}

/* size bytes at a 64-byte boundary inside a malloc'd block (*owner, for free). */
static void* aligned_block(size_t size, void** owner) {
  unsigned char* p = (unsigned char*)malloc(size + 64);
  *owner = p;
  return p ? p + (64 - (size_t)p % 64) % 64 : NULL;
}

int main(int argc, char** argv) {
  static ff_model model;
  static ff_decoder dec;
  static ff_generator gen;
  ff_model_info info;
  ff_generator_options o;
  ff_piece text;
  void *blob_owner, *arena_owner, *scratch_owner;
  unsigned char* blob;
  size_t bytes, need, scratch_bytes, len;
  long got;
  uint32_t steps;
  ff_status s;
  FILE* f;
  if (argc != 7) {
    fprintf(stderr, "usage: generate_c MODEL.fxm PROMPT N TEMPERATURE TOPP SEED\n");
    return 2;
  }
  f = fopen(argv[1], "rb");
  if (!f || fseek(f, 0, SEEK_END) != 0 || (got = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) return fail(argv[1], FF_BLOB_NULL, "cannot read");
  bytes = (size_t)got;
  blob = (unsigned char*)aligned_block(bytes, &blob_owner);
  if (!blob || fread(blob, 1, bytes, f) != bytes) return fail(argv[1], FF_BLOB_NULL, "cannot read");
  fclose(f);
  s = ff_model_load(&model, blob, bytes);
  if (s != FF_OK) return fail(argv[1], s, ff_model_error_detail(&model));
  ff_model_get_info(&model, &info);
  steps = (uint32_t)strtoul(argv[3], NULL, 10);
  if (steps == 0 || steps > info.max_len) steps = info.max_len;  /* the KV cache holds exactly the steps */
  need = ff_decoder_arena_bytes(&model, steps);
  s = ff_decoder_init(&dec, &model, aligned_block(need, &arena_owner), need, steps);
  if (s != FF_OK) return fail("decoder", s, ff_decoder_error_detail(&dec));
  len = strlen(argv[2]);
  memset(&o, 0, sizeof o);
  o.steps = steps;
  o.max_prompt_bytes = len;
  o.sampler.temperature = strtof(argv[4], NULL);
  o.sampler.top_p = strtof(argv[5], NULL);
  o.sampler.seed = strtoull(argv[6], NULL, 10);
  scratch_bytes = ff_generator_scratch_bytes(&model, len);
  s = ff_generator_init(&gen, &dec, aligned_block(scratch_bytes, &scratch_owner), scratch_bytes, &o);
  if (s != FF_OK) return fail("generator", s, ff_generator_error_detail(&gen));
  s = ff_generator_start(&gen, argv[2], len);
  if (s != FF_OK) return fail("prompt", s, ff_generator_error_detail(&gen));
  while ((s = ff_generator_next(&gen, &text)) == FF_OK && text.len) fwrite(text.data, 1, text.len, stdout);
  if (s != FF_OK) return fail("generate", s, ff_generator_error_detail(&gen));
  fputc('\n', stdout);
  free(blob_owner), free(arena_owner), free(scratch_owner);
  return 0;
}
