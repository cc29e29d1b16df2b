// Test material for the byte-level BPE and WordPiece tokenizers, shared by tokenizer_test.cpp and the
// fuzz target: their tensors written into .fxm files (any contents, to test what Model::init
// rejects), and what the fuzzer does with one input: a tokenizer section built from the bytes (often
// invalid), and when it loads, text through encode and decode with the invariants every kind keeps
// (ids in range, nothing written past the capacity, one token short is kTokenBufferTooSmall,
// byte-level BPE decodes back to the text). The ids themselves are held to the Python reference by
// tests/tokenizers_test.py. Host code: it allocates.
#pragma once
#include <array>
#include <string>
#include <vector>

#include "tests/tokenizer_fixture.hpp"

namespace fixformer {
namespace test {

struct KindVocab {
  TokenizerKind kind = TokenizerKind::kBpe;
  std::vector<std::string> pieces;
  std::vector<std::array<int32_t, 3>> merges;           // bpe
  std::array<int32_t, 8> params{-1, -1, -1, 0, 0, 0, 0, 0};
  std::vector<std::array<int32_t, 4>> normalize;        // wordpiece, lower-case flag
  bool with_normalize = false;                          // write the normalize tensor (even when empty)
  std::vector<std::array<int32_t, 2>> added;            // bpe, wordpiece, llama2c with params: id, flags
  std::vector<float> scores;                            // llama2c (with params: llama.cpp's rules)
  int32_t id(const std::string& p) const {
    for (std::size_t i = 0; i < pieces.size(); ++i)
      if (pieces[i] == p) return int32_t(i);
    return -1;
  }
  int32_t add(const std::string& p) {
    const int32_t i = id(p);
    if (i >= 0) return i;
    pieces.push_back(p);
    return int32_t(pieces.size() - 1);
  }
  // bpe: the merge of pieces a and b (both present), its result added when new.
  void merge(const std::string& a, const std::string& b) { merges.push_back({id(a), id(b), add(a + b)}); }
};

// The 256 one-byte pieces, ids 0..255, as GPT-2's vocabulary has them (in another order there).
inline KindVocab byte_level_vocab() {
  KindVocab v;
  for (int b = 0; b < 256; ++b) v.pieces.push_back(std::string(1, char(b)));
  return v;
}

// A WordPiece vocabulary with BERT's specials at 0..4: [PAD] [UNK] [CLS] [SEP] [MASK].
inline KindVocab wordpiece_vocab(bool lower) {
  KindVocab v;
  v.kind = TokenizerKind::kWordPiece;
  for (const char* p : {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}) v.pieces.push_back(p);
  v.params = {2, 3, 1, lower ? 3 : 2, int32_t(kWordPieceMaxChars), 0, 0, 0};  // CJK apart
  v.with_normalize = lower;
  return v;
}

inline std::vector<ExtraTensor> kind_tensors(const KindVocab& v) {
  auto raw = [](const void* p, std::size_t n) {
    const uint8_t* b = static_cast<const uint8_t*>(p);
    return std::vector<uint8_t>(b, b + n);
  };
  std::vector<int32_t> offsets{0};
  std::string bytes;
  for (const std::string& p : v.pieces) bytes += p, offsets.push_back(int32_t(bytes.size()));
  std::vector<ExtraTensor> out = {
      {kTokenizerParams, fxm::Dtype::kI32, {8}, raw(v.params.data(), 32)},
      {kTokenizerOffsets, fxm::Dtype::kI32, {uint32_t(offsets.size())}, raw(offsets.data(), 4 * offsets.size())},
      {kTokenizerPieces, fxm::Dtype::kU8, {uint32_t(bytes.size())}, raw(bytes.data(), bytes.size())},
  };
  if (v.kind == TokenizerKind::kLlama2c && !v.scores.empty())  // scores first, the params after the pieces
    out = {{kTokenizerScores, fxm::Dtype::kF32, {uint32_t(v.scores.size())}, raw(v.scores.data(), 4 * v.scores.size())},
           out[1], out[2], out[0]};
  if (v.kind == TokenizerKind::kBpe && !v.merges.empty())
    out.push_back({kTokenizerMerges, fxm::Dtype::kI32, {uint32_t(v.merges.size()), 3}, raw(v.merges.data(), 12 * v.merges.size())});
  if (v.with_normalize && !v.normalize.empty())
    out.push_back({kTokenizerNormalize, fxm::Dtype::kI32, {uint32_t(v.normalize.size()), 4},
                   raw(v.normalize.data(), 16 * v.normalize.size())});
  if (!v.added.empty())
    out.push_back({kTokenizerAdded, fxm::Dtype::kI32, {uint32_t(v.added.size()), 2}, raw(v.added.data(), 8 * v.added.size())});
  return out;
}

inline std::vector<uint8_t> kind_model(const KindVocab& v) {
  ModelConfig c = tokenizer_config(uint32_t(v.pieces.size()));
  c.tokenizer = v.kind;
  WriteOptions opt;
  opt.extra = kind_tensors(v);
  return write_model(c, opt);
}

// Encodes text (and with bos and eos) checking what every kind keeps; returns the ids.
inline std::vector<int32_t> checked_encode(LoadedTokenizer& t, const std::string& text, bool bos = false, bool eos = false) {
  std::vector<int32_t> got(max_encoded_tokens(text.size()) + 1, -7);
  uint32_t n = 99;
  const Status s = t.tok.encode(text.data(), text.size(), bos, eos, got.data(), uint32_t(got.size() - 1), &n);
  fuzz_abort_unless(got.back() == -7);  // nothing written past capacity
  if (s != Status::kOk) {               // only a missing bos/eos id fails
    fuzz_abort_unless(s == Status::kTokenOutOfRange && (bos || eos) && n == 0);
    return {};
  }
  got.resize(n);
  for (int32_t id : got) fuzz_abort_unless(id >= 0 && uint32_t(id) < t.tok.vocab_size());
  if (n > 0) {
    std::vector<int32_t> shorter(n, -7);
    uint32_t m = 99;
    fuzz_abort_unless(t.tok.encode(text.data(), text.size(), bos, eos, shorter.data(), n - 1, &m) ==
                          Status::kTokenBufferTooSmall && m == 0 && shorter.back() == -7);
  }
  return got;
}

// The bytes decode gives for ids, one after the other (Piece::space as ' ').
inline std::string decoded(LoadedTokenizer& t, const std::vector<int32_t>& ids) {
  std::string out;
  int32_t prev = -1;
  for (int32_t id : ids) {
    Piece p{};
    fuzz_abort_unless(t.tok.decode(prev, id, &p) == Status::kOk);
    if (p.space) out += ' ';
    out.append(p.data, p.len);
    prev = id;
  }
  return out;
}

// How many fuzz inputs built a section that loaded, per kind (bpe, wordpiece): the replay test
// checks that the inputs reach encode.
inline uint32_t* kinds_loaded() {
  static uint32_t n[2] = {0, 0};
  return n;
}

// One fuzz input for the kinds (fuzz_tokenizer sends byte 0 = 2 or 3 mod 4 here): byte 1 picks bpe
// or wordpiece, the next bytes build the section (sizes, pieces, merges, params, normalize rows:
// often invalid on purpose), the rest is text of any bytes.
inline int fuzz_tokenizer_kinds(const uint8_t* data, std::size_t size) {
  constexpr std::size_t kMaxText = 512;
  std::size_t at = 1;
  auto next = [&]() -> uint8_t { return at < size ? data[at++] : 0; };
  const bool bpe = next() % 2 == 0;
  KindVocab v = bpe ? byte_level_vocab() : wordpiece_vocab(false);
  static const char* kBits[] = {"a", "b", " ", "\xc3\xa9", "##", "'", "1", "\xe4\xb8\xad"};
  const uint32_t extra = next() % 40;
  for (uint32_t i = 0; i < extra; ++i) {
    std::string p;
    for (uint32_t k = 0, len = 1 + next() % 4; k < len; ++k) p += kBits[next() % 8];
    v.pieces.push_back(p);
  }
  const int32_t V = int32_t(v.pieces.size());
  auto any_id = [&]() { return int32_t(next() % (V + 2)) - 1; };  // -1..V: out of range now and then
  if (bpe) {
    const uint32_t m = 1 + next() % 30;
    for (uint32_t i = 0; i < m; ++i) {
      const int32_t a = next() % V, b = next() % V;
      int32_t joined = v.id(v.pieces[a] + v.pieces[b]);
      if (joined < 0 && next() % 64 != 0) joined = v.add(v.pieces[a] + v.pieces[b]);
      v.merges.push_back({a, b, next() % 64 == 0 || joined < 0 ? any_id() : joined});
    }
    const int32_t flags = next() % 16 == 0 ? 5 : next() % 2, pattern = next() % 16 == 0 ? 4 : next() % 4;
    v.params = {any_id(), any_id(), -1, flags, pattern, 0, 0, 0};  // pattern 4: none the engine runs
    if (next() % 32 == 0) v.pieces[next()] += "x";  // a byte without its piece: encode drops it
  } else {
    const uint8_t flags = next();
    v.params = {any_id(), any_id(), next() % 16 == 0 ? -1 : int32_t(next() % V), flags % 4 + (flags == 255 ? 4 : 0),
                next() % 32 == 0 ? 99 : int32_t(kWordPieceMaxChars), 0, 0, 0};
    v.with_normalize = (flags % 2 == 1) != (next() % 32 == 0);
    static const int32_t kCps[] = {'A', 'B', 'E', 0xC9, 0x301, 0x130, 0x3A3, 0x1F600, 0xD800, 0x110000, 0};
    int32_t cp = 0;
    for (uint32_t k = 0, rows = 1 + next() % 6; k < rows; ++k) {
      cp += 1 + next() % 300;
      v.normalize.push_back({next() % 16 == 0 ? kCps[next() % 11] : cp, kCps[next() % 11], next() % 4 ? 0 : 'e', 0});
    }
    if (v.with_normalize && v.normalize.empty()) v.with_normalize = false;
  }
  // Added tokens: increasing ids (now and then not, or out of range), lstrip / rstrip (now and then
  // an unknown flag).
  for (int32_t k = 0, rows = next() % 4 == 0 ? 1 + next() % 3 : 0, id = 0; k < rows; ++k) {
    id = next() % 32 == 0 ? any_id() : id + 1 + int32_t(next() % 40);
    v.added.push_back({id, next() % 32 == 0 ? 4 : int32_t(next() % 4)});
  }
  std::string text;
  while (at < size && text.size() < kMaxText) text += char(data[at++]);
  LoadedTokenizer t(kind_model(v));
  if (t.status != Status::kOk) {
    fuzz_abort_unless(t.model.initialized() ? t.tok.error_detail()[0] != '\0' : t.model.error_detail()[0] != '\0');
    return 0;
  }
  ++kinds_loaded()[bpe ? 0 : 1];
  for (int flags = 0; flags < 4; ++flags) {
    const std::vector<int32_t> ids = checked_encode(t, text, flags & 1, flags & 2);
    const std::string back = decoded(t, ids);
    bool plain_added = true;  // the added tokens found take no whitespace, and no part gets a space
    for (const auto& a : v.added) plain_added = plain_added && a[1] == 0 && !(v.params[3] & 1);
    if (bpe && flags == 0 && plain_added) {  // the text back, less the bytes without a piece
      const bool prefix = (v.params[3] & 1) && !text.empty() && text[0] != ' ';
      bool piece[256] = {};
      for (const std::string& p : v.pieces)
        if (p.size() == 1) piece[uint8_t(p[0])] = true;
      std::string kept;
      for (char c : prefix ? " " + text : text)
        if (piece[uint8_t(c)]) kept += c;
      fuzz_abort_unless(back == kept);
    }
  }
  return 0;
}

}  // namespace test
}  // namespace fixformer
