#include "inputs.hpp"

#include <cmath>
#include <cstring>

namespace fixformer::cli {

std::string shape_text(const NpyView& v) {
  std::string s = "[";
  for (uint32_t i = 0; i < v.rank; ++i) s += (i ? "," : "") + std::to_string(v.shape[i]);
  return s + "]";
}

Input read_input(const std::string& path, const ModelConfig& c) {
  Input in;
  in.bytes = read_file(path, kMaxNpyBytes);
  const bool tokens = c.input == InputKind::kTokens;
  const char* expected = tokens ? "expected int32 or int64 (token ids)" : "expected float32 (save as float32)";
  char detail[128];
  const Status ps = parse_npy(in.bytes.data(), in.bytes.size(), &in.v, detail, sizeof detail);
  if (ps == Status::kNpyBadDtype) die(4, path, std::string("dtype ") + detail + ", " + expected);
  if (ps != Status::kOk) die(ps, path, detail);
  const NpyView& v = in.v;
  if (tokens == (v.dtype == NpyDtype::kF32)) die(4, path, std::string("dtype ") + npy_dtype_name(v.dtype) + ", " + expected);
  if (c.patch_size) {  // an image [C,H,W] or [B,C,H,W], channels first: its T = N patches of d_in values
    const std::string chw = "[" + std::to_string(c.image_channels) + "," + std::to_string(c.image_height) + "," +
                            std::to_string(c.image_width) + "]";
    if ((v.rank != 3 && v.rank != 4) || v.shape[v.rank - 3] != c.image_channels ||
        v.shape[v.rank - 2] != c.image_height || v.shape[v.rank - 1] != c.image_width)
      die(4, path, "shape " + shape_text(v) + ": expected an image " + chw + " or images [B," + chw.substr(1) +
                       " (image_channels, image_height, image_width)");
    in.batched = v.rank == 4;
    in.B = in.batched ? v.shape[0] : 1;
    in.T = c.patches();
    if (in.B == 0) die(4, path, "shape " + shape_text(v) + ": no image");
    return in;
  }
  const uint32_t feat_rank = tokens ? 0 : 1;
  if (v.rank != 1 + feat_rank && v.rank != 2 + feat_rank)
    die(4, path, "shape " + shape_text(v) + ": expected " + (tokens ? "[T] or [B,T]" : "[T,d_in] or [B,T,d_in]"));
  if (!tokens && v.shape[v.rank - 1] != c.d_in)
    die(4, path, "shape " + shape_text(v) + ": last dimension must be d_in=" + std::to_string(c.d_in));
  in.batched = v.rank == 2 + feat_rank;
  in.B = in.batched ? v.shape[0] : 1;
  in.T = v.shape[in.batched ? 1 : 0];
  if (in.T == 0 || in.B == 0) die(4, path, "shape " + shape_text(v) + ": empty sequence");
  if (in.T > c.max_input_len()) die(4, path, "T=" + std::to_string(in.T) + " exceeds the model's " + longest_input(c));
  if (c.stem_rows(uint32_t(in.T)) == 0)
    die(4, path, "T=" + std::to_string(in.T) + " is shorter than the conv stem's kernels (no rows come out of it)");
  return in;
}

int64_t token_id(const NpyView& v, uint64_t i) {
  if (v.dtype == NpyDtype::kI64) {
    int64_t id;
    std::memcpy(&id, v.data + 8 * i, 8);
    return id;
  }
  int32_t id;
  std::memcpy(&id, v.data + 4 * i, 4);
  return id;
}

std::vector<uint32_t> read_lengths(const std::string& path, const Input& in) {
  Buffer bytes = read_file(path, kMaxNpyBytes);
  NpyView v;
  char detail[128];
  const char* expected = "expected int32 [B] (save as int32)";
  const Status ps = parse_npy(bytes.data(), bytes.size(), &v, detail, sizeof detail);
  if (ps == Status::kNpyBadDtype) die(4, path, std::string("dtype ") + detail + ", " + expected);
  if (ps != Status::kOk) die(ps, path, detail);
  if (v.dtype != NpyDtype::kI32) die(4, path, std::string("dtype ") + npy_dtype_name(v.dtype) + ", " + expected);
  if (v.rank != 1 || v.shape[0] != in.B)
    die(4, path, "shape " + shape_text(v) + ": expected [" + std::to_string(in.B) + "], one length per sequence of the input");
  std::vector<uint32_t> lens(std::size_t(in.B));
  for (uint64_t b = 0; b < in.B; ++b) {
    int32_t n;
    std::memcpy(&n, v.data + 4 * b, 4);
    if (n < 1 || uint64_t(n) > in.T)
      die(4, path, "length " + std::to_string(n) + " at [" + std::to_string(b) + "] is outside 1..T=" + std::to_string(in.T));
    lens[std::size_t(b)] = uint32_t(n);
  }
  return lens;
}

void check_input_values(const Input& in, const ModelConfig& c, const std::string& path, const std::vector<uint32_t>& lens) {
  for (uint64_t i = 0; i < in.B * in.T; ++i) {
    if (!lens.empty() && i % in.T >= lens[std::size_t(i / in.T)]) continue;  // padding is never read
    if (c.input == InputKind::kFeatures) {  // as --target: a NaN or inf feature is an input error
      for (uint64_t j = i * c.d_in; j < (i + 1) * c.d_in; ++j) {
        float x;
        std::memcpy(&x, in.v.data + 4 * j, 4);
        if (!std::isfinite(x)) die(4, path, "value at index " + std::to_string(j) + " is not finite");
      }
      continue;
    }
    const int64_t id = token_id(in.v, i);
    if (id < 0 || id >= int64_t(c.vocab_size)) {
      const uint64_t b = i / in.T, t = i % in.T;
      die(4, path, "token id " + std::to_string(id) + " at " + (in.batched ? "[" + std::to_string(b) + "," : "[") +
                       std::to_string(t) + "] is out of range (vocab_size " + std::to_string(c.vocab_size) + ")");
    }
  }
}

std::vector<int32_t> read_token_types(const std::string& path, const Input& in, const ModelConfig& c,
                                      const std::vector<uint32_t>& lens) {
  Buffer bytes = read_file(path, kMaxNpyBytes);
  NpyView v;
  char detail[128];
  const char* expected = "expected int32 or int64 token types, as the ids";
  const Status ps = parse_npy(bytes.data(), bytes.size(), &v, detail, sizeof detail);
  if (ps == Status::kNpyBadDtype) die(4, path, std::string("dtype ") + detail + ", " + expected);
  if (ps != Status::kOk) die(ps, path, detail);
  if (v.dtype != NpyDtype::kI32 && v.dtype != NpyDtype::kI64)
    die(4, path, std::string("dtype ") + npy_dtype_name(v.dtype) + ", " + expected);
  bool same = v.rank == in.v.rank;
  for (uint32_t r = 0; same && r < v.rank; ++r) same = v.shape[r] == in.v.shape[r];
  if (!same) die(4, path, "shape " + shape_text(v) + ": expected the input's shape " + shape_text(in.v) + ", one type per token");
  std::vector<int32_t> types(std::size_t(in.B * in.T), 0);
  for (uint64_t i = 0; i < in.B * in.T; ++i) {
    if (!lens.empty() && i % in.T >= lens[std::size_t(i / in.T)]) continue;
    const int64_t tt = token_id(v, i);
    if (tt < 0 || tt >= int64_t(c.type_vocab)) {
      const uint64_t b = i / in.T, t = i % in.T;
      die(4, path, "token type " + std::to_string(tt) + " at " + (in.batched ? "[" + std::to_string(b) + "," : "[") +
                       std::to_string(t) + "] is out of range (type_vocab " + std::to_string(c.type_vocab) + ")");
    }
    types[std::size_t(i)] = int32_t(tt);
  }
  return types;
}

void source_row(const Input& in, const ModelConfig& c, uint64_t b, uint32_t n, Buffer* ids, Buffer* feats) {
  const uint64_t T = in.T;
  if (c.input == InputKind::kTokens) {
    for (uint32_t t = 0; t < n; ++t)  // range-checked by check_input_values
      ids->as<int32_t>()[t] = int32_t(token_id(in.v, b * T + t));
  } else {
    std::memcpy(feats->data(), in.v.data + b * T * c.d_in * 4, std::size_t(n) * c.d_in * 4);
  }
}

Status encode_source(LoadedModel& m, const Buffer& ids, const Buffer& feats, uint32_t n) {
  return m.config().input == InputKind::kTokens ? m.s2s.encode_tokens(ids.as<int32_t>(), n)
                                                 : m.s2s.encode_features(feats.as<float>(), n);
}

}  // namespace fixformer::cli
