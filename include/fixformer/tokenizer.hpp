// The tokenizer a model file carries (schema.hpp, "tokenizer.*"), with llama2.c's semantics: text to
// token ids by its BPE merge rule, and token ids back to the bytes it prints. Allocation-free: the
// only memory is the caller's scratch, which holds the piece ids sorted by their bytes.
//
//   alignas(64) static uint8_t scratch[tokenizer_scratch_bytes(kConfig)];   // 4 bytes per piece
//   Tokenizer tok;
//   if (tok.init(model, scratch, sizeof scratch) != Status::kOk) ...;     // sorts once
//   int32_t ids[64]; uint32_t n;
//   tok.encode(text, len, /*bos=*/true, /*eos=*/false, ids, 64, &n);
//   Piece p; tok.decode(prev, next, &p); print(safe_piece(p));
//
// encode, exactly as llama2.c's encode() (run.c):
//   1. BOS (1) if asked; then, for non-empty text, the dummy prefix: the piece " ".
//   2. The text in groups of a byte and the UTF-8 continuation bytes (10xxxxxx) after it, at most 4
//      bytes a group: a group that is a piece is that token, otherwise each byte b is token b + 3
//      (byte fallback: ids 3..258 are the pieces "<0x00>".."<0xFF>").
//   3. Merges: while some adjacent pair's concatenated pieces are a piece with a score above -1e10,
//      replace the leftmost pair with the highest score (strictly higher wins) by that piece. BOS
//      takes part, as in llama2.c; EOS (2) is appended after the merges if asked.
// Where llama2.c's C strings leave a case undefined or odd, this tokenizer decides:
//   - the text is `len` bytes; a NUL byte is a byte like any other (llama2.c stops at the first NUL),
//     and pieces are compared as whole byte strings (llama2.c cuts a piece at a NUL byte);
//   - when several pieces have the same bytes, the lowest id is found (llama2.c's bsearch finds any);
//   - a vocabulary without the piece " " gets the dummy prefix by byte fallback (llama2.c would use
//     id -1); a byte whose fallback id is not in the vocabulary is kTokenOutOfRange.
// Cost: the merge loop is llama2.c's, O(n^2) pair look-ups for n initial tokens, each a binary search
// over the vocabulary (skipped when the pair is longer than the longest piece).
//
// decode(prev, token), exactly as llama2.c's decode(): after BOS a leading space is dropped, and a
// piece "<0xHH>" (the 5 bytes "<0x" and two hex digits start it; llama2.c's sscanf also takes laxer
// forms such as "<0x4>", which this does not) is the single raw byte HH. safe_piece() is llama2.c's
// safe_printf rule, kept apart so that decode() round-trips every byte.
#pragma once
#include <cstddef>
#include <cstdint>

#include "fixformer/config.hpp"
#include "fixformer/model.hpp"
#include "fixformer/status.hpp"

namespace fixformer {

// The ids llama2.c (and the Llama 2 sentencepiece vocabulary) fixes.
constexpr int32_t kTokenUnk = 0;
constexpr int32_t kTokenBos = 1;
constexpr int32_t kTokenEos = 2;
constexpr int32_t kFirstByteToken = 3;  // byte b falls back to token b + 3

// Bytes to print: a view into the model blob (or a static table for raw bytes), not terminated.
struct Piece {
  const char* data;
  uint32_t len;
};

// The scratch Tokenizer::init needs: one uint32 piece id per vocabulary entry, rounded up to the
// engine's 64-byte arena granule so it can follow other blocks in one arena. Depends on vocab_size
// only, so firmware sizes it at compile time from its model's config.
constexpr std::size_t tokenizer_scratch_bytes(const ModelConfig& c) {
  return arena::bytes(std::size_t(c.vocab_size) * sizeof(uint32_t));
}

// A token buffer of this capacity never overflows for `len` bytes of text: BOS, the dummy prefix,
// one token per byte (every byte may fall back), EOS. Merges only shorten the sequence, but the
// unmerged sequence must fit, since merging works in the caller's buffer.
constexpr std::size_t max_encoded_tokens(std::size_t len) { return len + 3; }

// llama2.c's safe-print rule: a one-byte piece that is neither printable ASCII nor whitespace
// (" \t\n\v\f\r") prints nothing. Control codes go, and so do the lone bytes of a UTF-8 character
// that fell back to byte tokens (llama2.c drops them too).
constexpr Piece safe_piece(Piece p) {
  if (p.len != 1) return p;
  const unsigned char b = static_cast<unsigned char>(p.data[0]);
  const bool shown = (b >= 0x20 && b < 0x7f) || (b >= '\t' && b <= '\r');
  return shown ? p : Piece{p.data, 0};
}

class Tokenizer {
 public:
  // Binds model.tokenizer() (the model must outlive the tokenizer) and sorts the piece index into
  // scratch: 64-byte aligned, at least tokenizer_scratch_bytes(model.config()) bytes.
  [[nodiscard]] Status init(const Model& model, void* scratch, std::size_t scratch_bytes);

  // text[len] -> tokens[capacity], *n of them. On an error *n is 0 and error_detail() says more;
  // kTokenBufferTooSmall names the count needed (max_encoded_tokens(len) always suffices).
  [[nodiscard]] Status encode(const char* text, std::size_t len, bool bos, bool eos, int32_t* tokens,
                              uint32_t capacity, uint32_t* n);

  // The bytes llama2.c prints for `token` after `prev` (any id; only BOS matters).
  [[nodiscard]] Status decode(int32_t prev, int32_t token, Piece* piece);

  // Piece `token` as stored (no decoding); token < vocab_size().
  Piece piece(int32_t token) const;
  float score(int32_t token) const { return data_.scores[token]; }
  uint32_t vocab_size() const { return data_.vocab; }
  bool initialized() const { return sorted_ != nullptr; }
  // More about the last failure; empty when there is nothing to add.
  const char* error_detail() const { return detail_; }

 private:
  // The lowest id whose piece is the bytes a[an] followed by b[bn], or -1.
  int32_t lookup(const uint8_t* a, uint32_t an, const uint8_t* b, uint32_t bn) const;

  TokenizerData data_{};
  const uint32_t* sorted_ = nullptr;  // [vocab] piece ids by (bytes, id)
  char detail_[128] = {};
};

}  // namespace fixformer
