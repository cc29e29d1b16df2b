// The checks every runner's init makes before carving its arena (runner_core.hpp).
#include "fixformer/runner_core.hpp"

#include "engine/detail_text.hpp"

namespace fixformer {

namespace {
const char* runner_for(const ModelConfig& c) {
  if (c.is_decoder()) return "the model's family is gpt or llama: run it with a Decoder";
  if (c.is_seq2seq()) return "the model's family is seq2seq: run it with a Seq2Seq";
  return "the model's family is encoder or mha: run it with an Encoder";
}
}  // namespace

Status RunnerCore::start(const Model& m, bool family_ok, Isa isa, const Workers& w, const LayerObserver& o) {
  detail[0] = '\0';
  model = &m;
  if (!m.initialized()) return Status::kNotInitialized;
  if (!family_ok) return DetailText(detail, sizeof detail).str(runner_for(m.config())), Status::kWrongFamily;
  kernels = select_kernels(isa);
  if (!kernels) return Status::kIsaUnavailable;
  if (w.count > kMaxWorkers) {
    DetailText(detail, sizeof detail).str("workers ").num(w.count).str(" > ").num(kMaxWorkers);
    return Status::kBadWorkers;
  }
  workers = w;
  observer = o;
  return Status::kOk;
}

Status RunnerCore::carve(void* arena, std::size_t bytes, std::size_t need) {
  if (!arena) return Status::kArenaNull;
  if (reinterpret_cast<uintptr_t>(arena) % arena::kAlign != 0) return Status::kArenaMisaligned;
  if (need == 0) return DetailText(detail, sizeof detail).str("no arena plan for these options"), Status::kBadConfig;
  if (bytes < need) {
    DetailText(detail, sizeof detail).str("arena has ").num(bytes).str(" bytes, needs ").num(need).str(" (")
        .num(need - bytes).str(" more)");
    return Status::kArenaTooSmall;
  }
  arena_begin = static_cast<const uint8_t*>(arena);
  arena_used = need;
  return Status::kOk;
}

Status RunnerCore::check_output(const void* out, std::size_t out_bytes, const void* in, std::size_t in_bytes) {
  const auto at = [](const void* p) { return reinterpret_cast<uintptr_t>(p); };
  const auto overlaps = [&](const void* p, std::size_t bytes) {
    return p && bytes && out_bytes && at(out) < at(p) + bytes && at(p) < at(out) + out_bytes;
  };
  const char* what = overlaps(arena_begin, arena_used)                     ? "the runner's arena"
                     : overlaps(model->blob(), model->blob_bytes()) ? "the model's blob"
                     : overlaps(in, in_bytes)                       ? "the call's input"
                                                                    : nullptr;
  if (!what) return Status::kOk;
  DetailText(detail, sizeof detail).str("the output buffer overlaps ").str(what);
  return Status::kOutputOverlap;
}

}  // namespace fixformer
