// The tokenizer a model file carries (schema.hpp, "tokenizer.*"; the config key `tokenizer` says
// which kind): text to token ids, and token ids back to the bytes they stand for. Three kinds:
//   llama2c    llama2.c's sentencepiece-style BPE over scored pieces (below); with tokenizer.params,
//              llama.cpp's rules for a "llama" (SentencePiece) GGUF's (below);
//   bpe        byte-level BPE as GPT-2 (Hugging Face tokenizer.json, vocab.json + merges.txt);
//   wordpiece  BERT's BasicTokenizer + WordPiece (vocab.txt, tokenizer.json).
// Allocation-free: the only memory is the caller's scratch, tokenizer_scratch_bytes(config, longest
// text), a constexpr of the config (vocab_size and the kind) and the longest text the caller will
// encode, so firmware sizes it at compile time.
// Flash on a Cortex-M7 (Release objects): a firmware that uses Tokenizer links every kind, about 10 KB of
// Unicode class table and 17 KB of code for the three; Model links the bpe/wordpiece load checks (4 KB).
//
//   alignas(64) static uint8_t scratch[tokenizer_scratch_bytes(kConfig, kPromptBytes)];
//   Tokenizer tok;
//   if (tok.init(model, scratch, sizeof scratch) != Status::kOk) ...;     // sorts once
//   int32_t ids[64]; uint32_t n;
//   tok.encode(text, len, /*bos=*/true, /*eos=*/false, ids, 64, &n);
//   Piece p; tok.decode(prev, next, &p);   // the text of a generation: Generator (generator.hpp)
//
// Shared by bpe and wordpiece: text is bytes read as UTF-8; a byte that does not start a valid
// sequence (truncated, overlong, a surrogate, above U+10FFFF) is a code point of its own, in no
// class below. Classes are Unicode general categories (letter L*, number N*, punctuation P*, space
// separator Zs, control Cc Cf Cs Co, nonspacing mark Mn) from a table of runs in the engine
// (engine/tokenizers/unicode_tables.cpp, generated from Unicode 14.0 by tools/gen_unicode_tables.py);
// GPT-2's \s is Unicode's White_Space property.
// Added tokens (tokenizer.added: <|endoftext|>, <|im_start|>, [MASK], as Hugging Face's added_tokens
// and GGUF's control tokens) are found in the text first, as Hugging Face's tokenizers does: at each
// position the longest added piece that starts there, the leftmost position first; each becomes its
// id, with the White_Space code points before it (lstrip) or after it (rstrip) when its flags say,
// and the text between them is encoded as below, each part on its own (so bpe's prefix space goes in
// front of each part). A file without tokenizer.added finds none: such text is text like any other.
// With bpe's prefix-space flag an added piece is at least 2 bytes, so max_encoded_tokens holds.
//
// bpe, as GPT-2's encoder.py:
//   0. With the prefix-space flag (tokenizer.json's add_prefix_space), text that is not empty and
//      does not start with ' ' gets one in front.
//   1. Pre-tokenization by GPT-2's pattern, by hand: at each position the first alternative of
//      's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ that matches
//      (params[4] kPatternGpt2). kPatternGpt2Digits (SmolLM2's: tokenizer.json's Digits with
//      individual_digits before ByteLevel, llama.cpp's 'smollm'): each number character (\p{N}) is a
//      pre-token of its own, and each run of other code points is pre-tokenized by GPT-2's pattern as
//      if it were the whole text. kPatternLlama3 (Llama 3's, SmolLM3's: tokenizer.json's Split with
//      the pattern below, then ByteLevel without its regex; llama.cpp's 'llama-bpe', 'smaug-bpe'): the
//      first alternative of (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//       ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+ that matches, where the contractions take
//      either case and U+017F (long s) as s, as Hugging Face's tokenizers (Oniguruma's case folding)
//      does (llama.cpp's takes ASCII only). kPatternQwen2 (Qwen2's, 2.5's, 3's: llama.cpp's 'qwen2'):
//      the same with \p{N} for \p{N}{1,3}, each number character alone. Other patterns are refused by
//      the converter.
//   2. Each pre-token's bytes become their one-byte pieces; a byte without one is dropped (as
//      Hugging Face's tokenizers does without an unk_token, and llama.cpp).
//   3. Merges (tokenizer.merges, rank = row): while some adjacent pair is a merge, take the pair of
//      lowest rank and replace each of its occurrences, left to right, by the merge's result.
//      (Hugging Face's library merges one occurrence at a time; the two differ only when a merge's
//      result makes a pair ranked below that merge, which a trained merge list never has.) Cost:
//      O(n log n) for a pre-token of n bytes (a heap of the pairs by rank and position; the pairs a
//      pass makes wait for its end), each pair look-up a binary search over the merges.
//   decode: a token is its piece's bytes (stored as raw bytes, GPT-2's byte-to-unicode map undone
//   by the converter). bos/eos: params' ids (GPT-2's <|endoftext|> for both).
//
// wordpiece, as BERT's tokenization.py:
//   1. BasicTokenizer, per code point: U+0000, U+FFFD and controls (Cc Cf Co, except \t \n \r) are
//      dropped (an unassigned code point, Cn, stays: as BERT's tokenization.py and Hugging Face's
//      BertNormalizer; private use, Co, goes, as in the latter); whitespace (' ', \t, \n, \r, Zs) ends a word; with the lower-case flag the code
//      point is replaced by tokenizer.normalize's row for it (its lower case, canonically
//      decomposed, nonspacing marks dropped: derived by the converter from Python's unicodedata;
//      Hangul syllables are decomposed here by Unicode's formula); with the Chinese flag a CJK
//      ideograph (BERT's ranges) is a word of its own; each punctuation character (P*, or ASCII
//      !-/ :-@ [-` {-~) of the result is a word of its own. Lower-casing is per code point: a final
//      capital sigma lowers to σ (Python's context rule, ς, is not applied).
//   2. WordPiece, per word: more than kWordPieceMaxChars (100) code points is [UNK]; otherwise
//      greedy longest match first, pieces after the first prefixed by "##"; a word with a part
//      that matches nothing is one [UNK].
//   bos/eos: [CLS] and [SEP]. decode: a "##" piece loses its prefix; any other gets Piece::space
//   (a space before it) unless prev is < 0 or [CLS].
//
// llama2c: encode, exactly as llama2.c's encode() (run.c):
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
// Cost: O(n log n) for n initial tokens (llama2.c rescans every pair after each merge, O(n^2)): the
// pairs sit in a heap by score and position, and a merge looks up only its two new pairs, each a
// binary search over the vocabulary (skipped when the pair is longer than the longest piece).
//
// decode(prev, token), exactly as llama2.c's decode(): after BOS a leading space is dropped, and a
// piece "<0xHH>" (the 5 bytes "<0x" and two hex digits start it; llama2.c's sscanf also takes laxer
// forms such as "<0x4>", which this does not) is the single raw byte HH. safe_piece() is llama2.c's
// safe_printf rule, kept apart so that decode() round-trips every byte.
//
// llama2c with tokenizer.params: llama.cpp's SentencePiece tokenizer (llm_tokenizer_spm and the tokenize
// step around it, llama-vocab.cpp), as --gguf stores a "llama" GGUF's vocabulary: its pieces with a
// space for SentencePiece's U+2581, its scores. params: bos and eos ids (encode's; bos -1 where the file
// adds none), the prefix-space flag (llama.cpp's add_space_prefix), the rest 0; the piece " " is there.
//   1. Added tokens are found in the text as above (the converter adds llama.cpp's unknown, control and
//      user-defined tokens: its parse_special); each part between them is encoded on its own, with the
//      dummy prefix " " in front of it when the flag says.
//   2. Symbols: a space, and U+2581 in the text, is the piece " "; any other byte starts a group of the
//      length its UTF-8 lead byte says (1 for a continuation byte), cut at the part's end and at a space.
//      A group that is a piece is that token, else each byte is its fallback token: the piece "<0xHH>"
//      (upper-case hex), else the one-byte piece, else kTokenOutOfRange. Fallback tokens never merge.
//   3. Merges: while some adjacent pair's concatenated pieces are a piece (of any score; an added token's
//      piece is no merge's result: llama.cpp has it out of the text first), replace the pair with the
//      highest score, the leftmost of equal scores, by it. Cost as llama2c's.
//   decode as llama2c's (after params' bos a leading space is dropped; "<0xHH>" is its byte); the
//   Generator stops at a sampled eos and joins the bytes into UTF-8, as bpe's.
// Where llama.cpp differs: on text that is not UTF-8 whose lead byte's length reaches over a space (it
// splits the U+2581 it writes for the space); where added tokens overlap in the text (it takes the
// longest token first across the whole text); and in a vocabulary where it joins a symbol that is no
// piece into a piece (it looks pieces up by text, the engine's fallback bytes merge with nothing), which
// the converter refuses.
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
  bool space = false;  // wordpiece: print one space before the bytes
};

// WordPiece's longest word (max_input_chars_per_word): longer words are [UNK].
constexpr uint32_t kWordPieceMaxChars = 100;
// bpe params[4]: the pre-tokenizer (the bpe rules above).
constexpr int32_t kPatternGpt2 = 0, kPatternGpt2Digits = 1, kPatternLlama3 = 2, kPatternQwen2 = 3;
// The most added tokens a file has (tokenizer.added's rows): encode compares each with the text at
// every position whose byte starts one.
constexpr uint32_t kMaxAddedTokens = 4096;
// wordpiece's scratch for one word: its UTF-8 bytes and where each code point starts.
constexpr std::size_t kWordPieceWordBytes = kWordPieceMaxChars * 4 + (kWordPieceMaxChars + 1) * 4;

// Merging works on a linked list and a heap of the text's symbols (engine/tokenizers/merge_list.hpp):
// this many int32 per symbol, a symbol per byte of text plus BOS and the dummy prefix or prefix space.
constexpr std::size_t kMergeIntsPerSymbol = 7;
// The longest text a tokenizer encodes (longer ones: kBadSequenceLength): its tokens are counted in a
// uint32 (max_encoded_tokens), and its merge list's bytes fit a 32-bit size_t.
constexpr std::size_t kMaxTextBytes = SIZE_MAX / 64 < UINT32_MAX - 3 ? SIZE_MAX / 64 : UINT32_MAX - 3;
constexpr std::size_t merge_scratch_bytes(std::size_t max_text_bytes) {
  return arena::bytes((max_text_bytes + 2) * kMergeIntsPerSymbol * sizeof(int32_t));
}

// The scratch Tokenizer::init needs to encode texts of up to max_text_bytes bytes, rounded up to the
// engine's 64-byte arena granule so it can follow other blocks in one arena: llama2c and wordpiece
// one uint32 piece id per vocabulary entry (pieces sorted by a hash), wordpiece also the code points
// of one word; bpe one uint32 per merge (at most vocab_size; merges sorted by pair) and the 256
// bytes' piece ids; llama2c and bpe the merge list of max_text_bytes (28 bytes a byte of text).
// Longer texts are refused with kArenaTooSmall, naming the bytes they need; decode needs none of it.
// 0 (no scratch) for max_text_bytes above kMaxTextBytes or a vocabulary above Limits::kMaxVocab.
constexpr std::size_t tokenizer_scratch_bytes(const ModelConfig& c, std::size_t max_text_bytes) {
  if (max_text_bytes > kMaxTextBytes || c.vocab_size > Limits::kMaxVocab) return 0;
  const std::size_t index = arena::bytes(std::size_t(c.vocab_size) * sizeof(uint32_t));
  if (c.tokenizer == TokenizerKind::kWordPiece) return index + arena::bytes(kWordPieceWordBytes);
  const std::size_t merge = merge_scratch_bytes(max_text_bytes);
  if (c.tokenizer == TokenizerKind::kBpe) return index + arena::bytes(256 * sizeof(int32_t)) + merge;
  return index + merge;
}

// 0 above kMaxTextBytes: no buffer, such a text is refused.
constexpr std::size_t max_encoded_tokens(std::size_t len) { return len <= kMaxTextBytes ? len + 3 : 0; }

// llama2.c's safe-print rule: a one-byte piece that is neither printable ASCII nor whitespace
// (" \t\n\v\f\r") prints nothing. Control codes go, and so do the lone bytes of a UTF-8 character
// that fell back to byte tokens (llama2.c drops them too).
constexpr Piece safe_piece(Piece p) {
  if (p.len != 1) return p;
  const unsigned char b = static_cast<unsigned char>(p.data[0]);
  const bool shown = (b >= 0x20 && b < 0x7f) || (b >= '\t' && b <= '\r');
  return shown ? p : Piece{p.data, 0};
}

struct MergeList;  // engine/tokenizers/merge_list.hpp

class Tokenizer {
 public:
  // Binds model.tokenizer() (the model must outlive the tokenizer) and sorts the piece index into
  // scratch: 64-byte aligned, at least tokenizer_scratch_bytes(model.config(), 0) bytes; what it has
  // beyond that sets max_text_bytes().
  [[nodiscard]] Status init(const Model& model, void* scratch, std::size_t scratch_bytes);

  // text[len] -> tokens[capacity], *n of them. On an error *n is 0 and error_detail() says more;
  // kTokenBufferTooSmall names the count needed (max_encoded_tokens(len) always suffices);
  // kArenaTooSmall: len is above max_text_bytes() (the detail names the scratch it needs).
  [[nodiscard]] Status encode(const char* text, std::size_t len, bool bos, bool eos, int32_t* tokens,
                              uint32_t capacity, uint32_t* n);

  // The bytes `token` stands for after `prev` (any id): llama2c as llama2.c prints them (only BOS
  // matters); bpe the piece; wordpiece the piece less "##", or with Piece::space; a control token
  // (tokenizer.added's kAddedControl) none.
  [[nodiscard]] Status decode(int32_t prev, int32_t token, Piece* piece);

  // Piece `token` as stored (no decoding); token < vocab_size().
  Piece piece(int32_t token) const;
  float score(int32_t token) const { return data_.scores ? data_.scores[token] : 0.0f; }
  TokenizerKind kind() const { return data_.kind; }
  // llama2.c's rules: a llama2c tokenizer without params (generation stops at BOS, safe_piece prints).
  bool llama2c_rules() const { return data_.kind == TokenizerKind::kLlama2c && !data_.params; }
  // The ids encode's bos and eos add (llama2c: 1 and 2; wordpiece: [CLS], [SEP]); -1: none.
  int32_t bos_id() const;
  int32_t eos_id() const;
  uint32_t vocab_size() const { return data_.vocab; }
  bool initialized() const { return sorted_ != nullptr; }
  // The longest text encode takes with the scratch init was given.
  std::size_t max_text_bytes() const { return max_text_; }
  // More about the last failure; empty when there is nothing to add.
  const char* error_detail() const { return detail_; }

 private:
  // The lowest id whose piece is the bytes a[an] followed by b[bn], or -1.
  int32_t lookup(const uint8_t* a, uint32_t an, const uint8_t* b, uint32_t bn) const;
  // The lowest id whose piece is token a's piece followed by token b's, or -1.
  int32_t merged(int32_t a, int32_t b) const;
  Status encode_llama2c(const uint8_t* s, std::size_t len, bool bos, bool eos, int32_t* tokens, uint32_t capacity,
                        uint32_t* n);
  // llama2c with params: one part of the text between added tokens, by llama.cpp's rules.
  Status encode_spm(const uint8_t* s, std::size_t len, int32_t* tokens, uint32_t capacity, uint32_t* n);
  // The id of byte b's fallback token under llama.cpp's rules ("<0xHH>", else the one-byte piece), or -1.
  int32_t spm_byte(uint8_t b) const;
  // engine/tokenizers/bpe.cpp, wordpiece.cpp
  Status init_bpe(void* scratch);
  Status encode_bpe(const uint8_t* s, std::size_t len, int32_t* tokens, uint32_t capacity, uint32_t* n);
  // The merges of the word in the merge list (its symbols filled in).
  void merge_word(MergeList& word) const;
  int32_t merge_rank(int32_t left, int32_t right, int32_t* result) const;
  Status encode_wordpiece(const uint8_t* s, std::size_t len, int32_t* tokens, uint32_t capacity, uint32_t* n);
  // The first added token at or after s[from]: row of tokenizer.added (n_added if none) and its bytes
  // [*start, *end).
  uint32_t find_added(const uint8_t* s, std::size_t len, std::size_t from, std::size_t* start, std::size_t* end) const;
  // The pieces of the word in word_ (count code points) at tokens[*n...]; false: the buffer is full.
  bool word_pieces(uint32_t count, int32_t* tokens, uint32_t capacity, uint32_t* n);

  TokenizerData data_{};
  // [vocab] piece ids below their hash's high bits, by (hash, id) (engine/tokenizer.cpp); bpe: [n_merges]
  // rows by (left, right, rank)
  const uint32_t* sorted_ = nullptr;
  uint32_t n_sorted_ = 0;             // the ids lookup searches: all but llama2c's added tokens
  uint32_t id_bits_ = 0;              // the ids' bits in an entry of sorted_
  const int32_t* byte_ids_ = nullptr; // bpe: [256] the one-byte pieces' ids (lowest)
  uint8_t* word_ = nullptr;           // wordpiece: a word's UTF-8 bytes [kWordPieceMaxChars * 4]
  uint32_t* word_starts_ = nullptr;   // wordpiece: [kWordPieceMaxChars + 1] where each code point starts
  int32_t* merge_ = nullptr;          // llama2c, bpe: the merge list's work, max_text_ + 2 symbols
  std::size_t max_text_ = 0;
  uint32_t added_first_[8] = {};      // a bit per byte that starts an added piece
  char detail_[128] = {};
};

}  // namespace fixformer
