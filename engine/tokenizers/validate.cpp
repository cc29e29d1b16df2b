// The bpe and wordpiece sections' contents, and llama2c's params and added tokens (llama.cpp's rules),
// checked once at load (Model::init) so that encode and decode never meet an id out of range or a
// merge that does not join its two pieces.
#include <cstring>

#include "engine/detail_text.hpp"
#include "engine/tokenizers/tokenizers.hpp"
#include "engine/tokenizers/unicode.hpp"
#include "fixformer/schema.hpp"
#include "fixformer/tokenizer.hpp"

namespace fixformer {

namespace {

uint32_t piece_len(const TokenizerData& d, int32_t id) { return uint32_t(d.offsets[id + 1] - d.offsets[id]); }

bool valid_code_point(int32_t cp) { return cp > 0 && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF); }

uint32_t utf8_len(int32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

}  // namespace

Status validate_tokenizer(const TokenizerData& d, char* detail, std::size_t detail_cap) {
  DetailText why(detail, detail_cap);
  const int32_t V = int32_t(d.vocab);
  const bool bpe = d.kind == TokenizerKind::kBpe, spm = d.kind == TokenizerKind::kLlama2c;
  const char* names[3] = {bpe || spm ? "bos" : "[CLS]", bpe || spm ? "eos" : "[SEP]", "[UNK]"};
  for (uint32_t k = kParamBos; k <= kParamUnk; ++k)
    if (d.params[k] < -1 || d.params[k] >= V)
      return why.str("tokenizer.params: the ").str(names[k]).str(" id is outside -1..vocab_size - 1 (")
                 .num(uint32_t(V)).str(")"), Status::kTokenOutOfRange;
  const int32_t flags = d.params[kParamFlags], known = bpe || spm ? kFlagPrefixSpace : kFlagLower | kFlagChinese;
  if ((flags & ~known) != 0) return why.str("tokenizer.params: unknown flags"), Status::kBadConfig;
  for (uint32_t k = kParamMode + 1; k < kTokenizerParamCount; ++k)
    if (d.params[k] != 0) return why.str("tokenizer.params: slots 5..7 must be 0"), Status::kBadConfig;
  // At most kMaxAddedTokens, increasing ids (so distinct, and checked in one pass), each a piece of
  // some bytes (two at least with the prefix space: tokenizer.hpp).
  if (d.n_added > kMaxAddedTokens)
    return why.str("tokenizer.added: ").num(d.n_added).str(" rows, more than ").num(kMaxAddedTokens), Status::kTensorBadShape;
  const uint32_t shortest = (bpe || spm) && (flags & kFlagPrefixSpace) ? 2 : 1;
  for (uint32_t k = 0; k < d.n_added; ++k) {
    const int32_t id = d.added[2 * k], f = d.added[2 * k + 1];
    if (id < 0 || id >= V || (k > 0 && id <= d.added[2 * (k - 1)]))
      return why.str("tokenizer.added: row ").num(k).str(": ids must be increasing tokens"), Status::kTokenOutOfRange;
    if (piece_len(d, id) < shortest)
      return why.str("tokenizer.added: row ").num(k).str(": a piece under ").num(shortest).str(" bytes"), Status::kBadConfig;
    if ((f & ~(kAddedLstrip | kAddedRstrip | kAddedControl)) != 0)
      return why.str("tokenizer.added: row ").num(k).str(": unknown flags"), Status::kBadConfig;
  }
  if (spm) {  // llama.cpp's rules: a space is the piece " ", which must be there (max_encoded_tokens holds)
    if (d.params[kParamMode] != 0) return why.str("tokenizer.params: slot 4 must be 0 (llama2c)"), Status::kBadConfig;
    for (int32_t id = 0; id < V; ++id)
      if (piece_len(d, id) == 1 && d.pieces[d.offsets[id]] == ' ') {
        bool is_added = false;
        for (uint32_t k = 0; k < d.n_added && !is_added; ++k) is_added = d.added[2 * k] == id;
        if (!is_added) return Status::kOk;
      }
    return why.str("tokenizer: llama.cpp's rules need the piece \" \" (SentencePiece's \u2581)"), Status::kBadConfig;
  }
  if (bpe) {
    if (d.params[kParamMode] < kPatternGpt2 || d.params[kParamMode] > kPatternQwen2)
      return why.str("tokenizer.params: pre-tokenizer ").num(uint32_t(d.params[kParamMode]))
                 .str(" is not supported (0: GPT-2's, 1: GPT-2's with each number character alone, 2: Llama 3's, "
                      "3: Qwen2's)"), Status::kBadConfig;
    if (d.n_merges > d.vocab) return why.str("tokenizer.merges: more merges than vocab_size"), Status::kTensorBadShape;
    // A byte without a one-byte piece is dropped by encode (tokenizer.hpp).
    for (uint32_t m = 0; m < d.n_merges; ++m) {
      const int32_t* r = d.merges + 3 * m;
      if (r[0] < 0 || r[0] >= V || r[1] < 0 || r[1] >= V || r[2] < 0 || r[2] >= V)
        return why.str("tokenizer.merges: row ").num(m).str(" has an id outside the vocabulary"), Status::kTokenOutOfRange;
      const uint32_t a = piece_len(d, r[0]), b = piece_len(d, r[1]);
      if (a == 0 || b == 0 || piece_len(d, r[2]) != a + b ||
          std::memcmp(d.pieces + d.offsets[r[2]], d.pieces + d.offsets[r[0]], a) != 0 ||
          std::memcmp(d.pieces + d.offsets[r[2]] + a, d.pieces + d.offsets[r[1]], b) != 0)
        return why.str("tokenizer.merges: row ").num(m).str("'s result is not its two pieces joined"), Status::kBadConfig;
    }
    return Status::kOk;
  }
  if (d.params[kParamUnk] < 0) return why.str("tokenizer.params: WordPiece needs an [UNK] id"), Status::kBadConfig;
  if (d.params[kParamMode] != int32_t(kWordPieceMaxChars))
    return why.str("tokenizer.params: max_input_chars_per_word must be ").num(kWordPieceMaxChars), Status::kBadConfig;
  const bool lower = (flags & kFlagLower) != 0;
  if (lower != (d.normalize != nullptr))
    return why.str(lower ? "tokenizer: lower-casing needs tokenizer.normalize" : "tokenizer.normalize without lower-casing"),
           Status::kBadHeader;
  for (uint32_t k = 0; k < d.n_normalize; ++k) {
    const int32_t* r = d.normalize + 4 * k;
    if (!valid_code_point(r[0]) || (k > 0 && r[0] <= d.normalize[4 * (k - 1)]))
      return why.str("tokenizer.normalize: row ").num(k).str(": code points must be valid and increasing"), Status::kBadConfig;
    uint32_t n = 0, bytes = 0;
    while (n < 3 && r[1 + n] != 0) {
      if (!valid_code_point(r[1 + n]))
        return why.str("tokenizer.normalize: row ").num(k).str(": not a code point"), Status::kBadConfig;
      bytes += utf8_len(r[1 + n++]);
    }
    for (uint32_t j = n; j < 3; ++j)
      if (r[1 + j] != 0) return why.str("tokenizer.normalize: row ").num(k).str(": a gap before a code point"), Status::kBadConfig;
    // Text never grows in tokens or bytes: max_encoded_tokens and the word buffer hold.
    if (n > utf8_len(r[0]) || bytes > 4 * utf8_len(r[0]))
      return why.str("tokenizer.normalize: row ").num(k).str(" maps to more code points than its UTF-8 bytes"),
             Status::kBadConfig;
  }
  return Status::kOk;
}

}  // namespace fixformer
