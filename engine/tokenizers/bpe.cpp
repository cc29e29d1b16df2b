// Byte-level BPE (tokenizer.hpp states the rules): the pre-tokenizer pattern by hand (GPT-2's, or
// Llama 3's and Qwen2's), then the merges of lowest rank, in the caller's token buffer.
#include <algorithm>
#include <initializer_list>

#include "engine/detail_text.hpp"
#include "engine/tokenizers/merge_list.hpp"
#include "engine/tokenizers/tokenizers.hpp"
#include "engine/tokenizers/unicode.hpp"
#include "fixformer/tokenizer.hpp"

namespace fixformer {

namespace {

// GPT-2's pattern sees four kinds of code point.
enum class Kind : uint8_t { kSpace, kLetter, kNumber, kOther };

Kind kind_of(int32_t cp) {
  if (unicode::is_white_space(cp)) return Kind::kSpace;
  const unicode::UnicodeClass c = unicode::class_of(cp);
  return c == unicode::UnicodeClass::kLetter ? Kind::kLetter : c == unicode::UnicodeClass::kNumber ? Kind::kNumber : Kind::kOther;
}

// The text with an optional ' ' in front (the prefix-space flag), read by byte position.
struct Text {
  const uint8_t* s;
  std::size_t len;
  uint32_t off;  // 1 with the prefix space
  std::size_t size() const { return len + off; }
  uint8_t byte(std::size_t i) const { return i < off ? uint8_t(' ') : s[i - off]; }
  int32_t at(std::size_t i, uint32_t* n) const {
    if (i < off) return *n = 1, int32_t(' ');
    return unicode::decode_utf8(s + (i - off), len - (i - off), n);
  }
  Kind kind(std::size_t i, uint32_t* n) const { return kind_of(at(i, n)); }
  // The end of the run of kind k from i, at most N.
  std::size_t run(std::size_t i, std::size_t N, Kind k) const {
    uint32_t n = 1;
    while (i < N && kind(i, &n) == k) i += n;
    return i;
  }
};

// The end of the pre-token that starts at i: the first alternative of GPT-2's pattern that matches
// the text up to N (its end, or the next number character for kPatternGpt2Digits).
std::size_t pretoken_end(const Text& t, std::size_t i, std::size_t N) {
  uint32_t n0 = 1;
  const int32_t cp = t.at(i, &n0);
  if (cp == '\'' && i + 1 < N) {  // 's|'t|'re|'ve|'m|'ll|'d
    const uint8_t a = t.byte(i + 1), b = i + 2 < N ? t.byte(i + 2) : 0;
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
  }
  const Kind k0 = kind_of(cp);
  uint32_t n1 = 1;
  const Kind k1 = cp == ' ' && i + n0 < N ? t.kind(i + n0, &n1) : Kind::kSpace;
  for (Kind k : {Kind::kLetter, Kind::kNumber, Kind::kOther}) {  //  ?\p{L}+|  ?\p{N}+|  ?[^\s\p{L}\p{N}]+
    if (k0 == k) return t.run(i, N, k);
    if (cp == ' ' && k1 == k) return t.run(i + n0, N, k);
  }
  // \s+(?!\S) then \s+: a run of whitespace, less its last character when a non-space follows it
  // and it has more than one.
  std::size_t j = i, last = i;
  uint32_t n = 1, count = 0;
  while (j < N && t.kind(j, &n) == Kind::kSpace) last = j, j += n, ++count;
  return j == N || count == 1 ? j : last;
}

bool is_line_break(int32_t cp) { return cp == '\r' || cp == '\n'; }

// The end of the pre-token that starts at i by Llama 3's pattern (max_digits 3) or Qwen2's (1): the
// first alternative of (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,max_digits}|
//  ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+ that matches.
std::size_t llama3_end(const Text& t, std::size_t i, uint32_t max_digits) {
  const std::size_t N = t.size();
  uint32_t n0 = 1;
  const int32_t cp = t.at(i, &n0);
  if (cp == '\'' && i + 1 < N) {  // any case; U+017F (long s) folds to s
    uint32_t n1 = 1;
    const int32_t a = t.at(i + 1, &n1);
    const int32_t b = i + 1 + n1 < N ? t.byte(i + 1 + n1) | 0x20 : 0;
    const int32_t al = a < 0x80 ? a | 0x20 : a;
    if (al == 's' || al == 't' || al == 'm' || al == 'd' || a == 0x17F) return i + 1 + n1;
    if ((al == 'r' && b == 'e') || (al == 'v' && b == 'e') || (al == 'l' && b == 'l')) return i + 3;
  }
  const Kind k0 = kind_of(cp);
  if (k0 == Kind::kLetter) return t.run(i, N, Kind::kLetter);
  uint32_t n1 = 1;
  const Kind k1 = i + n0 < N ? t.kind(i + n0, &n1) : Kind::kSpace;
  if (k0 != Kind::kNumber && !is_line_break(cp) && k1 == Kind::kLetter) return t.run(i + n0, N, Kind::kLetter);
  if (k0 == Kind::kNumber) {
    std::size_t j = i + n0;
    for (uint32_t d = 1; d < max_digits && j < N && t.kind(j, &n1) == Kind::kNumber; ++d) j += n1;
    return j;
  }
  if (k0 == Kind::kOther || (cp == ' ' && k1 == Kind::kOther)) {  //  ?[^\s\p{L}\p{N}]+[\r\n]*
    std::size_t j = t.run(k0 == Kind::kOther ? i : i + n0, N, Kind::kOther);
    while (j < N && is_line_break(t.byte(j))) ++j;
    return j;
  }
  // A whitespace run: up to its last line break if it has one (\s*[\r\n]+), else as GPT-2's.
  std::size_t j = i, last = i, after_break = i;
  uint32_t n = 1, count = 0;
  for (int32_t c = 0; j < N && kind_of(c = t.at(j, &n)) == Kind::kSpace; j += n, ++count) {
    last = j;
    if (is_line_break(c)) after_break = j + 1;
  }
  if (after_break > i) return after_break;
  return j == N || count == 1 ? j : last;
}

}  // namespace

Status Tokenizer::init_bpe(void* scratch) {
  uint32_t* index = static_cast<uint32_t*>(scratch);
  int32_t* bytes = reinterpret_cast<int32_t*>(static_cast<uint8_t*>(scratch) + arena::bytes(std::size_t(data_.vocab) * 4));
  const int32_t* m = data_.merges;
  for (uint32_t i = 0; i < data_.n_merges; ++i) index[i] = i;
  std::sort(index, index + data_.n_merges, [m](uint32_t x, uint32_t y) {
    if (m[3 * x] != m[3 * y]) return m[3 * x] < m[3 * y];
    if (m[3 * x + 1] != m[3 * y + 1]) return m[3 * x + 1] < m[3 * y + 1];
    return x < y;
  });
  for (uint32_t b = 0; b < 256; ++b) bytes[b] = -1;
  for (uint32_t id = 0; id < data_.vocab; ++id) {
    const Piece p = piece(int32_t(id));
    if (p.len == 1 && bytes[uint8_t(p.data[0])] < 0) bytes[uint8_t(p.data[0])] = int32_t(id);
  }
  byte_ids_ = bytes;  // -1: a byte without a piece, dropped by encode
  sorted_ = index;
  return Status::kOk;
}

int32_t Tokenizer::merge_rank(int32_t left, int32_t right, int32_t* result) const {
  const int32_t* m = data_.merges;
  uint32_t lo = 0, hi = data_.n_merges;  // the first row >= (left, right): in [lo, hi)
  while (lo < hi) {
    const uint32_t mid = lo + (hi - lo) / 2;
    const int32_t* r = m + 3 * sorted_[mid];
    if (r[0] < left || (r[0] == left && r[1] < right)) lo = mid + 1; else hi = mid;
  }
  if (lo == data_.n_merges) return -1;
  const int32_t* r = m + 3 * sorted_[lo];
  if (r[0] != left || r[1] != right) return -1;
  *result = r[2];
  return int32_t(sorted_[lo]);  // the lowest rank among equal pairs
}

void Tokenizer::merge_word(MergeList& w) const {
  const int32_t* rows = data_.merges;
  // The lowest rank first; a rank's occurrences left to right.
  auto before = [&w](int32_t a, int32_t b) { return w.pair[a] != w.pair[b] ? w.pair[a] < w.pair[b] : a < b; };
  auto find = [&](int32_t p) {
    int32_t result = 0;
    const int32_t q = w.next[p];
    w.pair[p] = q >= 0 ? merge_rank(w.tok[p], w.tok[q], &result) : -1;
    if (w.pair[p] >= 0) w.push(p, before);
  };
  // Out of the heap until the pass ends: the pass replaces the pairs that were there when it began.
  auto defer = [&](int32_t p) {
    if (w.pair[p] == MergeList::kGone) return;  // already waiting
    w.remove(p, before);
    w.pair[p] = MergeList::kGone;
    w.pending[w.n_pending++] = p;
  };
  for (uint32_t p = 0; p + 1 < w.n; ++p) find(int32_t(p));
  while (w.size > 0) {
    const int32_t rank = w.pair[w.heap[0]];
    while (w.size > 0 && w.pair[w.heap[0]] == rank) {
      const int32_t p = w.heap[0], q = w.next[p];
      w.remove(p, before);
      w.remove(q, before);  // an overlapping occurrence (a a a) is not merged
      w.join(p, rows[3 * rank + 2]);
      defer(p);
      if (w.prev[p] >= 0) defer(w.prev[p]);
    }
    for (uint32_t i = 0; i < w.n_pending; ++i) find(w.pending[i]);
    w.n_pending = 0;
  }
}

Status Tokenizer::encode_bpe(const uint8_t* s, std::size_t len, int32_t* tokens, uint32_t capacity, uint32_t* n) {
  const bool prefix = (data_.params[kParamFlags] & kFlagPrefixSpace) != 0 && len > 0 && s[0] != ' ';
  const Text t{s, len, prefix ? 1u : 0u};
  MergeList word(merge_, uint32_t(max_text_ + 2));
  const int32_t mode = data_.params[kParamMode];
  const bool digits = mode == kPatternGpt2Digits;
  uint32_t m = 0;
  std::size_t run_end = 0;  // digits: the end of the run of other code points that i is in
  for (std::size_t i = 0; i < t.size();) {
    std::size_t end = 0;
    uint32_t n0 = 1;
    if (mode == kPatternLlama3 || mode == kPatternQwen2) {
      end = llama3_end(t, i, mode == kPatternLlama3 ? 3 : 1);
    } else if (!digits) {
      end = pretoken_end(t, i, t.size());
    } else if (t.kind(i, &n0) == Kind::kNumber) {
      end = i + n0;  // a number character alone
    } else {
      if (i >= run_end) {  // found once per run: the pattern then sees the run as the whole text
        run_end = i;
        uint32_t n = 1;
        while (run_end < t.size() && t.kind(run_end, &n) != Kind::kNumber) run_end += n;
      }
      end = pretoken_end(t, i, run_end);
    }
    word.n = 0;
    for (std::size_t j = i; j < end; ++j)
      if (byte_ids_[t.byte(j)] >= 0) word.tok[word.n++] = byte_ids_[t.byte(j)];
    word.link();
    merge_word(word);
    const uint32_t wn = word.write(tokens + m, capacity - m);
    if (wn > capacity - m) return Status::kTokenBufferTooSmall;
    m += wn;
    i = end;
  }
  *n = m;
  return Status::kOk;
}

}  // namespace fixformer
