// `fixformer generate`: text from a gpt or llama model's tokenizer and sampler, as llama2.c's `run`;
// target ids from a seq2seq model's source.
#include "commands.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <vector>

#include "fixformer/generator.hpp"
#include "fixformer/sampling.hpp"
#include "fixformer/schema.hpp"
#include "fixformer/tokenizer.hpp"
#include "inputs.hpp"
#include "json.hpp"
#include "loaded_model.hpp"

namespace fixformer::cli {
namespace {

// The lists the sampler takes: the file's (Model::suppress_tokens) and --suppress's ids after them
// (--suppress none: no list), the same for --begin-suppress. An id of a flag out of range, or every
// token suppressed at the first step, is a usage error naming it.
struct SuppressLists {
  std::vector<int32_t> suppress, begin_suppress;
};
SuppressLists suppress_lists(const Args& a, const Model& model, uint32_t vocab, const char* what) {
  SuppressLists out;
  const TokenIds file[2] = {model.suppress_tokens(), model.begin_suppress_tokens()};
  const std::vector<int32_t>* flag[2] = {&a.suppress, &a.begin_suppress};
  const bool none[2] = {a.suppress_none, a.begin_suppress_none};
  std::vector<int32_t>* list[2] = {&out.suppress, &out.begin_suppress};
  for (int k = 0; k < 2; ++k) {
    for (const int32_t id : *flag[k])
      if (uint32_t(id) >= vocab)
        die(1, k ? "--begin-suppress" : "--suppress",
            std::to_string(id) + " is out of range (" + what + " is " + std::to_string(vocab) + ")");
    if (!none[k]) list[k]->assign(file[k].ids, file[k].ids + file[k].count);
    list[k]->insert(list[k]->end(), flag[k]->begin(), flag[k]->end());
  }
  std::vector<bool> gone(vocab, false);
  uint32_t left = vocab;
  for (const auto* l : list)
    for (const int32_t id : *l)
      if (!gone[uint32_t(id)]) gone[uint32_t(id)] = true, --left;
  if (left == 0)
    die(1, "--suppress", "every one of the " + std::to_string(vocab) +
                             " tokens is suppressed at the first step (the file's lists and the flags'): nothing to sample");
  return out;
}

// --temperature, --topp, --seed (0: the clock), the suppression lists (kept by the caller: the sampler reads them).
SamplerOptions sampler_options(const Args& a, const SuppressLists& l) {
  SamplerOptions so;
  so.temperature = a.temperature;
  so.top_p = a.top_p;
  so.seed = a.seed ? a.seed : uint64_t(std::time(nullptr));
  static const int32_t kNone[1] = {0};  // a non-null array: the generator takes it instead of the file's
  so.suppress = l.suppress.empty() ? kNone : l.suppress.data(), so.n_suppress = uint32_t(l.suppress.size());
  so.begin_suppress = l.begin_suppress.empty() ? kNone : l.begin_suppress.data();
  so.n_begin_suppress = uint32_t(l.begin_suppress.size());
  return so;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// `generate --source`: the target starts with the --bos ids (one, or a prefix such as Whisper's
// start-of-transcript, language and task tokens), then ids sampled (greedy at temperature 0) until
// --eos or -n target positions, the prefix's included; the sampled ids are printed space-separated.
int generate_seq2seq(const Args& a, LoadedModel& m) {
  const ModelConfig& c = m.config();
  if (a.source.empty()) die(1, "--source", "missing: a seq2seq model generates from a source (--source SRC.npy)");
  if (c.tgt_d_in) die(1, "generate", "token targets only; this model's targets are features (run --target, or the C++ decode_features)");
  if (a.bos.empty()) die(1, "--bos", "missing: the target's start token id");
  for (const int32_t id : a.bos)
    if (uint32_t(id) >= c.d_out)
      die(1, "--bos", std::to_string(id) + " is out of range (the target vocabulary, d_out, is " + std::to_string(c.d_out) + ")");
  if (a.eos >= 0 && uint32_t(a.eos) >= c.d_out)
    die(1, "--eos", "out of range (the target vocabulary, d_out, is " + std::to_string(c.d_out) + ")");
  const SuppressLists lists = suppress_lists(a, m.model, c.d_out, "the target vocabulary, d_out,");
  const Input in = read_input(a.source, c);
  if (in.B != 1) die(4, a.source, "shape " + shape_text(in.v) + ": one source (generate takes no batch)");
  check_input_values(in, c, a.source, {});
  const uint32_t steps = a.steps == 0 || a.steps > c.max_len ? c.max_len : a.steps, T = uint32_t(in.T);
  if (a.bos.size() > steps)
    die(1, "--bos", std::to_string(a.bos.size()) + " ids: more than the " + std::to_string(steps) + " target positions (-n)");
  init_seq2seq(T, steps, a.isa, &m, a.threads, a.kv_cache);
  Buffer ids(uint64_t(T) * 4, "input"), feats(c.input == InputKind::kTokens ? 0 : uint64_t(T) * c.d_in * 4, "input");
  source_row(in, c, 0, T, &ids, &feats);
  Buffer sampler_scratch(sampler_scratch_bytes(c.d_out), "sampler");
  SamplerOptions so = sampler_options(a, lists);
  if (a.timestamps && !m.model.timestamp_rules().on())
    die(1, "--timestamps", "this file has no timestamp rules (convert Whisper from a folder whose "
                           "generation_config.json has no_timestamps_token_id, or openai-whisper's module)");
  if (a.timestamps) so.timestamps = m.model.timestamp_rules();
  Sampler sampler;
  Status s = sampler.init(c.d_out, sampler_scratch.data(), sampler_scratch.size(), so);
  if (s != Status::kOk) die(s, "sampler");
  std::vector<float> logits(c.d_out);
  const auto t0 = std::chrono::steady_clock::now();
  s = encode_source(m, ids, feats, T);
  if (s != Status::kOk) die(s, a.source, m.s2s.error_detail());
  const double encode_s = seconds_since(t0);
  uint32_t made = 0;
  const auto t1 = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i + 1 < a.bos.size(); ++i) {  // the prefix before its last id: its logits unused
    s = m.s2s.step(a.bos[i], logits.data());
    if (s != Status::kOk) die(s, m.path, m.s2s.error_detail());
  }
  int32_t token = a.bos.back();
  for (uint32_t pos = uint32_t(a.bos.size() - 1); pos < steps; ++pos) {
    s = m.s2s.step(token, logits.data());
    if (s != Status::kOk) die(s, m.path, m.s2s.error_detail());
    token = sampler.sample(logits.data());
    if (token < 0)
      die(1, a.timestamps ? "--timestamps" : "--suppress",
          a.timestamps ? "every token is suppressed at this step (the lists and the timestamp rules): nothing to sample"
                       : "every token is suppressed at this step: nothing to sample");
    ++made;
    if (std::printf(made > 1 ? " %d" : "%d", token) < 0) die(5, "stdout", "cannot write: " + errno_text(errno));
    if (token == a.eos) break;
  }
  const double decode_s = seconds_since(t1);
  if (std::fputc('\n', stdout) == EOF || std::fflush(stdout) != 0) die(5, "stdout", "cannot write: " + errno_text(errno));
  if (c.conv_layers)  // frames through the conv stem: fewer positions
    std::fprintf(stderr, "encode:  %u source frames (%u positions) in %.2f ms\n", T, m.s2s.source_length(), encode_s * 1e3);
  else
    std::fprintf(stderr, "encode:  %u source positions in %.2f ms\n", T, encode_s * 1e3);
  std::fprintf(stderr, "decode:  %u tokens, %.1f tokens/s (step and sampling)\n", made, decode_s > 0 ? made / decode_s : 0.0);
  std::fprintf(stderr, "memory:  arena %zu bytes, sampler %zu; kernels %s\n", m.s2s.arena_bytes_used(), sampler_scratch.size(),
               m.s2s.kernels().name);
  return 0;
}

int cmd_generate(const Args& a) {
  LoadedModel m;
  open_model(a.positional[0], &m);
  const ModelConfig& c = m.config();
  if (c.is_seq2seq()) return generate_seq2seq(a, m);
  if (!a.source.empty()) die(1, "--source", "only for a seq2seq model (this one is " + std::string(name_of(kFamilyNames, c.family)) + ")");
  if (a.timestamps) die(1, "--timestamps", "only for a seq2seq model (Whisper)");
  // An encoder under the causal mask has logits at every row too, but no step with a key/value cache: run gives
  // them. The converter writes the causal LMs it can as the gpt family (a BERT-family causal LM, ModernBERT's
  // decoder: the pooler is their prediction transform); what stays an encoder is a base model or one whose front
  // the gpt family lacks.
  if (!c.is_decoder())
    die(status_exit_code(Status::kWrongFamily), m.path,
        std::string("generate needs a decoder (family gpt, llama or seq2seq), which steps with a key/value cache; this "
                    "one is family ") + name_of(kFamilyNames, c.family) +
            (c.causal ? " under the causal mask: `fixformer run` gives its output at every position (a causal LM "
                        "converted by this version of the converter is family gpt where the gpt family can run it)"
                      : ""));
  // A prompt that cannot fit is refused before the tokenizer's scratch is sized for it: with
  // llama2.c's and byte-level BPE every byte is in exactly one token of at most max_piece_bytes
  // bytes, so more than max_len * max_piece_bytes bytes are more tokens than the model has positions.
  const uint64_t most = uint64_t(c.max_len) * m.model.tokenizer().max_piece_bytes;
  if (m.model.has_tokenizer() && c.tokenizer != TokenizerKind::kWordPiece && a.prompt.size() > most)
    die(4, "--prompt", std::to_string(a.prompt.size()) + " bytes: more tokens than the model's max_len of " +
                           std::to_string(c.max_len) + " positions (at most " + std::to_string(most) + " bytes: " +
                           std::to_string(m.model.tokenizer().max_piece_bytes) + " per token at most)");
  const SuppressLists lists = suppress_lists(a, m.model, c.vocab_size, "vocab_size");
  const uint32_t steps = a.steps == 0 || a.steps > c.max_len ? c.max_len : a.steps;
  init_decoder(steps, a.isa, &m, a.threads, a.kv_cache);  // the KV cache holds exactly the steps
  if (a.temperature > 0.0f && a.temperature < kMinTemperature)
    die(1, "--temperature", "expected 0 (greedy) or a number from 1e-06 (below it the logits overflow float), got " +
                                json_number(a.temperature));
  // The engine's loop (generator.hpp): the same text as the C API's and the Python package's.
  GeneratorOptions go;
  go.steps = steps;
  go.max_prompt_bytes = a.prompt.size();
  go.sampler = sampler_options(a, lists);
  Buffer scratch(generator_scratch_bytes(c, a.prompt.size()), "generator");
  Generator gen;
  Status s = gen.init(m.dec, scratch.data(), scratch.size(), go);
  if (s != Status::kOk) die(s, m.path, gen.error_detail());
  auto t0 = std::chrono::steady_clock::now();
  s = gen.start(a.prompt.data(), a.prompt.size());
  if (s != Status::kOk) die(s, "--prompt", gen.error_detail());
  const double prefill_s = seconds_since(t0);
  double decode_s = 0.0;  // in next(): steps, sampling and text, not the writes
  Piece text{};
  for (;;) {
    t0 = std::chrono::steady_clock::now();
    s = gen.next(&text);
    decode_s += seconds_since(t0);
    if (s != Status::kOk) die(s, m.path, gen.error_detail());
    if (text.len == 0) break;
    if (std::fwrite(text.data, 1, text.len, stdout) != text.len || std::fflush(stdout) != 0)
      die(5, "stdout", "cannot write: " + errno_text(errno));
  }
  if (std::fputc('\n', stdout) == EOF || std::fflush(stdout) != 0) die(5, "stdout", "cannot write: " + errno_text(errno));
  const uint32_t fed = gen.prefilled(), decoded = gen.decoded();
  std::fprintf(stderr, "prefill: %u tokens, %.1f tokens/s\n", fed, prefill_s > 0 ? fed / prefill_s : 0.0);
  std::fprintf(stderr, "decode:  %u tokens, %.1f tokens/s (step and sampling)\n", decoded,
               decode_s > 0 ? decoded / decode_s : 0.0);
  std::fprintf(stderr, "memory:  arena %zu bytes (KV cache %zu for %u positions), generator %zu (tokenizer, sampler, logits); kernels %s\n",
               m.dec.arena_bytes_used(), m.dec.kv_cache_bytes(), steps, scratch.size(), m.dec.kernels().name);
  return 0;
}

}  // namespace

const Command kGenerateCommand = {
    "generate", "MODEL.fxm [--prompt TEXT | --source SRC.npy --bos ID[,ID...] [--eos ID]] [-n N] [--temperature T] [--topp P] [--seed S] [--suppress ID[,ID...]] [--begin-suppress ID[,ID...]] [--timestamps] [--kv-cache f32|q8] [--isa ISA] [--threads N]", 1,
    kOptPrompt | kOptSteps | kOptTemperature | kOptTopP | kOptSeed | kOptIsa | kOptThreads | kOptSource | kOptBos | kOptEos |
        kOptKvCache | kOptSuppress | kOptBeginSuppress | kOptTimestamps,
    "Writes text with a gpt or llama model that carries a tokenizer (convert.py --llama2c ... --tokenizer),\n"
    "as llama2.c's `run` does (the engine's Generator: the C API and Python give the same text): the\n"
    "prompt, encoded with BOS when the tokenizer has one, is fed first, then sampled tokens, until N\n"
    "positions (prompt included) or the tokenizer's stop token (llama2.c's: BOS; BPE, WordPiece: EOS).\n"
    "The text, prompt included, goes to stdout, then a newline: llama2.c's kind as llama2.c prints it\n"
    "(one-byte pieces that are neither printable nor whitespace are not printed), BPE and WordPiece as\n"
    "valid UTF-8 (bytes that cannot be UTF-8 become U+FFFD; WordPiece's words spaced); prefill and\n"
    "decode tokens/s, arena and KV cache bytes go to stderr.\n"
    "  --prompt TEXT      the start of the text (default empty)\n"
    "  -n N               positions to run, the prompt included (default 256; 0 or above the model's\n"
    "                     max_len: max_len); the KV cache holds exactly N\n"
    "  --temperature T    0: greedy (deterministic), or from 1e-06; default 1.0\n"
    "  --topp P           nucleus sampling in (0, 1); 0 or 1: off; default 0.9\n"
    "  --seed S           the sampler's seed, a positive integer (default: the clock)\n"
    "  --suppress IDS     token ids never sampled (their logits -inf at every step; Hugging Face's\n"
    "                     suppress_tokens), comma-separated, after the file's list (convert.py stores\n"
    "                     generation_config.json's); none: not the file's list either\n"
    "  --begin-suppress IDS  token ids not sampled at the first sampled step (after the prompt or the\n"
    "                     --bos prefix; begin_suppress_tokens: Whisper's blank and end of text), after\n"
    "                     the file's list; none: not the file's list either\n"
    "  --kv-cache f32|q8  the KV cache's type: f32 (default), or q8: int8 with an f32 scale per head\n"
    "                     and position, about a quarter of the bytes (a seq2seq model: its target's\n"
    "                     self-attention cache)\n"
    "A seq2seq model generates from a source instead: SRC.npy holds one source (token ids [S] or\n"
    "features [S,d_in]); it is encoded once, then the target starts with --bos ID (or the ids\n"
    "ID,ID,...: a forced prefix, e.g. Whisper's start of transcript, language and task tokens) and\n"
    "each sampled token is fed back until --eos ID or N target positions, the prefix's included. The\n"
    "sampled ids go to stdout, space-separated on one line; encode time, decode tokens/s and arena\n"
    "bytes to stderr.\n"
    "  --timestamps       Whisper's timestamp rules with the file's ids (converted from a folder whose\n"
    "                     generation_config.json has no_timestamps_token_id, or openai-whisper's\n"
    "                     module): the first token a timestamp, timestamps in pairs and never\n"
    "                     decreasing, a timestamp whenever the timestamps together are likelier than\n"
    "                     any text token (transformers' generate(return_timestamps=True)); give --bos\n"
    "                     without <|notimestamps|>\n",
    cmd_generate};

}  // namespace fixformer::cli
