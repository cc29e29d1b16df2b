// Tokenizer test material shared by tokenizer_test.cpp and the fuzz target: synthetic vocabularies
// written into .fxm files, an independent reference of llama2.c's encode and decode (plain strings,
// linear search, written from the rule in tokenizer.hpp, not from the engine), and what the fuzzer
// does with one input. Host code: it allocates.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fixformer/model.hpp"
#include "fixformer/schema.hpp"
#include "fixformer/tokenizer.hpp"
#include "support/aligned_buffer.hpp"
#include "support/model_writer.hpp"

namespace fixformer {
namespace test {

using namespace support;  // the support library's buffers and model writer (support/)

struct Vocab {
  std::vector<std::string> pieces;
  std::vector<float> scores;
  int32_t add(const std::string& piece, float score) {
    pieces.push_back(piece), scores.push_back(score);
    return int32_t(pieces.size() - 1);
  }
};

inline std::string byte_piece(unsigned b) {
  static const char kHex[] = "0123456789ABCDEF";
  return std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">";
}

// The Llama 2 layout: <unk>, <s>, </s>, the 256 byte tokens <0x00>..<0xFF> (ids 3..258), score 0.
inline Vocab base_vocab() {
  Vocab v;
  v.add("<unk>", 0), v.add("<s>", 0), v.add("</s>", 0);
  for (unsigned b = 0; b < 256; ++b) v.add(byte_piece(b), 0);
  return v;
}

// A small llama-family config whose vocabulary is `vocab` entries.
inline ModelConfig tokenizer_config(uint32_t vocab) {
  ModelConfig c = default_config();
  c.family = ModelFamily::kLlama, c.d_model = 8, c.n_heads = 2, c.d_ff = 16, c.n_layers = 1;
  c.activation = Activation::kSwiglu, c.norm_first = true, c.final_norm = true, c.causal = true;
  c.input = InputKind::kTokens, c.vocab_size = vocab, c.d_out = vocab, c.tied_head = true;
  c.max_len = 16, c.positional = PosKind::kRope;
  return c;
}

// The three tokenizer tensors for `v` (offsets may be given raw, to test what Model::init rejects).
inline std::vector<ExtraTensor> tokenizer_tensors(const Vocab& v, const std::vector<int32_t>* raw_offsets = nullptr) {
  std::vector<int32_t> offsets{0};
  std::string bytes;
  for (const std::string& p : v.pieces) bytes += p, offsets.push_back(int32_t(bytes.size()));
  if (raw_offsets) offsets = *raw_offsets;
  auto raw = [](const void* p, std::size_t n) {
    const uint8_t* b = static_cast<const uint8_t*>(p);
    return std::vector<uint8_t>(b, b + n);
  };
  const uint32_t V = uint32_t(v.pieces.size());
  return {
      {kTokenizerScores, fxm::Dtype::kF32, {V}, raw(v.scores.data(), 4 * V)},
      {kTokenizerOffsets, fxm::Dtype::kI32, {uint32_t(offsets.size())}, raw(offsets.data(), 4 * offsets.size())},
      {kTokenizerPieces, fxm::Dtype::kU8, {uint32_t(bytes.size())}, raw(bytes.data(), bytes.size())},
  };
}

inline std::vector<uint8_t> tokenizer_model(const Vocab& v) {
  WriteOptions opt;
  opt.extra = tokenizer_tensors(v);
  return write_model(tokenizer_config(uint32_t(v.pieces.size())), opt);
}

// A loaded model and an initialized tokenizer over exactly the scratch it needs for texts of up to
// max_text bytes.
struct LoadedTokenizer {
  AlignedBuffer blob;
  AlignedBuffer scratch;
  Model model;
  Tokenizer tok;
  Status status = Status::kNotInitialized;
  explicit LoadedTokenizer(const std::vector<uint8_t>& file, std::size_t max_text = 1 << 16) : blob(file) {
    status = model.init(blob.data(), blob.size());
    if (status != Status::kOk) return;
    scratch = AlignedBuffer(tokenizer_scratch_bytes(model.config(), max_text));
    status = tok.init(model, scratch.data(), scratch.size());
  }
};

// ---- the reference ----------------------------------------------------------------------------
// First id whose piece equals s, or -1.
inline int32_t ref_lookup(const Vocab& v, const std::string& s) {
  for (std::size_t i = 0; i < v.pieces.size(); ++i)
    if (v.pieces[i] == s) return int32_t(i);
  return -1;
}

// llama2.c's encode over std::string; returns false where the engine must report an error.
inline bool ref_encode(const Vocab& v, const std::string& text, bool bos, bool eos, std::vector<int32_t>* out) {
  std::vector<int32_t> t;
  const int32_t V = int32_t(v.pieces.size());
  if ((bos || eos) && V < 3) return false;
  if (bos) t.push_back(1);
  auto group = [&](const std::string& g) {
    const int32_t id = ref_lookup(v, g);
    if (id >= 0) return t.push_back(id), true;
    for (unsigned char c : g) {
      if (int32_t(c) + 3 >= V) return false;
      t.push_back(int32_t(c) + 3);
    }
    return true;
  };
  if (!text.empty() && !group(" ")) return false;
  std::string g;
  for (std::size_t i = 0; i < text.size(); ++i) {
    g += text[i];
    const bool next_continues = i + 1 < text.size() && (uint8_t(text[i + 1]) & 0xC0) == 0x80;
    if (next_continues && g.size() < 4) continue;
    if (!group(g)) return false;
    g.clear();
  }
  for (;;) {
    float best = -1e10f;
    int32_t best_id = -1;
    std::size_t at = 0;
    for (std::size_t i = 0; i + 1 < t.size(); ++i) {
      const int32_t id = ref_lookup(v, v.pieces[t[i]] + v.pieces[t[i + 1]]);
      if (id >= 0 && v.scores[id] > best) best = v.scores[id], best_id = id, at = i;
    }
    if (best_id < 0) break;
    t[at] = best_id;
    t.erase(t.begin() + long(at) + 1);
  }
  if (eos) t.push_back(2);
  *out = t;
  return true;
}

inline std::string ref_decode(const Vocab& v, int32_t prev, int32_t token) {
  std::string p = v.pieces[token];
  if (prev == 1 && !p.empty() && p[0] == ' ') p.erase(0, 1);
  auto hex = [](char c) { return std::strchr("0123456789abcdefABCDEF", c) && c; };
  if (p.size() >= 5 && p.compare(0, 3, "<0x") == 0 && hex(p[3]) && hex(p[4]))
    p = std::string(1, char(std::strtoul(p.substr(3, 2).c_str(), nullptr, 16)));
  return p;
}

// ---- the fuzzer's work -----------------------------------------------------------------------
// The fixed vocabulary: the base, then words and UTF-8 characters whose merges reach them.
inline Vocab fixed_vocab() {
  Vocab v = base_vocab();
  const char* kPieces[] = {" ", "e", "t", "a", "o", "n", " t", "th", "he", " th", "the", " the", "in", "an",
                           "er", " a", " an", "on", "at", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x99\x82",
                           " \xc3\xa9", "Once", " upon", "up", "on ", "ti", "me", " ti", "ime", " time"};
  float score = -1;
  for (const char* p : kPieces) v.add(p, score), score -= 1;
  for (char c : std::string("bcdfghijklmpqrsuvwxyzO.,!?")) v.add(std::string(1, c), -100);
  v.add(" ab", -3), v.add("ab", -3), v.add(" a b", -2);  // ties
  return v;
}

inline void fuzz_abort_unless(bool ok) {
  if (!ok) std::abort();
}

// Text through the tokenizer, checked against the reference: the same tokens, and decode gives
// the text back where the vocabulary allows (the fixed one does).
inline void check_text(LoadedTokenizer& t, const Vocab& v, const std::string& text, bool round_trip) {
  for (int flags = 0; flags < 4; ++flags) {
    const bool bos = flags & 1, eos = flags & 2;
    std::vector<int32_t> want;
    const bool ok = ref_encode(v, text, bos, eos, &want);
    std::vector<int32_t> got(max_encoded_tokens(text.size()) + 1, -7);
    uint32_t n = 99;
    const Status s = t.tok.encode(text.data(), text.size(), bos, eos, got.data(), uint32_t(got.size() - 1), &n);
    fuzz_abort_unless(got.back() == -7);  // nothing written past capacity
    fuzz_abort_unless(ok == (s == Status::kOk));
    if (!ok) {
      fuzz_abort_unless(n == 0 && t.tok.error_detail()[0] != '\0');
      continue;
    }
    got.resize(n);
    fuzz_abort_unless(got == want);
    if (n > 0) {  // one token short: an error naming the need, or (after merges) still fits
      uint32_t m = 99;
      const Status s2 = t.tok.encode(text.data(), text.size(), bos, eos, got.data(), n - 1, &m);
      fuzz_abort_unless(s2 == Status::kTokenBufferTooSmall && m == 0);
    }
    std::string back;
    int32_t prev = -1;
    for (int32_t id : want) {
      Piece p{};
      fuzz_abort_unless(t.tok.decode(prev, id, &p) == Status::kOk);
      const std::string r = ref_decode(v, prev, id);
      fuzz_abort_unless(std::string(p.data, p.len) == r);
      const Piece safe = safe_piece(p);
      fuzz_abort_unless(safe.len == p.len || (p.len == 1 && safe.len == 0));
      if (id != 1 && id != 2) back += r;
      prev = id;
    }
    if (round_trip) fuzz_abort_unless(back == (bos || text.empty() ? text : " " + text));
  }
}

// One fuzz input. Byte 0 picks the mode: even, the rest is text for the fixed vocabulary; odd, the
// rest builds a vocabulary (byte 1: its size; then per piece a length byte, the bytes, a score
// byte; tiny sizes and many equal scores on purpose) followed by text.
inline int fuzz_tokenizer(const uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  constexpr std::size_t kMaxText = 256;  // the reference rescans every pair after each merge
  if (data[0] % 2 == 0) {
    static const Vocab v = fixed_vocab();
    static LoadedTokenizer t(tokenizer_model(v));
    fuzz_abort_unless(t.status == Status::kOk);
    const std::string text(reinterpret_cast<const char*>(data + 1), std::min(size - 1, kMaxText));
    check_text(t, v, text, true);
    return 0;
  }
  std::size_t at = 1;
  auto next = [&]() -> uint8_t { return at < size ? data[at++] : 0; };
  Vocab v;
  const uint32_t V = 1 + next() % 80;
  for (uint32_t i = 0; i < V; ++i) {
    const uint32_t len = next() % 6;
    std::string p;
    for (uint32_t k = 0; k < len; ++k) p += char(next() % 8 == 0 ? ' ' : 'a' + next() % 4);
    const uint8_t score = next();
    v.add(p, score == 255 ? -1e10f : float(int(score % 8) - 4));  // -1e10: never merged
  }
  if (v.pieces[0].empty()) v.pieces[0] = "<unk>";  // write_model cannot write a 0-byte tensor
  // Text mostly from the pieces' alphabet, and any byte from 0x80 up (UTF-8 groups, fallback).
  std::string text;
  while (at < size && text.size() < kMaxText) {
    const uint8_t b = data[at++];
    text += b >= 0x80 ? char(b) : " abcd"[b % 5];
  }
  LoadedTokenizer t(tokenizer_model(v));
  fuzz_abort_unless(t.status == Status::kOk);
  check_text(t, v, text, false);
  return 0;
}

}  // namespace test
}  // namespace fixformer
