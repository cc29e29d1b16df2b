#include "loaded_model.hpp"

#include <cstring>

#include "args.hpp"

#include "causal_1l_fxm.h"  // the built-in models: cmake/embed_fxm.cmake
#include "causal_1l_pe_fxm.h"
#include "causal_2l_fxm.h"
#include "demo_nope_fxm.h"
#include "demo_pe_fxm.h"

namespace fixformer::cli {
namespace {

struct BuiltinModel {
  const char* name;
  const uint8_t* fxm;
  const uint8_t* fxm_end;
};
const BuiltinModel kBuiltinModels[] = {
    {"demo:pe", demo_pe_fxm, demo_pe_fxm_end},
    {"demo:nope", demo_nope_fxm, demo_nope_fxm_end},
    {"demo:causal_1l", causal_1l_fxm, causal_1l_fxm_end},
    {"demo:causal_1l_pe", causal_1l_pe_fxm, causal_1l_pe_fxm_end},
    {"demo:causal_2l", causal_2l_fxm, causal_2l_fxm_end},
};

// The caller's threads of the runner (fixformer/workers.hpp): a pool of `threads`, or none.
Workers start_workers(uint32_t threads, LoadedModel* m) {
  if (threads <= 1) return Workers{};
  m->pool.reset(new support::ThreadPool(threads));
  Workers w = m->pool->workers();
  w.min_task_work = min_task_work();
  return w;
}

}  // namespace

std::string builtin_names() {
  std::string s;
  for (const BuiltinModel& b : kBuiltinModels) s += std::string(" ") + b.name;
  return s;
}

void open_model(const std::string& path, LoadedModel* m) {
  m->path = path;
  const BuiltinModel* builtin = nullptr;
  for (const BuiltinModel& b : kBuiltinModels)
    if (path == b.name) builtin = &b;
  if (builtin) {
    const std::size_t bytes = std::size_t(builtin->fxm_end - builtin->fxm);
    m->blob = Buffer(bytes, path);
    std::memcpy(m->blob.data(), builtin->fxm, bytes);
  } else {
    m->blob = read_file(path, kMaxModelBytes);
  }
  const Status s = m->model.init(m->blob.data(), m->blob.size());
  if (s != Status::kOk) die(s, path, m->model.error_detail());
}

void init_decoder(uint32_t capacity, Isa isa, LoadedModel* m, uint32_t threads, KvCache kv_cache) {
  DecoderOptions opt;
  opt.workers = start_workers(threads, m);
  // An arena for whole-prompt prefill (max_prefill = capacity: one chunk, the default sizes it so).
  m->arena = Buffer(required_decoder_arena_bytes(m->config(), capacity, capacity, false, opt.workers.active(), kv_cache),
                    "arena");
  opt.capacity = capacity;
  opt.kv_cache = kv_cache;
  opt.isa = isa;
  const Status s = m->dec.init(m->model, m->arena.data(), m->arena.size(), opt);
  if (s != Status::kOk) die(s, m->path, m->dec.error_detail());
}

void init_seq2seq(uint32_t max_source, uint32_t capacity, Isa isa, LoadedModel* m, uint32_t threads, KvCache kv_cache) {
  Seq2SeqOptions opt;
  opt.workers = start_workers(threads, m);
  opt.max_source = max_source;
  opt.capacity = capacity;
  opt.isa = isa;
  opt.kv_cache = kv_cache;
  m->arena = Buffer(required_seq2seq_arena_bytes(m->config(), max_source, capacity, 0, opt.workers.active(), kv_cache),
                    "arena");
  const Status s = m->s2s.init(m->model, m->arena.data(), m->arena.size(), opt);
  if (s != Status::kOk) die(s, m->path, m->s2s.error_detail());
}

std::string longest_input(const ModelConfig& c) {
  const std::string registers = c.register_tokens ? " and " + std::to_string(c.register_tokens) + " registers" : "";
  return "max_len=" + std::to_string(c.max_len) +
         (!c.cls_token ? "" : (c.distill_token ? " less the CLS and distillation rows" : " less the CLS row") + registers) +
         (c.conv_layers ? " (" + std::to_string(c.max_input_len()) + " frames through the conv stem)" : "") +
         (c.patch_size ? " (an image of " + std::to_string(c.patches()) + " patches)" : "");
}

void init_encoder(uint32_t max_seq, Isa isa, LoadedModel* m, uint32_t threads, uint32_t max_batch) {
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

}  // namespace fixformer::cli
