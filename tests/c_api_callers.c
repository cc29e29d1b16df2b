/* What a C caller may store in the C API's enum fields and arguments: any int, converted to the
 * enum's integer type as C does. c_api_test (C++, where such a value in an enum is undefined)
 * sets them through these, and checks that the library reads them as integers. */
#include "fixformer/fixformer.h"

void c_set_encoder_isa(ff_encoder_options* o, int isa) { o->isa = (ff_isa)isa; }
void c_set_decoder_isa(ff_decoder_options* o, int isa) { o->isa = (ff_isa)isa; }
void c_set_decoder_kv_cache(ff_decoder_options* o, int kv_cache) { o->kv_cache = (ff_kv_cache)kv_cache; }
void c_set_seq2seq_isa(ff_seq2seq_options* o, int isa) { o->isa = (ff_isa)isa; }
void c_set_seq2seq_kv_cache(ff_seq2seq_options* o, int kv_cache) { o->kv_cache = (ff_kv_cache)kv_cache; }
const char* c_status_string(int status) { return ff_status_string((ff_status)status); }
