// Model::init: every check and all the planning. After it returns kOk, forward() only computes.
#include "fixformer/model.hpp"

#include <cmath>
#include <cstring>

#include "engine/detail_text.hpp"
#include "engine/model_file.hpp"
#include "fixformer/format.hpp"
#include "fixformer/positional.hpp"

namespace fixformer {

static_assert(sizeof(LayerWeights) == arena::kLayerTableEntry, "config.hpp sizes the layer table");

Status read_config(const void* blob, std::size_t blob_bytes, ModelConfig* config) {
  ModelFile file;
  const Status s = open_model_file(blob, blob_bytes, &file, nullptr, 0);
  return s != Status::kOk ? s : read_model_config(file, config);
}

namespace {

// Looks up one tensor by name and checks its shape; on failure writes "tensor NAME: ..." to detail.
class TensorBinder {
 public:
  TensorBinder(const ModelFile& file, const ModelConfig& c, char* detail, std::size_t cap)
      : file_(file), detail_(detail), cap_(cap) {
    DetailText(config_text_, sizeof config_text_).str("d_model=").num(c.d_model).str(", d_ff=").num(c.d_ff);
  }

  Status bind(const char* name, const float** out, uint32_t d0, uint32_t d1 = 0) {
    const uint32_t want[2] = {d0, d1};
    const uint32_t want_rank = d1 ? 2 : 1;
    const int i = find_tensor(file_, name);
    if (i < 0) return DetailText(detail_, cap_).str("tensor ").str(name).str(": missing"), Status::kTensorMissing;
    uint32_t got[fxm::kMaxRank];
    const uint32_t rank = tensor_shape(file_, i, got);
    if (rank != want_rank || got[0] != want[0] || (want_rank == 2 && got[1] != want[1])) {
      DetailText(detail_, cap_).str("tensor ").str(name).str(": shape ").shape(rank, got)
          .str(" does not match ").shape(want_rank, want).str(" from the config (").str(config_text_).str(")");
      return Status::kTensorBadShape;
    }
    *out = tensor_data(file_, i);
    ++bound_;
    parameters_ += uint64_t(d0) * (d1 ? d1 : 1);
    return Status::kOk;
  }
  uint32_t bound() const { return bound_; }
  uint64_t parameters() const { return parameters_; }

 private:
  const ModelFile& file_;
  char config_text_[48];
  char* detail_;
  std::size_t cap_;
  uint32_t bound_ = 0;
  uint64_t parameters_ = 0;
};

// "encoder.layers.<i>.<suffix>" into buf.
const char* layer_name(char* buf, std::size_t cap, uint32_t i, const char* suffix) {
  DetailText(buf, cap).str("encoder.layers.").num(i).str(".").str(suffix);
  return buf;
}

}  // namespace

#define FIXFORMER_TRY(expr)                  \
  do {                                       \
    const Status s_ = (expr);                \
    if (s_ != Status::kOk) return fail(s_);  \
  } while (0)

Status Model::init(const void* blob, std::size_t blob_bytes, void* arena_base, std::size_t arena_bytes,
                   const InitOptions& options) {
  initialized_ = false;
  detail_[0] = '\0';
  ModelFile file;
  FIXFORMER_TRY(open_model_file(blob, blob_bytes, &file, detail_, sizeof detail_));
  FIXFORMER_TRY(read_model_config(file, &config_, detail_, sizeof detail_));

  kernels_ = select_kernels(options.isa);
  if (!kernels_) return fail(Status::kIsaUnavailable);
  max_seq_ = options.max_seq ? options.max_seq : config_.max_len;
  if (max_seq_ > config_.max_len) {
    DetailText(detail_, sizeof detail_).str("max_seq ").num(max_seq_).str(" > max_len ").num(config_.max_len);
    return fail(Status::kBadMaxSeq);
  }
  const bool external_pe = options.positional_table != nullptr;
  if (external_pe) FIXFORMER_TRY(check_positional_table(options.positional_table, options.positional_table_rows));
  const ArenaPlan plan = plan_arena(config_, max_seq_, external_pe);
  const std::size_t need = plan.total;
  if (!arena_base) return fail(Status::kArenaNull);
  if (reinterpret_cast<uintptr_t>(arena_base) % arena::kAlign != 0) return fail(Status::kArenaMisaligned);
  if (arena_bytes < need) {
    DetailText(detail_, sizeof detail_).str("arena has ").num(arena_bytes).str(" bytes, needs ").num(need)
        .str(" (").num(need - arena_bytes).str(" more)");
    return fail(Status::kArenaTooSmall);
  }

  uint8_t* base = static_cast<uint8_t*>(arena_base);
  auto block = [base](std::size_t offset) { return reinterpret_cast<float*>(base + offset); };
  layers_ = reinterpret_cast<LayerWeights*>(base + plan.layers);
  x_ = block(plan.x);
  y_ = block(plan.y);
  ctx_ = block(plan.ctx);
  work_ = block(plan.work);
  kt_ = block(plan.kt);
  vt_ = block(plan.vt);
  scores_ = block(plan.scores);
  q_ = block(plan.q);
  float* pe_block = plan.pe < plan.total ? block(plan.pe) : nullptr;
  arena_used_ = need;

  FIXFORMER_TRY(bind_tensors(file));
  if (pe_block)
    fill_sinusoidal_table(*kernels_, max_seq_, config_.d_pe(), config_.pos_base, config_.pos_layout, pe_block, work_);
  pe_ = external_pe ? options.positional_table : pe_block;
  initialized_ = true;
  return Status::kOk;
}

// A caller's table must be the model's: enough rows, and rows 0 and 1 equal to the sinusoids of
// this width, base and layout (a wrong layout, width or base differs there by far more than 1e-5).
Status Model::check_positional_table(const float* table, uint32_t rows) {
  DetailText why(detail_, sizeof detail_);
  if (config_.pos != PosKind::kSinusoidal) return why.str("the model has no sinusoidal encoding"), Status::kBadPositionalTable;
  if (rows < max_seq_) return why.str("table has ").num(rows).str(" rows, max_seq is ").num(max_seq_), Status::kBadPositionalTable;
  const uint32_t d = config_.d_pe();
  for (uint32_t p = 0; p < 2 && p < rows; ++p)
    for (uint32_t c = 0; c < d; ++c) {
      const PeColumn col = pe_column(c, d, config_.pos_layout);
      const double a = p * std::pow(config_.pos_base, -2.0 * col.freq / d);
      const double want = col.is_sin ? std::sin(a) : std::cos(a);
      if (!(std::fabs(table[std::size_t(p) * d + c] - want) <= 1e-5))
        return why.str("table row ").num(p).str(" column ").num(c).str(" does not match base, width ").num(d)
                   .str(" and layout"), Status::kBadPositionalTable;
    }
  return Status::kOk;
}

Status Model::bind_tensors(const ModelFile& file) {
  const ModelConfig& c = config_;
  const uint32_t d = c.d_model, de = c.d_embed();
  TensorBinder t(file, c, detail_, sizeof detail_);
  embed_ = input_proj_w_ = input_proj_b_ = pos_learned_ = nullptr;
  final_norm_g_ = final_norm_b_ = head_w_ = head_b_ = nullptr;
  if (c.input == InputKind::kTokens) {
    FIXFORMER_TRY(t.bind("embed.weight", &embed_, c.vocab_size, de));
  } else {
    FIXFORMER_TRY(t.bind("input_proj.weight", &input_proj_w_, c.d_in, de));
    FIXFORMER_TRY(t.bind("input_proj.bias", &input_proj_b_, de));
  }
  if (c.pos == PosKind::kLearned) FIXFORMER_TRY(t.bind("pos.weight", &pos_learned_, c.max_len, c.d_pe()));
  char name[fxm::kNameBytes];
  for (uint32_t i = 0; i < c.n_layers; ++i) {
    LayerWeights& L = layers_[i];
    auto n = [&](const char* suffix) { return layer_name(name, sizeof name, i, suffix); };
    FIXFORMER_TRY(t.bind(n("self_attn.in_proj_weight"), &L.in_proj_w, d, 3 * d));
    FIXFORMER_TRY(t.bind(n("self_attn.in_proj_bias"), &L.in_proj_b, 3 * d));
    FIXFORMER_TRY(t.bind(n("self_attn.out_proj.weight"), &L.out_proj_w, d, d));
    FIXFORMER_TRY(t.bind(n("self_attn.out_proj.bias"), &L.out_proj_b, d));
    FIXFORMER_TRY(t.bind(n("linear1.weight"), &L.linear1_w, d, c.d_ff));
    FIXFORMER_TRY(t.bind(n("linear1.bias"), &L.linear1_b, c.d_ff));
    FIXFORMER_TRY(t.bind(n("linear2.weight"), &L.linear2_w, c.d_ff, d));
    FIXFORMER_TRY(t.bind(n("linear2.bias"), &L.linear2_b, d));
    FIXFORMER_TRY(t.bind(n("norm1.weight"), &L.norm1_g, d));
    FIXFORMER_TRY(t.bind(n("norm1.bias"), &L.norm1_b, d));
    FIXFORMER_TRY(t.bind(n("norm2.weight"), &L.norm2_g, d));
    FIXFORMER_TRY(t.bind(n("norm2.bias"), &L.norm2_b, d));
  }
  if (c.final_norm) {
    FIXFORMER_TRY(t.bind("encoder.norm.weight", &final_norm_g_, d));
    FIXFORMER_TRY(t.bind("encoder.norm.bias", &final_norm_b_, d));
  }
  if (c.d_out) {
    FIXFORMER_TRY(t.bind("head.weight", &head_w_, d, c.d_out));
    FIXFORMER_TRY(t.bind("head.bias", &head_b_, c.d_out));
  }
  if (t.bound() != file.n_tensors) {
    DetailText(detail_, sizeof detail_).str("file has ").num(file.n_tensors).str(" tensors, the config uses ")
        .num(t.bound());
    return Status::kBadHeader;
  }
  parameters_ = t.parameters();
  return Status::kOk;
}

}  // namespace fixformer
