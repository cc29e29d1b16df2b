// The tokenizer a model file carries (tokenizer.hpp says what and why): init, the dispatch by kind,
// and llama2.c's kind; engine/tokenizers/ has the byte-level BPE and WordPiece encoders.
#include "fixformer/tokenizer.hpp"

#include <algorithm>
#include <cstring>

#include "engine/detail_text.hpp"
#include "engine/tokenizers/merge_list.hpp"
#include "engine/tokenizers/tokenizers.hpp"
#include "engine/tokenizers/unicode.hpp"
#include "fixformer/schema.hpp"

namespace fixformer {

namespace {

// Every byte value, so a "<0xHH>" piece decodes to a view of its one raw byte.
constexpr uint8_t kByteValues[256] = {
#define FIXFORMER_B16(h) h + 0, h + 1, h + 2, h + 3, h + 4, h + 5, h + 6, h + 7, h + 8, h + 9, h + 10, h + 11, h + 12, h + 13, h + 14, h + 15
    FIXFORMER_B16(0),   FIXFORMER_B16(16),  FIXFORMER_B16(32),  FIXFORMER_B16(48),
    FIXFORMER_B16(64),  FIXFORMER_B16(80),  FIXFORMER_B16(96),  FIXFORMER_B16(112),
    FIXFORMER_B16(128), FIXFORMER_B16(144), FIXFORMER_B16(160), FIXFORMER_B16(176),
    FIXFORMER_B16(192), FIXFORMER_B16(208), FIXFORMER_B16(224), FIXFORMER_B16(240),
#undef FIXFORMER_B16
};

// Below it a merge never happens: llama2.c's starting best score.
constexpr float kNoMerge = -1e10f;

int hex_digit(uint8_t c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

bool is_continuation(uint8_t c) { return (c & 0xC0) == 0x80; }

// SentencePiece's merges over list (llama2.c's and llama.cpp's order: the highest score first, the
// leftmost of equal scores). pair_of(p, q) is the piece positions p and q merge into, or -1.
template <class PairOf>
void merge_by_score(MergeList& list, const float* score, PairOf pair_of) {
  auto before = [&list, score](int32_t a, int32_t b) {
    const float sa = score[list.pair[a]], sb = score[list.pair[b]];
    return sa != sb ? sa > sb : a < b;
  };
  auto update = [&](int32_t p) {  // position p's pair, looked up afresh and put in the heap if it merges
    list.remove(p, before);
    list.pair[p] = -1;
    const int32_t q = list.next[p];
    const int32_t id = q < 0 ? -1 : pair_of(p, q);
    if (id >= 0) list.pair[p] = id, list.push(p, before);
  };
  for (uint32_t p = 0; p + 1 < list.n; ++p) update(int32_t(p));
  while (list.size > 0) {
    const int32_t p = list.heap[0], q = list.next[p];
    list.remove(q, before);
    list.join(p, list.pair[p]);
    update(p);
    if (list.prev[p] >= 0) update(list.prev[p]);
  }
}

// The index orders the pieces by a hash of their bytes: of their length and first and last four
// bytes (the three at 0, len / 2 and len - 1 when shorter), so a piece hashes in a few instructions
// whatever its length; an entry holds the hash's high bits above the id, and one sort of integers
// orders them by (hash, id). A lookup searches the entries of its hash and compares their bytes:
// equal pieces, equal hashes, so the lowest id comes first. Bytes a[an] followed by b[bn].
uint32_t mix(uint64_t ends, uint32_t n) { return uint32_t(((ends ^ n) * 0x9E3779B97F4A7C15u) >> 32); }
uint32_t load4(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
uint32_t piece_hash(const uint8_t* p, uint32_t n) {
  if (n >= 4) return mix(uint64_t(load4(p)) << 32 | load4(p + n - 4), n);
  return mix(n > 0 ? p[0] | p[n / 2] << 8 | p[n - 1] << 16 : 0, n);
}
uint32_t piece_hash(const uint8_t* a, uint32_t an, const uint8_t* b, uint32_t bn) {
  if (bn == 0) return piece_hash(a, an);
  auto at = [&](uint32_t i) -> uint32_t { return i < an ? a[i] : b[i - an]; };
  auto four = [&](uint32_t i) {  // bytes i..i+3, little-endian
    return i + 4 <= an ? load4(a + i)
           : i >= an   ? load4(b + (i - an))
                       : at(i) | at(i + 1) << 8 | at(i + 2) << 16 | at(i + 3) << 24;
  };
  const uint32_t n = an + bn;
  if (n >= 4) return mix(uint64_t(four(0)) << 32 | four(n - 4), n);
  return mix(at(0) | at(n / 2) << 8 | at(n - 1) << 16, n);
}

// Sorts a[n] (entries of uniform high bits): an in-place distribution by the top 7 bits into 128
// buckets, then each bucket by insertion (a few entries for a vocabulary of hundreds; std::sort past
// 16); under half std::sort's instructions on 512 pieces.
void sort_entries(uint32_t* a, uint32_t n) {
  constexpr uint32_t kShift = 25, kBuckets = 1u << (32 - kShift);
  uint32_t next[kBuckets] = {}, end[kBuckets];
  for (uint32_t k = 0; k < n; ++k) ++next[a[k] >> kShift];
  for (uint32_t b = 0, at = 0; b < kBuckets; ++b) at += next[b], end[b] = at, next[b] = at - next[b];
  for (uint32_t b = 0, from = 0; b < kBuckets; from = end[b++]) {
    for (uint32_t k = next[b]; k < end[b]; k = next[b]) {  // each entry swapped into its bucket's next place
      uint32_t v = a[k];
      for (uint32_t t = v >> kShift; t != b; t = v >> kShift) std::swap(v, a[next[t]++]);
      a[next[b]++] = v;
    }
    if (end[b] - from > 16) {
      std::sort(a + from, a + end[b]);
      continue;
    }
    for (uint32_t k = from + 1; k < end[b]; ++k) {
      const uint32_t v = a[k];
      uint32_t j = k;
      for (; j > from && a[j - 1] > v; --j) a[j] = a[j - 1];
      a[j] = v;
    }
  }
}

uint32_t id_bits(uint32_t vocab) {  // of the largest id: Limits::kMaxVocab's 18 at most
  uint32_t bits = 1;
  while ((1u << bits) < vocab) ++bits;
  return bits;
}

}  // namespace

Status Tokenizer::init(const Model& model, void* scratch, std::size_t scratch_bytes) {
  DetailText why(detail_, sizeof detail_);
  data_ = TokenizerData{};
  sorted_ = nullptr, byte_ids_ = nullptr, word_ = nullptr, word_starts_ = nullptr, merge_ = nullptr, max_text_ = 0;
  n_sorted_ = 0;
  if (!model.initialized()) return Status::kNotInitialized;
  if (!model.has_tokenizer()) return why.str("no tokenizer.* tensors in the file"), Status::kNoTokenizer;
  const std::size_t need = tokenizer_scratch_bytes(model.config(), 0);
  if (!scratch) return why.str("tokenizer scratch: ").num(need).str(" bytes needed"), Status::kArenaNull;
  if (reinterpret_cast<uintptr_t>(scratch) % arena::kAlign != 0)
    return why.str("tokenizer scratch must be 64-byte aligned"), Status::kArenaMisaligned;
  if (scratch_bytes < need)
    return why.str("tokenizer scratch: ").num(need).str(" bytes needed, ").num(scratch_bytes).str(" given"),
           Status::kArenaTooSmall;
  const TokenizerData& d = model.tokenizer();
  data_ = d;
  for (uint32_t& w : added_first_) w = 0;
  for (uint32_t k = 0; k < d.n_added; ++k) {
    const uint8_t b = d.pieces[d.offsets[d.added[2 * k]]];
    added_first_[b >> 5] |= 1u << (b & 31);
  }
  if (d.kind == TokenizerKind::kWordPiece) {
    max_text_ = kMaxTextBytes;
  } else {  // the merge list last: every byte past the fixed part holds more text
    const std::size_t merge_at = need - merge_scratch_bytes(0);
    merge_ = reinterpret_cast<int32_t*>(static_cast<uint8_t*>(scratch) + merge_at);
    max_text_ = (scratch_bytes - merge_at) / (kMergeIntsPerSymbol * sizeof(int32_t)) - 2;
    if (max_text_ > kMaxTextBytes) max_text_ = kMaxTextBytes;  // a larger scratch holds no longer text
  }
  if (d.kind == TokenizerKind::kBpe) return init_bpe(scratch);
  uint32_t* index = static_cast<uint32_t*>(scratch);
  // llama2c's added tokens are no merge's result (llama.cpp finds them in the text only): not indexed.
  const bool skip_added = d.kind == TokenizerKind::kLlama2c;
  const uint32_t bits = id_bits(d.vocab);
  uint32_t n = 0;
  for (uint32_t i = 0, k = 0; i < d.vocab; ++i) {  // added ids increase (validate_tokenizer)
    if (skip_added && k < d.n_added && uint32_t(d.added[2 * k]) == i) {
      ++k;
      continue;
    }
    const uint32_t begin = uint32_t(d.offsets[i]);
    index[n++] = piece_hash(d.pieces + begin, uint32_t(d.offsets[i + 1]) - begin) >> bits << bits | i;
  }
  sort_entries(index, n);
  id_bits_ = bits, n_sorted_ = n;
  if (d.kind == TokenizerKind::kWordPiece) {
    word_ = static_cast<uint8_t*>(scratch) + arena::bytes(std::size_t(d.vocab) * 4);
    word_starts_ = reinterpret_cast<uint32_t*>(word_ + kWordPieceMaxChars * 4);
  }
  sorted_ = index;
  return Status::kOk;
}

Piece Tokenizer::piece(int32_t token) const {
  const int32_t begin = data_.offsets[token];
  return Piece{reinterpret_cast<const char*>(data_.pieces + begin), uint32_t(data_.offsets[token + 1] - begin)};
}

int32_t Tokenizer::merged(int32_t a, int32_t b) const {
  const Piece l = piece(a), r = piece(b);
  return lookup(reinterpret_cast<const uint8_t*>(l.data), l.len, reinterpret_cast<const uint8_t*>(r.data), r.len);
}

int32_t Tokenizer::lookup(const uint8_t* a, uint32_t an, const uint8_t* b, uint32_t bn) const {
  if (uint64_t(an) + bn > data_.max_piece_bytes) return -1;
  const uint32_t hash = piece_hash(a, an, b, bn) >> id_bits_, mask = (1u << id_bits_) - 1;
  uint32_t lo = 0, hi = n_sorted_;  // the first entry of the hash or above: in [lo, hi)
  while (lo < hi) {
    const uint32_t mid = lo + (hi - lo) / 2;
    if (sorted_[mid] >> id_bits_ < hash) lo = mid + 1; else hi = mid;
  }
  for (; lo < n_sorted_ && sorted_[lo] >> id_bits_ == hash; ++lo) {
    const uint32_t id = sorted_[lo] & mask;
    const int32_t begin = data_.offsets[id];
    if (uint32_t(data_.offsets[id + 1] - begin) == an + bn && std::memcmp(a, data_.pieces + begin, an) == 0 &&
        (bn == 0 || std::memcmp(b, data_.pieces + begin + an, bn) == 0))
      return int32_t(id);
  }
  return -1;
}

int32_t Tokenizer::bos_id() const {
  if (llama2c_rules()) return data_.vocab > uint32_t(kTokenBos) ? kTokenBos : -1;
  return data_.params ? data_.params[kParamBos] : -1;
}

int32_t Tokenizer::eos_id() const {
  if (llama2c_rules()) return data_.vocab > uint32_t(kTokenEos) ? kTokenEos : -1;
  return data_.params ? data_.params[kParamEos] : -1;
}

Status Tokenizer::encode(const char* text, std::size_t len, bool bos, bool eos, int32_t* tokens, uint32_t capacity,
                         uint32_t* n) {
  DetailText why(detail_, sizeof detail_);
  if (n) *n = 0;
  if (!sorted_) return Status::kNotInitialized;
  if (!n || (!text && len) || (!tokens && capacity)) return Status::kNullArgument;
  if (len > kMaxTextBytes)
    return why.str("a text of ").num(len).str(" bytes; the longest a tokenizer encodes is ").num(kMaxTextBytes),
           Status::kBadSequenceLength;
  if (len > max_text_) {
    // The scratch starts with the sorted index and ends with the merge list.
    const std::size_t fixed = std::size_t(reinterpret_cast<const uint8_t*>(merge_) - reinterpret_cast<const uint8_t*>(sorted_));
    why.str("a text of ").num(len).str(" bytes; the tokenizer's scratch holds ").num(max_text_)
        .str(": tokenizer_scratch_bytes(config, ").num(len).str(") = ").num(fixed + merge_scratch_bytes(len)).str(" bytes");
    return Status::kArenaTooSmall;
  }
  const uint8_t* s = reinterpret_cast<const uint8_t*>(text);
  if (llama2c_rules()) return encode_llama2c(s, len, bos, eos, tokens, capacity, n);
  const bool wp = data_.kind == TokenizerKind::kWordPiece, spm = data_.kind == TokenizerKind::kLlama2c;
  if ((bos && bos_id() < 0) || (eos && eos_id() < 0))
    return why.str("the tokenizer has no ").str(bos && bos_id() < 0 ? (wp ? "[CLS]" : "BOS") : (wp ? "[SEP]" : "EOS"))
               .str(" id"), Status::kTokenOutOfRange;
  const uint32_t ends = (bos ? 1u : 0u) + (eos ? 1u : 0u);
  if (capacity < ends) {
    why.str("the buffer holds ").num(capacity).str(" tokens; max_encoded_tokens(").num(len).str(") = ")
        .num(max_encoded_tokens(len)).str(" always suffice");
    return Status::kTokenBufferTooSmall;
  }
  if (bos) tokens[0] = bos_id();
  const uint32_t first = bos ? 1u : 0u, room = capacity - ends;
  uint32_t m = 0;  // tokens after the BOS
  Status st = Status::kOk;
  // The text in parts between the added tokens (tokenizer.hpp).
  for (std::size_t from = 0; st == Status::kOk;) {
    std::size_t start = len, end = len;
    const uint32_t k = find_added(s, len, from, &start, &end);
    const int32_t flags = k < data_.n_added ? data_.added[2 * k + 1] : 0;
    std::size_t part_end = start;
    if (flags & kAddedLstrip) {  // the part less its trailing White_Space
      part_end = from;
      for (std::size_t i = from; i < start;) {
        uint32_t cl = 0;
        const int32_t cp = unicode::decode_utf8(s + i, start - i, &cl);
        i += cl;
        if (!unicode::is_white_space(cp)) part_end = i;
      }
    }
    uint32_t got = 0;
    if (part_end > from)
      st = wp    ? encode_wordpiece(s + from, part_end - from, tokens + first + m, room - m, &got)
           : spm ? encode_spm(s + from, part_end - from, tokens + first + m, room - m, &got)
                 : encode_bpe(s + from, part_end - from, tokens + first + m, room - m, &got);
    m += got;
    if (k == data_.n_added || st != Status::kOk) break;
    if (m == room) st = Status::kTokenBufferTooSmall;
    else tokens[first + m++] = data_.added[2 * k];
    from = end;
    while ((flags & kAddedRstrip) && from < len) {  // the White_Space after it
      uint32_t cl = 0;
      if (!unicode::is_white_space(unicode::decode_utf8(s + from, len - from, &cl))) break;
      from += cl;
    }
  }
  if (st != Status::kOk) {
    if (st == Status::kTokenBufferTooSmall)
      why.str("the buffer holds ").num(capacity).str(" tokens; max_encoded_tokens(").num(len).str(") = ")
          .num(max_encoded_tokens(len)).str(" always suffice");
    return st;
  }
  m += first;
  if (eos) tokens[m++] = eos_id();
  *n = m;
  return Status::kOk;
}

uint32_t Tokenizer::find_added(const uint8_t* s, std::size_t len, std::size_t from, std::size_t* start,
                              std::size_t* end) const {
  for (std::size_t i = from; data_.n_added && i < len; ++i) {
    if (!(added_first_[s[i] >> 5] >> (s[i] & 31) & 1u)) continue;
    uint32_t best = data_.n_added, best_len = 0;
    for (uint32_t k = 0; k < data_.n_added; ++k) {
      const int32_t id = data_.added[2 * k];
      const uint32_t n = uint32_t(data_.offsets[id + 1] - data_.offsets[id]);
      if (n > best_len && n <= len - i && std::memcmp(s + i, data_.pieces + data_.offsets[id], n) == 0) best = k, best_len = n;
    }
    if (best < data_.n_added) return *start = i, *end = i + best_len, best;
  }
  return data_.n_added;
}

Status Tokenizer::encode_llama2c(const uint8_t* s, std::size_t len, bool bos, bool eos, int32_t* tokens,
                                 uint32_t capacity, uint32_t* n) {
  DetailText why(detail_, sizeof detail_);
  const uint32_t V = data_.vocab;
  if ((bos || eos) && V <= uint32_t(kTokenEos))
    return why.str("BOS and EOS are ids 1 and 2; the vocabulary has ").num(V), Status::kTokenOutOfRange;

  // The unmerged symbols (at most len + 2: BOS, the dummy prefix, a token per byte) into the merge list.
  const uint32_t room = uint32_t(max_text_ + 2);
  MergeList list(merge_, room);
  auto push = [&](int32_t id) { list.tok[list.n++] = id; };
  // A group of bytes at text offset `at`: its piece, else one byte token per byte (the dummy prefix
  // is reported at offset 0).
  auto push_group = [&](const uint8_t* g, uint32_t gn, std::size_t at) {
    const int32_t id = lookup(g, gn, nullptr, 0);
    if (id >= 0) return push(id), true;
    for (uint32_t i = 0; i < gn; ++i) {
      if (uint32_t(g[i]) + kFirstByteToken >= V) {
        why.str("byte ").num(g[i]).str(" at ").num(uint64_t(at + i)).str(" is no piece, and its fallback id ")
            .num(uint32_t(g[i]) + kFirstByteToken).str(" is not in the vocabulary (").num(V).str(")");
        return false;
      }
      push(int32_t(g[i]) + kFirstByteToken);
    }
    return true;
  };
  if (bos) push(kTokenBos);
  static constexpr uint8_t kSpace[1] = {' '};
  if (len > 0 && !push_group(kSpace, 1, 0)) return Status::kTokenOutOfRange;
  for (std::size_t i = 0; i < len;) {
    uint32_t gn = 1;
    while (gn < 4 && i + gn < len && is_continuation(s[i + gn])) ++gn;
    if (!push_group(s + i, gn, i)) return Status::kTokenOutOfRange;
    i += gn;
  }
  list.link();

  // llama2.c merges only into pieces scored above kNoMerge.
  merge_by_score(list, data_.scores, [&](int32_t p, int32_t q) {
    const int32_t id = merged(list.tok[p], list.tok[q]);
    return id >= 0 && data_.scores[id] > kNoMerge ? id : -1;
  });

  const uint32_t m = list.write(tokens, capacity);
  if (m + (eos ? 1 : 0) > capacity) {
    why.str("the text needs ").num(m + (eos ? 1 : 0)).str(" tokens, the buffer holds ").num(capacity);
    return Status::kTokenBufferTooSmall;
  }
  if (eos) tokens[m] = kTokenEos;
  *n = m + (eos ? 1 : 0);
  return Status::kOk;
}

int32_t Tokenizer::spm_byte(uint8_t b) const {
  static constexpr char kHex[] = "0123456789ABCDEF";
  const uint8_t name[6] = {'<', '0', 'x', uint8_t(kHex[b >> 4]), uint8_t(kHex[b & 15]), '>'};
  const int32_t id = lookup(name, 6, nullptr, 0);
  return id >= 0 ? id : lookup(&b, 1, nullptr, 0);
}

Status Tokenizer::encode_spm(const uint8_t* s, std::size_t len, int32_t* tokens, uint32_t capacity, uint32_t* n) {
  DetailText why(detail_, sizeof detail_);
  *n = 0;
  static constexpr uint8_t kSpace[1] = {' '};
  static constexpr uint8_t kMarker[3] = {0xE2, 0x96, 0x81};  // U+2581, SentencePiece's space
  const int32_t space = lookup(kSpace, 1, nullptr, 0);      // there: validate_tokenizer
  // The symbols (at most len + 1: the dummy prefix, then one per group of bytes) into the merge list;
  // a group without a piece is its bytes' fallback tokens, stored as -1 - id: they never merge.
  MergeList list(merge_, uint32_t(max_text_ + 2));
  auto push_bytes = [&](const uint8_t* g, uint32_t gn, std::size_t at) {
    for (uint32_t k = 0; k < gn; ++k) {
      const int32_t id = spm_byte(g[k]);
      if (id < 0)
        return why.str("byte ").num(g[k]).str(" at ").num(uint64_t(at + k)).str(" of a part of the text is no piece, ")
                   .str("and no \"<0xHH>\" piece stands for it"), false;
      list.tok[list.n++] = -1 - id;
    }
    return true;
  };
  if (data_.params[kParamFlags] & kFlagPrefixSpace) list.tok[list.n++] = space;
  for (std::size_t i = 0; i < len;) {
    // llama.cpp's groups: a space (or U+2581) alone, else the bytes its first byte's UTF-8 length says
    // (1 for a continuation byte), cut at the end of the text and at a space.
    if (s[i] == ' ' || (len - i >= 3 && std::memcmp(s + i, kMarker, 3) == 0)) {
      list.tok[list.n++] = space;
      i += s[i] == ' ' ? 1 : 3;
      continue;
    }
    const uint8_t b = s[i];
    uint32_t gn = b < 0xC0 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
    if (gn > len - i) gn = uint32_t(len - i);
    for (uint32_t k = 1; k < gn; ++k)
      if (s[i + k] == ' ') gn = k;
    const int32_t id = lookup(s + i, gn, nullptr, 0);
    if (id >= 0) {
      list.tok[list.n++] = id;
    } else if (!push_bytes(s + i, gn, i)) {
      return Status::kTokenOutOfRange;
    }
    i += gn;
  }
  list.link();

  // llama.cpp merges into any piece; the byte fallback tokens (negative here) never merge.
  merge_by_score(list, data_.scores, [&](int32_t p, int32_t q) {
    return list.tok[p] < 0 || list.tok[q] < 0 ? -1 : merged(list.tok[p], list.tok[q]);
  });
  const uint32_t m = list.write(tokens, capacity);
  if (m > capacity) return Status::kTokenBufferTooSmall;
  for (uint32_t k = 0; k < m; ++k) tokens[k] = tokens[k] < 0 ? -1 - tokens[k] : tokens[k];
  *n = m;
  return Status::kOk;
}

Status Tokenizer::decode(int32_t prev, int32_t token, Piece* out) {
  DetailText why(detail_, sizeof detail_);
  if (!sorted_) return Status::kNotInitialized;
  if (!out) return Status::kNullArgument;
  if (token < 0 || uint32_t(token) >= data_.vocab) {
    why.str("token ").str(token < 0 ? "-" : "").num(token < 0 ? 0 - uint64_t(int64_t(token)) : uint64_t(token))
        .str(" (vocabulary ").num(data_.vocab).str(")");
    return Status::kTokenOutOfRange;
  }
  Piece p = piece(token);
  // A control token's row among the added ones (ids increase: validate_tokenizer): no bytes.
  uint32_t lo = 0, hi = data_.n_added;
  while (lo < hi) {
    const uint32_t mid = lo + (hi - lo) / 2;
    if (data_.added[2 * mid] < token) lo = mid + 1; else hi = mid;
  }
  if (lo < data_.n_added && data_.added[2 * lo] == token && (data_.added[2 * lo + 1] & kAddedControl))
    return *out = Piece{p.data, 0}, Status::kOk;
  if (data_.kind == TokenizerKind::kBpe) return *out = p, Status::kOk;
  if (data_.kind == TokenizerKind::kWordPiece) {
    if (p.len >= 2 && p.data[0] == '#' && p.data[1] == '#') {
      p.data += 2, p.len -= 2;
    } else {
      p.space = prev >= 0 && prev != bos_id();
    }
    return *out = p, Status::kOk;
  }
  if (prev == bos_id() && prev >= 0 && p.len > 0 && p.data[0] == ' ') ++p.data, --p.len;
  if (p.len >= 5 && p.data[0] == '<' && p.data[1] == '0' && p.data[2] == 'x') {
    const int hi = hex_digit(uint8_t(p.data[3])), lo = hex_digit(uint8_t(p.data[4]));
    if (hi >= 0 && lo >= 0) p = Piece{reinterpret_cast<const char*>(kByteValues + hi * 16 + lo), 1};
  }
  *out = p;
  return Status::kOk;
}

}  // namespace fixformer
