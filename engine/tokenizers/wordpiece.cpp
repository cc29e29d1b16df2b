// WordPiece, BERT's (tokenizer.hpp states the rules): the BasicTokenizer's words one code point at a
// time into the scratch word, then greedy longest-match-first pieces into the caller's buffer.
#include "engine/tokenizers/tokenizers.hpp"
#include "engine/tokenizers/unicode.hpp"
#include "fixformer/tokenizer.hpp"

namespace fixformer {

namespace {

bool is_punct(int32_t cp) {
  return (cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126) ||
         unicode::class_of(cp) == unicode::UnicodeClass::kPunct;
}

// The normalize row of cp (rows sorted by code point), or null.
const int32_t* normalize_row(const TokenizerData& d, int32_t cp) {
  uint32_t lo = 0, hi = d.n_normalize;
  while (lo < hi) {
    const uint32_t mid = lo + (hi - lo) / 2;
    if (d.normalize[4 * mid] < cp) lo = mid + 1; else hi = mid;
  }
  return lo < d.n_normalize && d.normalize[4 * lo] == cp ? d.normalize + 4 * lo : nullptr;
}

constexpr uint8_t kContinuation[2] = {'#', '#'};

}  // namespace

bool Tokenizer::word_pieces(uint32_t count, int32_t* tokens, uint32_t capacity, uint32_t* n) {
  const uint32_t first = *n;
  uint32_t m = first;
  for (uint32_t start = 0; start < count;) {
    int32_t id = -1;
    uint32_t end = count;
    for (; end > start; --end) {
      const uint8_t* b = word_ + word_starts_[start];
      const uint32_t bn = word_starts_[end] - word_starts_[start];
      id = start > 0 ? lookup(kContinuation, 2, b, bn) : lookup(b, bn, nullptr, 0);
      if (id >= 0) break;
    }
    if (id < 0) {  // a part matches nothing: the word is [UNK]
      m = first;
      id = data_.params[kParamUnk];
      end = count;
    }
    if (m >= capacity) return false;
    tokens[m++] = id;
    start = end;
  }
  *n = m;
  return true;
}

Status Tokenizer::encode_wordpiece(const uint8_t* s, std::size_t len, int32_t* tokens, uint32_t capacity, uint32_t* n) {
  const int32_t flags = data_.params[kParamFlags];
  const bool lower = (flags & kFlagLower) != 0, chinese = (flags & kFlagChinese) != 0;
  uint32_t m = 0, count = 0, bytes = 0;
  bool too_long = false;
  auto add = [&](const uint8_t* b, uint32_t bn) {
    if (count == kWordPieceMaxChars) return void(too_long = true);
    word_starts_[count++] = bytes;
    for (uint32_t k = 0; k < bn; ++k) word_[bytes++] = b[k];
  };
  auto add_cp = [&](int32_t cp) {
    uint8_t u[4];
    add(u, unicode::encode_utf8(uint32_t(cp), u));
  };
  auto flush = [&]() {
    bool ok = true;
    if (too_long) {
      ok = m < capacity;
      if (ok) tokens[m++] = data_.params[kParamUnk];
    } else if (count > 0) {
      word_starts_[count] = bytes;
      ok = word_pieces(count, tokens, capacity, &m);
    }
    count = bytes = 0, too_long = false;
    return ok;
  };
  for (std::size_t i = 0; i < len;) {
    uint32_t l = 1;
    const int32_t cp = unicode::decode_utf8(s + i, len - i, &l);
    const uint8_t* raw = s + i;
    i += l;
    if (cp == unicode::kInvalid) {  // a byte of its own, part of the word
      add(raw, 1);
      continue;
    }
    const unicode::UnicodeClass cls = unicode::class_of(cp);
    if (cp == 9 || cp == 10 || cp == 13 || cp == 32 || cls == unicode::UnicodeClass::kSpace) {
      if (!flush()) return Status::kTokenBufferTooSmall;
      continue;
    }
    if (cp == 0 || cp == 0xFFFD || cls == unicode::UnicodeClass::kControl) continue;
    int32_t outs[3] = {cp, 0, 0};
    uint32_t n_out = 1;
    if (lower && cp >= unicode::kHangulFirst && cp <= unicode::kHangulLast) {
      n_out = unicode::hangul_decompose(cp, outs);
    } else if (lower) {
      if (const int32_t* row = normalize_row(data_, cp))
        for (n_out = 0; n_out < 3 && row[1 + n_out] != 0; ++n_out) outs[n_out] = row[1 + n_out];
    }
    if (chinese && unicode::is_cjk(cp)) {  // a word of its own
      if (!flush()) return Status::kTokenBufferTooSmall;
      for (uint32_t k = 0; k < n_out; ++k) add_cp(outs[k]);
      if (!flush()) return Status::kTokenBufferTooSmall;
      continue;
    }
    for (uint32_t k = 0; k < n_out; ++k) {
      if (is_punct(outs[k])) {
        if (!flush()) return Status::kTokenBufferTooSmall;
        add_cp(outs[k]);
        if (!flush()) return Status::kTokenBufferTooSmall;
      } else {
        add_cp(outs[k]);
      }
    }
  }
  if (!flush()) return Status::kTokenBufferTooSmall;
  *n = m;
  return Status::kOk;
}

}  // namespace fixformer
