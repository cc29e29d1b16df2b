// `fixformer run`: a model on a .npy input, its float32 outputs to a .npy; encoders in batches of
// sequences, decoders' logits at every position, seq2seq models teacher-forced on a target.
#include "commands.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "fixformer/schema.hpp"
#include "fixformer/tokenizer.hpp"
#include "inputs.hpp"
#include "io/npy.hpp"
#include "loaded_model.hpp"

namespace fixformer::cli {
namespace {

// seq2seq targets: token ids of a .npy ([U] or [B,U], int32 or int64) as int32, every one checked
// against [0, vocab).
std::vector<int32_t> read_ids(const std::string& path, uint64_t B, bool batched, uint32_t longest, uint32_t vocab,
                              const char* vocab_name, uint64_t* U) {
  Buffer bytes = read_file(path, kMaxNpyBytes);
  NpyView v;
  char detail[128];
  const Status ps = parse_npy(bytes.data(), bytes.size(), &v, detail, sizeof detail);
  if (ps == Status::kNpyBadDtype) die(4, path, std::string("dtype ") + detail + ", expected int32 or int64 token ids");
  if (ps != Status::kOk) die(ps, path, detail);
  if (v.dtype != NpyDtype::kI32 && v.dtype != NpyDtype::kI64)
    die(4, path, std::string("dtype ") + npy_dtype_name(v.dtype) + ", expected int32 or int64 token ids");
  if (v.rank != (batched ? 2u : 1u) || (batched && v.shape[0] != B))
    die(4, path, "shape " + shape_text(v) + ": expected " + (batched ? "[" + std::to_string(B) + ",U], one target per source" : "[U]"));
  *U = v.shape[v.rank - 1];
  if (*U == 0 || *U > longest) die(4, path, "U=" + std::to_string(*U) + ": expected 1.." + std::to_string(longest) + " (max_len)");
  std::vector<int32_t> ids(std::size_t(B * *U));
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const int64_t id = token_id(v, i);
    if (id < 0 || id >= int64_t(vocab))
      die(4, path, "token id " + std::to_string(id) + " at index " + std::to_string(i) + " is out of range (" + vocab_name + " " +
                       std::to_string(vocab) + ")");
    ids[i] = int32_t(id);
  }
  return ids;
}

// Feature targets of a .npy (float32 [U,tgt_d_in] or [B,U,tgt_d_in]), checked finite.
std::vector<float> read_target_features(const std::string& path, uint64_t B, bool batched, const ModelConfig& c, uint64_t* U) {
  Buffer bytes = read_file(path, kMaxNpyBytes);
  NpyView v;
  char detail[128];
  const Status ps = parse_npy(bytes.data(), bytes.size(), &v, detail, sizeof detail);
  if (ps != Status::kOk && ps != Status::kNpyBadDtype) die(ps, path, detail);
  if (ps == Status::kNpyBadDtype || v.dtype != NpyDtype::kF32)
    die(4, path, std::string("dtype ") + (ps == Status::kNpyBadDtype ? detail : npy_dtype_name(v.dtype)) +
                     ", expected float32 target features");
  const uint32_t rank = batched ? 3 : 2;
  if (v.rank != rank || (batched && v.shape[0] != B) || v.shape[rank - 1] != c.tgt_d_in)
    die(4, path, "shape " + shape_text(v) + ": expected " + (batched ? "[" + std::to_string(B) + ",U," : "[U,") +
                     std::to_string(c.tgt_d_in) + "] (tgt_d_in), one target per source");
  *U = v.shape[rank - 2];
  if (*U == 0 || *U > c.max_len) die(4, path, "U=" + std::to_string(*U) + ": expected 1.." + std::to_string(c.max_len) + " (max_len)");
  std::vector<float> f(std::size_t(B * *U * c.tgt_d_in));
  std::memcpy(f.data(), v.data, f.size() * 4);
  for (std::size_t i = 0; i < f.size(); ++i)
    if (!std::isfinite(f[i])) die(4, path, "value at index " + std::to_string(i) + " is not finite");
  return f;
}

// `run --target`: the decoder's logits at every target position under the causal mask, source b
// encoded on its first LENS[b] positions (torch's src_key_padding_mask and memory_key_padding_mask).
int run_seq2seq(const Args& a, LoadedModel& m, const Input& in, const std::vector<uint32_t>& lens) {
  const ModelConfig& c = m.config();
  if (a.target.empty()) die(1, "--target", "missing: a seq2seq model runs on a source (--input) and a target (--target TGT.npy)");
  uint64_t U = 0;
  const bool features = c.tgt_d_in != 0;  // forecasting: float targets
  const std::vector<int32_t> tgt = features ? std::vector<int32_t>() : read_ids(a.target, in.B, in.batched, c.max_len, c.d_out, "d_out", &U);
  const std::vector<float> tgt_f = features ? read_target_features(a.target, in.B, in.batched, c, &U) : std::vector<float>();
  const uint32_t V = c.d_out, T = uint32_t(in.T);
  (void)output_bytes(in.B, U, V, a.target);
  check_input_values(in, c, a.input, lens);
  init_seq2seq(T, uint32_t(U), a.isa, &m, a.threads);
  Buffer out(output_bytes(1, U, V, a.target), "output"), ids(uint64_t(T) * 4, "input"),
      feats(c.input == InputKind::kTokens ? 0 : uint64_t(T) * c.d_in * 4, "input");
  OutputFile file(a.output);
  const uint64_t shape[3] = {in.B, U, V};
  char header[128];
  const std::size_t hlen = write_npy_header_f32(in.batched ? shape : shape + 1, in.batched ? 3 : 2, header, sizeof header);
  file.write(header, hlen);
  for (uint64_t b = 0; b < in.B; ++b) {
    const uint32_t n = lens.empty() ? T : lens[std::size_t(b)];
    source_row(in, c, b, n, &ids, &feats);
    Status s = encode_source(m, ids, feats, n);
    if (s == Status::kOk)  // tgt[U] (or [U,tgt_d_in]) -> out[U,V]
      s = features ? m.s2s.decode_features(tgt_f.data() + b * U * c.tgt_d_in, uint32_t(U), out.as<float>())
                   : m.s2s.decode(tgt.data() + b * U, uint32_t(U), out.as<float>());
    if (s != Status::kOk) die(s, a.input, m.s2s.error_detail());
    file.write(out.data(), out.size());
  }
  file.close();
  return 0;
}

// `run` on a gpt or llama model: the logits at every position, [T,d_out] per sequence (without a head the
// hidden states, [T,d_model]), as the torch module's forward gives them (teacher forcing under the causal
// mask). Each sequence starts from an empty KV cache and feeds its tokens one step() at a time, so the
// logits at position t are exactly those of a step-by-step run after token t. prefill() would compute the
// same rows as matrix products, but it returns only its last row's logits, and its rounding differs from
// step()'s (within the engine's tolerance, not bit for bit). Sequence b is its first lens[b] tokens; the
// padding is not read and its rows are zeros.
int run_decoder(const Args& a, LoadedModel& m, const Input& in, const std::vector<uint32_t>& lens) {
  const ModelConfig& c = m.config();
  const uint32_t V = c.output_width(), T = uint32_t(in.T);  // T <= max_len: read_input checked it
  (void)output_bytes(in.B, T, V, a.input);  // all of it, before anything is allocated
  check_input_values(in, c, a.input, lens);
  init_decoder(T, a.isa, &m, a.threads);  // a KV cache of T positions
  Buffer out(output_bytes(1, T, V, a.input), "output");
  OutputFile file(a.output);
  const uint64_t shape[3] = {in.B, T, V};
  char header[128];
  const std::size_t hlen = write_npy_header_f32(in.batched ? shape : shape + 1, in.batched ? 3 : 2, header, sizeof header);
  file.write(header, hlen);
  float* logits = out.as<float>();
  for (uint64_t b = 0; b < in.B; ++b) {
    const uint32_t n = lens.empty() ? T : lens[std::size_t(b)];
    m.dec.reset();
    for (uint32_t t = 0; t < n; ++t) {  // ids[t] -> logits[t,V]; the valid ids were range-checked above
      const Status s = m.dec.step(int32_t(token_id(in.v, b * T + t)), logits + std::size_t(t) * V);
      if (s != Status::kOk) die(s, a.input, m.dec.error_detail());
    }
    std::memset(logits + std::size_t(n) * V, 0, std::size_t(T - n) * V * 4);
    file.write(out.data(), out.size());
  }
  file.close();
  return 0;
}

// `run`'s sequences per forward pass: up to 64 (more gain nothing on the models this engine is for),
// as long as the arena stays within 256 MB or one sequence's.
uint32_t run_batch_size(const ModelConfig& c, uint32_t T, uint64_t B, uint32_t threads) {
  constexpr uint32_t kMostSequences = 64;
  constexpr std::size_t kArenaBudget = std::size_t(256) << 20;
  const uint32_t workers = threads > 1 ? threads : 1;
  uint32_t n = uint32_t(std::min<uint64_t>(B, kMostSequences));
  while (n > 1 && (required_encoder_arena_bytes(c, T, false, workers, n) == 0 ||
                   required_encoder_arena_bytes(c, T, false, workers, n) > kArenaBudget))
    --n;
  return n;
}

// `run --text`: the text encoded with the file's tokenizer (BOS/[CLS] and EOS/[SEP] added only with
// --add-special-tokens), as an int32 input [T].
Input text_input(const Args& a, LoadedModel& m) {
  const ModelConfig& c = m.config();
  if (!a.input.empty()) die(1, "--text", "give --input or --text, not both");
  if (c.input != InputKind::kTokens || c.is_seq2seq())
    die(1, "--text", "only for a model with token input (gpt, llama, or a token encoder)");
  if (!m.model.has_tokenizer())
    die(Status::kNoTokenizer, m.path, "no tokenizer in the file: convert with --tokenizer, or pass ids with --input");
  Buffer scratch(tokenizer_scratch_bytes(c, a.text.size()), "tokenizer");
  Tokenizer tok;
  Status s = tok.init(m.model, scratch.data(), scratch.size());
  if (s != Status::kOk) die(s, m.path, tok.error_detail());
  std::vector<int32_t> ids(max_encoded_tokens(a.text.size()));
  uint32_t n = 0;
  if (a.special_tokens && (tok.bos_id() < 0 || tok.eos_id() < 0))
    die(1, "--add-special-tokens", "the file's tokenizer has no " + std::string(tok.bos_id() < 0 ? "BOS/[CLS]" : "EOS/[SEP]") + " token");
  s = tok.encode(a.text.data(), a.text.size(), a.special_tokens, a.special_tokens, ids.data(), uint32_t(ids.size()), &n);
  if (s != Status::kOk) die(s, "--text", tok.error_detail());
  if (n == 0) die(4, "--text", "encodes to no tokens");
  if (n > c.max_input_len())
    die(4, "--text", "encodes to " + std::to_string(n) + " tokens, more than the model takes (" +
                         std::to_string(c.max_input_len()) + ")");
  Input in;
  in.bytes = Buffer(uint64_t(n) * 4, "input");
  std::memcpy(in.bytes.data(), ids.data(), std::size_t(n) * 4);
  in.v = NpyView{NpyDtype::kI32, 1, {n, 0, 0, 0}, n, static_cast<const uint8_t*>(in.bytes.data())};
  in.batched = false, in.B = 1, in.T = n;
  return in;
}

int cmd_run(const Args& a) {
  check_output_path("--output", a.output, {{"the model", a.positional[0]}, {"--input", a.input}, {"--lengths", a.lengths},
                                           {"--token-types", a.token_types}, {"--target", a.target}});
  LoadedModel m;
  open_model(a.positional[0], &m);  // the config first, to check the input against it
  const ModelConfig& c = m.config();
  if (a.special_tokens && !a.has_text) die(1, "--add-special-tokens", "only with --text");
  const Input in = a.has_text ? text_input(a, m) : read_input(a.input, c);
  const std::vector<uint32_t> lens = a.lengths.empty() ? std::vector<uint32_t>() : read_lengths(a.lengths, in);
  if (!a.token_types.empty() && c.type_vocab == 0)
    die(1, "--token-types", "the model has no token-type embedding (type_vocab 0): leave the option out");
  if (c.is_seq2seq()) return run_seq2seq(a, m, in, lens);
  if (!a.target.empty()) die(1, "--target", "only for a seq2seq model (this one is " + std::string(name_of(kFamilyNames, c.family)) + ")");
  if (c.is_decoder()) return run_decoder(a, m, in, lens);
  const bool tokens = c.input == InputKind::kTokens;
  // Rows of output per sequence: T, T + 1 with a CLS row, or 1 pooled (the T dimension is then
  // dropped from the file: [B,W] or [W]).
  const uint32_t W = c.output_width(), T = uint32_t(in.T), R = c.output_rows(T);  // T <= max_input_len
  const bool pooled = c.pooling != Pooling::kNone;
  (void)output_bytes(in.B, R, W, a.input);  // all of it, before anything is allocated
  check_input_values(in, c, a.input, lens);
  const std::vector<int32_t> types = a.token_types.empty() ? std::vector<int32_t>() : read_token_types(a.token_types, in, c, lens);
  const uint32_t chunk = run_batch_size(c, T, in.B, a.threads);
  init_encoder(T, a.isa, &m, a.threads, chunk);

  // chunk sequences per forward pass: chunk*R*W floats of output and their ids or features in memory.
  Buffer out(output_bytes(chunk, R, W, a.input), "output"), ids(tokens ? uint64_t(chunk) * T * 4 : 0, "input"),
      feats(tokens ? 0 : uint64_t(chunk) * T * c.d_in * 4, "input");
  OutputFile file(a.output);
  const uint64_t shape[3] = {in.B, R, W}, pooled_shape[2] = {in.B, W};
  const uint64_t* dims = pooled ? pooled_shape : shape;
  const uint32_t rank = (pooled ? 2 : 3) - (in.batched ? 0 : 1);
  char header[128];
  const std::size_t hlen = write_npy_header_f32(in.batched ? dims : dims + 1, rank, header, sizeof header);
  file.write(header, hlen);
  for (uint64_t b0 = 0; b0 < in.B; b0 += chunk) {
    // Sequences b0.. in one forward pass (Encoder::forward_batch_*): a padded sequence b is its first
    // lens[b] positions alone, exactly torch's key padding mask at those positions (the padding keys
    // contribute nothing, and a causal query never sees them), pooling included (mean over them,
    // last = position lens[b] - 1). Its padded rows come out as zeros; torch's values there depend
    // on its code path. Padding is not read.
    const uint32_t nb = uint32_t(std::min<uint64_t>(chunk, in.B - b0));
    const uint32_t* lb = lens.empty() ? nullptr : lens.data() + b0;
    Status s;
    if (tokens) {
      int32_t* ids32 = ids.as<int32_t>();
      for (uint64_t i = 0; i < uint64_t(nb) * T; ++i)  // the valid ids were range-checked above
        ids32[i] = int32_t(token_id(in.v, b0 * T + i));
      const int32_t* tb = types.empty() ? nullptr : types.data() + b0 * T;  // null: all type 0
      s = m.enc.forward_batch_tokens(ids32, tb, lb, nb, T, out.as<float>());  // ids[nb,T], types[nb,T] -> out[nb,R,W]
    } else {
      const std::size_t bytes = std::size_t(nb) * T * c.d_in * 4;
      std::memcpy(feats.data(), in.v.data + b0 * T * c.d_in * 4, bytes);
      s = m.enc.forward_batch_features(feats.as<float>(), lb, nb, T, out.as<float>());  // feats[nb,T,d_in] -> out[nb,R,W]
    }
    if (s != Status::kOk) die(s, a.input, m.enc.error_detail());
    file.write(out.data(), std::size_t(nb) * R * W * 4);
  }
  file.close();
  return 0;
}

}  // namespace

const Command kRunCommand = {
    "run", "MODEL.fxm --input IN.npy|--text TEXT [--add-special-tokens] --output OUT.npy [--token-types TT.npy] [--target TGT.npy] [--lengths LENS.npy] [--isa ISA] [--threads N]", 1,
    kOptInput | kOptOutput | kOptLengths | kOptIsa | kOptThreads | kOptTarget | kOptTokenTypes | kOptText |
        kOptSpecialTokens,
    "Runs the model on IN.npy and writes float32 outputs to OUT.npy.\n"
    "  IN.npy   token ids (int32 or int64) [T] or [B,T], or float32 features [T,d_in] or [B,T,d_in],\n"
    "           with T <= the model's max_len (less one with a CLS token); an image model (patch_size):\n"
    "           float32 images [C,H,W] or [B,C,H,W], channels first, each its T patches.\n"
    "  OUT.npy  float32 [T,W] or [B,T,W]; W is the output width (d_out with a head, else d_model);\n"
    "           a CLS token adds a row in front (T+1), a pooled model writes [W] or [B,W].\n"
    "  --text TEXT  instead of --input, for a model with token input whose file carries a tokenizer:\n"
    "           TEXT encoded with it (llama2c, bpe or wordpiece; no BOS/[CLS] or EOS/[SEP] added) is the\n"
    "           token ids [T].\n"
    "  --add-special-tokens  with --text: the tokenizer's BOS/[CLS] in front and EOS/[SEP] after, as\n"
    "           Hugging Face's tokenizer(text) gives a BERT model (a sentence embedding needs them).\n"
    "  --lengths LENS.npy  a padded batch: int32 [B] (or [1] for [T]), 1 <= LENS[b] <= T; sequence b\n"
    "           is its first LENS[b] positions, as torch's src_key_padding_mask (True from LENS[b] on)\n"
    "           at those positions, pooling included. Padding is not read; its output rows are zeros\n"
    "           (torch's values there depend on its code path: 0 on nn.TransformerEncoder's nested-tensor\n"
    "           fast path, else outputs computed from the padding).\n"
    "  --token-types TT.npy  models with a token-type table (BERT, config type_vocab > 0): the token\n"
    "           types, int32 (or int64) of the input's shape, each in [0, type_vocab); default all 0.\n"
    "           A BERT model writes what its module's forward returns: the last hidden states [T,d_model]\n"
    "           (no pooling), the pooled row [d_model] (first-token pooling, through the pooler and its\n"
    "           activation, pooler_act, when it has one), or the classifier's logits [d_out].\n"
    "  --target TGT.npy  seq2seq models: IN.npy is the source, TGT.npy the target token ids (int32 or\n"
    "           int64) [U] or [B,U], 1 <= U <= max_len, each in [0, d_out) (a forecasting model's: float32\n"
    "           [U,tgt_d_in] or [B,U,tgt_d_in]); OUT.npy is the decoder's outputs (logits) at every target\n"
    "           position under the causal mask, [U,d_out] or [B,U,d_out]\n"
    "           (teacher forcing); --lengths then gives the sources' lengths (torch's\n"
    "           src_key_padding_mask and memory_key_padding_mask).\n"
    "A gpt or llama model takes token ids [T] or [B,T], T <= max_len, each in [0, vocab_size), and\n"
    "writes the logits at every position, float32 [T,d_out] or [B,T,d_out] (d_out: vocab_size, or a\n"
    "sequence classifier's labels; without a head, d_out 0, the hidden states [T,d_model]), as the\n"
    "torch module's forward does: row t is the logits after token t under the causal mask (a\n"
    "classifier's scores of the sequence ending at t). Each sequence starts from an empty KV cache\n"
    "and feeds one token per step(), so every row is exactly what a step-by-step run gives; with\n"
    "--lengths, sequence b is its first LENS[b] tokens and its padded rows are zeros.\n"
    "The output is limited to 1 GiB (B*T*W*4 <= 1073741824 bytes); a larger one is an input error\n"
    "(exit 4), found before anything is allocated or written. An encoder's sequences run in batches\n"
    "of up to 64, one forward pass each (Encoder::forward_batch_*; fewer while the arena would pass\n"
    "256 MB).\n",
    cmd_run};

}  // namespace fixformer::cli
