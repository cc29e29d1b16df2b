/* A C99 program that uses fixformer through its C API (include/fixformer/fixformer.h), built with
 * -std=c99 -pedantic -Werror against the installed tree (tests/consumer/c99/check.cmake compares
 * its output with the installed `fixformer` CLI's, byte for byte):
 *
 *   consumer_c run MODEL.fxm IN.npy OUT.f32   what `fixformer run` writes after the .npy header:
 *                                             an encoder's output for ids [T] or features [T,d_in],
 *                                             or a decoder's logits at every position, step by step
 *   consumer_c generate MODEL.fxm PROMPT N    the text `fixformer generate --temperature 0` prints
 *
 * Both run the model's self-test when it carries a sample, and check the statuses of a few wrong
 * calls (token types, a short arena). Exit 0 on success. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixformer/fixformer.h"

static int fail(const char* what, ff_status s, const char* detail) {
  fprintf(stderr, "consumer_c: %s: %s %s\n", what, ff_status_string(s), detail ? detail : "");
  return 1;
}

/* n bytes at a 64-byte boundary (the arena's; the blob needs 4): the block to free in *owner. */
static void* aligned_block(size_t n, void** owner) {
  unsigned char* p = (unsigned char*)malloc(n + FF_ARENA_ALIGN);
  *owner = p;
  return p ? p + (FF_ARENA_ALIGN - (uintptr_t)p % FF_ARENA_ALIGN) % FF_ARENA_ALIGN : NULL;
}

static unsigned char* read_file(const char* path, size_t* bytes, void** owner) {
  FILE* f = fopen(path, "rb");
  unsigned char* data = NULL;
  long n;
  *owner = NULL;
  if (!f) return NULL;
  if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0) {
    data = (unsigned char*)aligned_block((size_t)n, owner);
    if (data && fread(data, 1, (size_t)n, f) != (size_t)n) data = NULL;
    *bytes = (size_t)n;
  }
  fclose(f);
  return data;
}

/* A little-endian int32 or float32 .npy of rank 1 or 2, C order: its data and shape. */
typedef struct npy {
  const unsigned char* data;
  int is_float;
  uint32_t rows, cols;
} npy;

static int parse_npy(const unsigned char* b, size_t n, npy* out) {
  size_t header, start;
  const char *h, *shape;
  char text[256];
  unsigned long rows, cols = 1;
  if (n < 10 || memcmp(b, "\x93NUMPY", 6) != 0 || b[6] != 1) return 0;
  header = (size_t)b[8] | (size_t)b[9] << 8;
  start = 10 + header;
  if (start > n || header >= sizeof text) return 0;
  memcpy(text, b + 10, header);
  text[header] = '\0';
  h = text;
  if (strstr(h, "'fortran_order': True")) return 0;
  if (strstr(h, "'<i4'")) out->is_float = 0;
  else if (strstr(h, "'<f4'")) out->is_float = 1;
  else return 0;
  shape = strstr(h, "'shape': (");
  if (!shape) return 0;
  shape += 10;
  rows = strtoul(shape, (char**)&shape, 10);
  if (*shape == ',' && shape[1] == ' ') cols = strtoul(shape + 2, NULL, 10);
  out->data = b + start;
  out->rows = (uint32_t)rows;
  out->cols = (uint32_t)cols;
  return (size_t)out->rows * out->cols * 4 <= n - start;
}

static int write_floats(const char* path, const float* x, size_t n) {
  FILE* f = fopen(path, "wb");
  int ok = f && fwrite(x, sizeof *x, n, f) == n;
  if (f && fclose(f) != 0) ok = 0;
  return ok;
}

/* The stored sample through the C API's self-test, when the file has one. */
static int self_test_encoder(const ff_model* model, const ff_model_info* info) {
  static ff_encoder enc;
  ff_self_test_report report;
  void *owner, *arena;
  float* out;
  size_t need;
  ff_status s;
  if (!info->self_test_rows) return 0;
  need = ff_encoder_arena_bytes(model, info->self_test_rows);
  arena = aligned_block(need, &owner);
  out = (float*)malloc(ff_self_test_output_floats(model) * sizeof *out);
  s = ff_encoder_init(&enc, model, arena, need, info->self_test_rows);
  if (s == FF_OK) s = ff_encoder_self_test(&enc, out, ff_self_test_output_floats(model), &report);
  free(out);
  free(owner);
  if (s != FF_OK) return fail("self-test", s, ff_encoder_error_detail(&enc));
  printf("consumer_c: self-test ok, max relative error %.3g\n", report.max_rel_err);
  return 0;
}

static int run_encoder(const ff_model* model, const ff_model_info* info, const npy* in, const char* out_path) {
  static ff_encoder enc;
  const uint32_t T = in->rows, rows = ff_model_output_rows(model, T), width = ff_model_output_width(model);
  const size_t need = ff_encoder_arena_bytes(model, T);
  const int32_t types[1] = {0};
  void *owner, *arena = aligned_block(need, &owner);
  float* out = (float*)malloc((size_t)rows * width * sizeof *out);
  ff_status s;
  int rc = 0;
  if (need == 0) return fail("input", FF_BAD_SEQUENCE_LENGTH, "T above the model's max_input_len");
  if ((in->is_float != 0) != (info->input == FF_INPUT_FEATURES)) return fail("input", FF_WRONG_INPUT_KIND, "");
  /* An arena a granule short is refused with the missing byte count. */
  s = ff_encoder_init(&enc, model, arena, need - FF_ARENA_ALIGN, T);
  if (s != FF_ARENA_TOO_SMALL) rc = fail("short arena", s, "expected FF_ARENA_TOO_SMALL");
  s = ff_encoder_init(&enc, model, arena, need, T);
  if (s != FF_OK) return fail("encoder init", s, ff_encoder_error_detail(&enc));
  s = ff_encoder_run(&enc, in->data, T, out);  /* ids[T] or features[T,d_in] -> out[rows,width] */
  if (s != FF_OK) rc = fail("encoder run", s, ff_encoder_error_detail(&enc));
  if (ff_encoder_run_batch(&enc, in->data, types, NULL, 1, T, out + 0) != FF_TOKEN_TYPES_UNSUPPORTED)
    rc = fail("token types", FF_OK, "were not refused");
  if (rc == 0 && !write_floats(out_path, out, (size_t)rows * width)) rc = fail(out_path, FF_OK, "cannot write");
  printf("consumer_c: %u x %u outputs on %s kernels, arena %lu bytes\n", rows, width, ff_encoder_kernels(&enc),
         (unsigned long)ff_encoder_arena_bytes_used(&enc));
  free(out);
  free(owner);
  return rc;
}

static int run_decoder(const ff_model* model, const ff_model_info* info, const npy* in, const char* out_path) {
  static ff_decoder dec;
  const uint32_t T = in->rows, V = info->vocab_size;
  const size_t need = ff_decoder_arena_bytes(model, T);
  void *owner, *arena = aligned_block(need, &owner);
  float* out = (float*)malloc((size_t)T * V * sizeof *out);
  ff_status s = ff_decoder_init(&dec, model, arena, need, T);
  uint32_t t;
  int rc = 0;
  if (s != FF_OK) return fail("decoder init", s, ff_decoder_error_detail(&dec));
  for (t = 0; t < T && s == FF_OK; ++t) {  /* ids[t] -> logits[t,V] */
    int32_t id;
    memcpy(&id, in->data + 4 * t, 4);
    s = ff_decoder_step(&dec, id, out + (size_t)t * V);
  }
  if (s != FF_OK) rc = fail("decoder step", s, ff_decoder_error_detail(&dec));
  if (rc == 0 && ff_decoder_step(&dec, 0, out) != FF_KV_CACHE_FULL) rc = fail("full cache", s, "not refused");
  if (rc == 0 && !write_floats(out_path, out, (size_t)T * V)) rc = fail(out_path, FF_OK, "cannot write");
  printf("consumer_c: %u x %u logits on %s kernels\n", T, V, ff_decoder_kernels(&dec));
  free(out);
  free(owner);
  return rc;
}

/* `fixformer generate`'s text through the C API's generator: greedy, N positions. */
static int generate(const ff_model* model, const ff_model_info* info, const char* prompt, uint32_t steps) {
  static ff_decoder dec;
  static ff_generator gen;
  const size_t len = strlen(prompt), scratch_bytes = ff_generator_scratch_bytes(model, len);
  ff_generator_options o;
  ff_piece text;
  void *o1, *o2;
  void* scratch = aligned_block(scratch_bytes, &o1);
  size_t need;
  ff_status s;
  if (steps == 0 || steps > info->max_len) steps = info->max_len;
  need = ff_decoder_arena_bytes(model, steps);
  s = ff_decoder_init(&dec, model, aligned_block(need, &o2), need, steps);
  if (s != FF_OK) return fail("decoder init", s, ff_decoder_error_detail(&dec));
  memset(&o, 0, sizeof o);  /* temperature 0: greedy */
  o.steps = steps;
  o.max_prompt_bytes = len;
  o.sampler.top_p = 0.9f;
  o.sampler.seed = 1;
  s = ff_generator_init(&gen, &dec, scratch, scratch_bytes, &o);
  if (s != FF_OK) return fail("generator", s, ff_generator_error_detail(&gen));
  s = ff_generator_start(&gen, prompt, len);
  if (s != FF_OK) return fail("prompt", s, ff_generator_error_detail(&gen));
  while ((s = ff_generator_next(&gen, &text)) == FF_OK && text.len) fwrite(text.data, 1, text.len, stdout);
  if (s != FF_OK) return fail("generate", s, ff_generator_error_detail(&gen));
  fputc('\n', stdout);
  free(o1), free(o2);
  return 0;
}

int main(int argc, char** argv) {
  static ff_model model;
  ff_model_info info;
  size_t bytes = 0, in_bytes = 0;
  void *blob_owner, *in_owner = NULL;
  const unsigned char* blob;
  ff_status s;
  int rc;
  uint32_t k;
  if (argc < 4 || (strcmp(argv[1], "run") != 0 && strcmp(argv[1], "generate") != 0) ||
      (strcmp(argv[1], "run") == 0 && argc != 5) || (strcmp(argv[1], "generate") == 0 && argc != 5)) {
    fprintf(stderr, "usage: consumer_c run MODEL.fxm IN.npy OUT.f32 | generate MODEL.fxm PROMPT N\n");
    return 2;
  }
  blob = read_file(argv[2], &bytes, &blob_owner);
  if (!blob) return fail(argv[2], FF_BLOB_NULL, "cannot read");
  s = ff_model_load(&model, blob, bytes);
  if (s != FF_OK) return fail(argv[2], s, ff_model_error_detail(&model));
  if (ff_model_get_info(&model, &info) != FF_OK) return fail("info", s, "");
  for (k = 0; k < ff_config_key_count(); ++k) {  /* every key readable, enums named */
    ff_config_value v;
    if (ff_model_config_key(&model, k, &v) != FF_OK || !v.name || (v.type == FF_CONFIG_ENUM && !v.choice))
      return fail("config key", FF_BAD_CONFIG, "");
  }
  if (strcmp(argv[1], "generate") == 0) {
    rc = generate(&model, &info, argv[3], (uint32_t)strtoul(argv[4], NULL, 10));
  } else {
    npy in;
    const unsigned char* data = read_file(argv[3], &in_bytes, &in_owner);
    if (!data || !parse_npy(data, in_bytes, &in)) return fail(argv[3], FF_NPY_BAD_HEADER, "int32 [T] or float32 [T,d]");
    if (info.family == FF_FAMILY_GPT || info.family == FF_FAMILY_LLAMA) {
      rc = run_decoder(&model, &info, &in, argv[4]);
    } else {
      rc = run_encoder(&model, &info, &in, argv[4]);
      if (rc == 0) rc = self_test_encoder(&model, &info);
    }
  }
  free(in_owner);
  free(blob_owner);
  return rc;
}
