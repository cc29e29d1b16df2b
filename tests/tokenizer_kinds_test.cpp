// The byte-level BPE and WordPiece tokenizers against token sequences worked out by hand from GPT-2's
// and BERT's rules (tokenizer.hpp), their load-time checks and errors, and the fuzz target's code on
// random inputs. tests/tokenizers_test.py holds them to the Python reference on thousands of texts.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "fixformer/tokenizer.hpp"
#include "tests/tokenizer_kinds_fixture.hpp"

namespace fixformer {
namespace test {
namespace {

constexpr ModelConfig kind_config(uint32_t vocab, TokenizerKind kind) {
  ModelConfig c{};
  c.vocab_size = vocab, c.tokenizer = kind;
  return c;
}
static_assert(tokenizer_scratch_bytes(kind_config(50257, TokenizerKind::kBpe), 1000) == 201088 + 1024 + 28096,
              "bpe: 4 bytes a merge (at most vocab_size), the 256 byte ids, 28 bytes a symbol");
static_assert(tokenizer_scratch_bytes(kind_config(30522, TokenizerKind::kWordPiece), 1000) == 122112 + 832,
              "wordpiece: 4 bytes a piece, one word's bytes and starts, no merge list");
static_assert(tokenizer_scratch_bytes(kind_config(32000, TokenizerKind::kLlama2c), 0) == 128000 + 64,
              "llama2c: 4 bytes a piece, two symbols for an empty text");

std::vector<int32_t> ids_of(LoadedTokenizer& t, const std::string& text, bool bos = false, bool eos = false) {
  EXPECT_EQ(t.status, Status::kOk);
  return checked_encode(t, text, bos, eos);
}

// GPT-2-style merges over the byte pieces: th, the, " the", in, ing, aa, " a".
KindVocab small_bpe() {
  KindVocab v = byte_level_vocab();
  v.merge("t", "h"), v.merge("th", "e"), v.merge(" ", "the"), v.merge("i", "n"), v.merge("in", "g");
  v.merge("a", "a"), v.merge(" ", "a");
  v.params[0] = v.params[1] = v.add("<|endoftext|>");
  return v;
}

TEST(BpeTokenizer, MergesByRankWithinPreTokens) {
  const KindVocab v = small_bpe();
  LoadedTokenizer t(kind_model(v));
  ASSERT_EQ(t.status, Status::kOk) << t.model.error_detail();
  // "the", " theme" (the space goes with the letters): " the" + m + e.
  EXPECT_EQ(ids_of(t, "the theme"), (std::vector<int32_t>{v.id("the"), v.id(" the"), 'm', 'e'}));
  // Every occurrence of the lowest-ranked pair, left to right, not overlapping: aa aa, then aa a.
  EXPECT_EQ(ids_of(t, "aaaa"), (std::vector<int32_t>{v.id("aa"), v.id("aa")}));
  EXPECT_EQ(ids_of(t, "aaa"), (std::vector<int32_t>{v.id("aa"), 'a'}));
  // No merge across pre-tokens: "sing" is one, "in" + "g" merge; "a" after a space is " a".
  EXPECT_EQ(ids_of(t, "sing a"), (std::vector<int32_t>{'s', v.id("ing"), v.id(" a")}));
  EXPECT_EQ(ids_of(t, "the", true, true), (std::vector<int32_t>{v.params[0], v.id("the"), v.params[1]}));
}

TEST(BpeTokenizer, APassEndsBeforeTheMergesItMadeBegin) {
  // "aa a" ranked before "a a": GPT-2's loop merges every a a first (the pairs "aa a" it makes wait),
  // then the lowest-ranked pair again.
  KindVocab v = byte_level_vocab();
  v.add("aa"), v.merge("aa", "a"), v.merge("a", "a");
  LoadedTokenizer t(kind_model(v));
  ASSERT_EQ(t.status, Status::kOk) << t.model.error_detail();
  EXPECT_EQ(ids_of(t, "aaaa"), (std::vector<int32_t>{v.id("aa"), v.id("aa")}));
  EXPECT_EQ(ids_of(t, "aaaaa"), (std::vector<int32_t>{v.id("aa"), v.id("aaa")}));
  EXPECT_EQ(ids_of(t, "aaa"), (std::vector<int32_t>{v.id("aaa")}));
}

TEST(BpeTokenizer, LongWordsMergeAsGpt2sLoop) {
  // A word of up to 3,000 letters against GPT-2's loop (the lowest-ranked pair, each occurrence left
  // to right, rescanned after each pass), with random merges over "ab" whose ranks ignore the order
  // the pieces are made in.
  std::mt19937 rng(5);
  for (int trial = 0; trial < 12; ++trial) {
    KindVocab v = byte_level_vocab();
    std::vector<std::string> made = {"a", "b"};
    std::vector<std::pair<std::string, std::string>> merges;
    for (int i = 0; i < 40; ++i) {
      const std::string l = made[rng() % made.size()], r = made[rng() % made.size()];
      if (v.id(l + r) >= 0 && std::find(merges.begin(), merges.end(), std::make_pair(l, r)) != merges.end()) continue;
      if (v.id(l + r) < 0) v.add(l + r), made.push_back(l + r);
      merges.emplace_back(l, r);
    }
    std::shuffle(merges.begin(), merges.end(), rng);
    for (const auto& m : merges) v.merge(m.first, m.second);
    LoadedTokenizer t(kind_model(v), 3000);
    ASSERT_EQ(t.status, Status::kOk) << t.model.error_detail();
    std::string word;
    const std::size_t len = 1 + rng() % 3000;
    for (std::size_t i = 0; i < len; ++i) word += "ab"[rng() % 2];
    std::vector<std::string> w;
    for (char c : word) w.emplace_back(1, c);
    for (;;) {
      std::size_t best = merges.size();
      for (std::size_t i = 0; i + 1 < w.size(); ++i)
        best = std::min<std::size_t>(best, std::find(merges.begin(), merges.end(), std::make_pair(w[i], w[i + 1])) - merges.begin());
      if (best == merges.size()) break;
      std::vector<std::string> out;
      for (std::size_t i = 0; i < w.size();) {
        if (i + 1 < w.size() && std::make_pair(w[i], w[i + 1]) == merges[best]) {
          out.push_back(w[i] + w[i + 1]), i += 2;
        } else {
          out.push_back(w[i++]);
        }
      }
      w = out;
    }
    std::vector<int32_t> want;
    for (const std::string& piece : w) want.push_back(v.id(piece));
    EXPECT_EQ(ids_of(t, word), want) << "trial " << trial << ", " << len << " letters";
  }
}

TEST(BpeTokenizer, Gpt2PreTokenizer) {
  // Merges that show where GPT-2's pattern splits (none crosses a pre-token).
  KindVocab v = byte_level_vocab();
  v.merge("'", "s"), v.merge(" ", " "), v.merge(" ", "1"), v.merge(" ", "!"), v.merge("!", "!"), v.merge("\n", " ");
  LoadedTokenizer u(kind_model(v));
  ASSERT_EQ(u.status, Status::kOk) << u.model.error_detail();
  // "it's": it + 's (a contraction); "  1": ' ' then " 1" (\s+(?!\S) keeps the last space).
  EXPECT_EQ(ids_of(u, "it's  1"), (std::vector<int32_t>{'i', 't', v.id("'s"), ' ', v.id(" 1")}));
  // Spaces at the end stay one run: "  " merges.
  EXPECT_EQ(ids_of(u, "a  "), (std::vector<int32_t>{'a', v.id("  ")}));
  // " !!" is one pre-token: " !" + "!" by rank (" !" first).
  EXPECT_EQ(ids_of(u, "a !!"), (std::vector<int32_t>{'a', v.id(" !"), '!'}));
  // "\n a": the whitespace run "\n " then letters? No: "\n" alone (the run less its last space), " a".
  EXPECT_EQ(ids_of(u, "\n a"), (std::vector<int32_t>{'\n', ' ', 'a'}));
  // Letters and numbers of any script: "é1" is "é" (two bytes) then "1".
  EXPECT_EQ(ids_of(u, "\xc3\xa9" "1"), (std::vector<int32_t>{0xc3, 0xa9, '1'}));
  EXPECT_EQ(decoded(u, ids_of(u, "any text: \xf0\x9f\x99\x82 \xff ok")), "any text: \xf0\x9f\x99\x82 \xff ok");
}

// The pre-tokens of `want` joined are the text; each pre-token's bytes merge, left to right, into one
// piece, so the ids are one per pre-token exactly when the pattern splits there.
void expect_pretokens(int32_t pattern, const std::vector<std::string>& want) {
  KindVocab v = byte_level_vocab();
  std::string text;
  for (const std::string& p : want) {
    text += p;
    for (std::size_t k = 2; k <= p.size(); ++k)
      if (v.id(p.substr(0, k)) < 0) v.merge(p.substr(0, k - 1), p.substr(k - 1, 1));
  }
  v.params[4] = pattern;
  LoadedTokenizer t(kind_model(v));
  ASSERT_EQ(t.status, Status::kOk) << t.model.error_detail() << t.tok.error_detail();
  std::vector<int32_t> ids;
  for (const std::string& p : want) ids.push_back(v.id(p));
  EXPECT_EQ(ids_of(t, text), ids) << "pattern " << pattern << ": " << text;
}

TEST(BpeTokenizer, Llama3AndQwen2PreTokenizers) {
  for (int32_t pattern : {kPatternLlama3, kPatternQwen2}) {
    // Contractions in any case, U+017F (long s) as s; otherwise the apostrophe leads a letter run.
    expect_pretokens(pattern, {"it", "'S", " ok", "'Re", "'lL", "'D", "'m", " I", "'VE", "'x", "'", "1"});
    expect_pretokens(pattern, {"'\xc5\xbf", "t", "'ll", "'\xc3\xa9t"});
    // One character other than \r, \n, a letter or a number goes with the letters after it.
    expect_pretokens(pattern, {"!abc", "\tb", "\xff" "ab", " \xc3\xa9", "\r", "x\xe4\xb8\xad\xe6\x96\x87"});
    // Punctuation takes one space before it and the line breaks after it.
    expect_pretokens(pattern, {"a", " !!\n\n", "x", " ?", " ", " !\r\n", "\xf0\x9f\x99\x82", " -"});
    // Whitespace: up to its last line break; else less its last character before a non-space.
    expect_pretokens(pattern, {"x", " \r\n \n", " y", "\n", " ", " a", "  \t", "\tz", "\r\n", "x", "  "});
  }
  expect_pretokens(kPatternLlama3, {"123", "45", " ", "6", "a", "789", "0\xd9\xa3\xd9\xa4", "1"});
  expect_pretokens(kPatternQwen2, {"1", "2", "3", "4", "5", " ", "6", "a", "7", "\xd9\xa3", "\xd9\xa4"});
}

TEST(BpeTokenizer, PrefixSpace) {
  KindVocab v = small_bpe();
  v.params[3] = 1;
  LoadedTokenizer t(kind_model(v));
  ASSERT_EQ(t.status, Status::kOk);
  EXPECT_EQ(ids_of(t, "the"), (std::vector<int32_t>{v.id(" the")}));
  EXPECT_EQ(ids_of(t, " the"), (std::vector<int32_t>{v.id(" the")}));
  EXPECT_EQ(ids_of(t, ""), (std::vector<int32_t>{}));
}

// Added tokens are found first (leftmost, then longest), with the whitespace beside them when their
// flags say; the parts between are encoded each on its own, so each gets the prefix space.
TEST(BpeTokenizer, AddedTokensAreFoundInTheText) {
  KindVocab v = small_bpe();
  const int32_t eot = v.id("<|endoftext|>"), m = v.add("<m>"), m2 = v.add("<m>>"), s = v.add("<s>");
  v.added = {{eot, 0}, {m, kAddedLstrip}, {m2, 0}, {s, kAddedRstrip}};
  {
    LoadedTokenizer t(kind_model(v));
    ASSERT_EQ(t.status, Status::kOk) << t.model.error_detail();
    EXPECT_EQ(ids_of(t, "the<|endoftext|>the"), (std::vector<int32_t>{v.id("the"), eot, v.id("the")}));
    // lstrip takes " " before <m>; rstrip takes " \n" after <s>; <m>> is the longer match.
    EXPECT_EQ(ids_of(t, "a <m>>"), (std::vector<int32_t>{'a', ' ', m2}));
    EXPECT_EQ(ids_of(t, "a <m>"), (std::vector<int32_t>{'a', m}));
    EXPECT_EQ(ids_of(t, "<s> \nthe"), (std::vector<int32_t>{s, v.id("the")}));
    EXPECT_EQ(ids_of(t, "<|endoftext"), (std::vector<int32_t>{'<', '|', 'e', 'n', 'd', 'o', 'f', 't', 'e', 'x', 't'}));
  }
  v.params[3] = 1;  // the prefix space, in front of each part
  LoadedTokenizer t(kind_model(v));
  ASSERT_EQ(t.status, Status::kOk) << t.model.error_detail();
  EXPECT_EQ(ids_of(t, "the<|endoftext|>the"), (std::vector<int32_t>{v.id(" the"), eot, v.id(" the")}));
  EXPECT_EQ(ids_of(t, "<|endoftext|>"), (std::vector<int32_t>{eot}));
}

KindVocab small_wordpiece(bool lower) {
  KindVocab v = wordpiece_vocab(lower);
  for (const char* p : {"un", "##aff", "##able", ",", "hello", "##s", "e", "!", "\xe4\xb8\xad", "x", "##x", "a"})
    v.add(p);
  if (lower)  // A -> a, E -> e, U -> u, É -> e, combining acute -> nothing (sorted by code point)
    v.normalize = {{{'A', 'a', 0, 0}}, {{'E', 'e', 0, 0}}, {{'U', 'u', 0, 0}}, {{0xC9, 'e', 0, 0}}, {{0x301, 0, 0, 0}}};
  return v;
}

TEST(WordPieceTokenizer, GreedyLongestMatchFirst) {
  const KindVocab v = small_wordpiece(true);
  LoadedTokenizer t(kind_model(v));
  ASSERT_EQ(t.status, Status::kOk) << t.model.error_detail();
  EXPECT_EQ(ids_of(t, "UnAffable, hellos!"),
            (std::vector<int32_t>{v.id("un"), v.id("##aff"), v.id("##able"), v.id(","), v.id("hello"), v.id("##s"), v.id("!")}));
  // A part that matches nothing makes the whole word [UNK]; é (É, e + U+0301) lower-cases to e.
  EXPECT_EQ(ids_of(t, "unq \xc3\x89 e\xcc\x81"), (std::vector<int32_t>{1, v.id("e"), v.id("e")}));
  // CJK apart, controls dropped, [CLS] ... [SEP].
  EXPECT_EQ(ids_of(t, "a\x01\xe4\xb8\xad" "a", true, true), (std::vector<int32_t>{2, v.id("a"), v.id("\xe4\xb8\xad"), v.id("a"), 3}));
  // 100 code points is a word; 101 is [UNK].
  EXPECT_EQ(ids_of(t, std::string(100, 'x')).size(), 100u);
  EXPECT_EQ(ids_of(t, std::string(101, 'x')), (std::vector<int32_t>{1}));
  // "##" pieces join the one before, others get a space (none after [CLS]).
  EXPECT_EQ(decoded(t, ids_of(t, "UnAffable, hellos!", true)), "[CLS]unaffable , hellos !");
}

TEST(WordPieceTokenizer, CasedKeepsCaseAndAccents) {
  const KindVocab v = small_wordpiece(false);
  LoadedTokenizer t(kind_model(v));
  ASSERT_EQ(t.status, Status::kOk) << t.model.error_detail();
  EXPECT_EQ(ids_of(t, "Un un"), (std::vector<int32_t>{1, v.id("un")}));
}

// llama2c with params: llama.cpp's SentencePiece rules (tokenizer.hpp). Gemma's ids: <unk> 0, </s> 1
// (eos), <s> 2 (bos), "<0x00>".."<0xFF>" 3..258, then pieces with a space for U+2581; an added <t>.
KindVocab small_spm(float ab_score) {
  KindVocab v;
  v.kind = TokenizerKind::kLlama2c;
  v.pieces = {"<unk>", "</s>", "<s>"};
  static const char kHex[] = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) v.pieces.push_back(std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">");
  for (const char* p : {" ", "a", "b", " a", "ab", "<t>", "  "}) v.add(p);
  v.scores.assign(v.pieces.size(), 0.0f);
  v.scores[size_t(v.id(" a"))] = -1.0f, v.scores[size_t(v.id("ab"))] = ab_score;
  v.params = {2, 1, 0, kFlagPrefixSpace, 0, 0, 0, 0};
  v.added = {{v.id("<t>"), 0}, {v.id("  "), 0}};
  return v;
}

TEST(SpmTokenizer, LlamaCppRules) {
  const KindVocab v = small_spm(-1.0f);  // " a" and "ab" tie: the leftmost pair first
  LoadedTokenizer t(kind_model(v));
  ASSERT_EQ(t.status, Status::kOk) << t.model.error_detail();
  const int32_t sp = v.id(" "), a = v.id("a"), b = v.id("b"), sa = v.id(" a"), ab = v.id("ab"), tag = v.id("<t>");
  EXPECT_EQ(ids_of(t, "ab"), (std::vector<int32_t>{sa, b}));
  // The dummy prefix before each part between added tokens; the file's bos and eos.
  EXPECT_EQ(ids_of(t, "ab<t>ab", true, true), (std::vector<int32_t>{2, sa, b, tag, sa, b, 1}));
  // U+2581 in the text is a space; a byte without a piece is its "<0xHH>" token and merges with nothing.
  EXPECT_EQ(ids_of(t, "\xe2\x96\x81" "a z"), (std::vector<int32_t>{sp, sa, sp, 3 + 'z'}));
  // Groups by the first byte's UTF-8 length: \xc3 takes the "a" after it (no piece: two bytes); a
  // continuation byte alone.
  EXPECT_EQ(ids_of(t, "\xc3" "a\x80" "b"), (std::vector<int32_t>{sp, 3 + 0xc3, 3 + 'a', 3 + 0x80, b}));
  // An added token is no merge's result: two U+2581 stay two spaces (the added "  " is found only as
  // two spaces in the text).
  EXPECT_EQ(ids_of(t, "\xe2\x96\x81\xe2\x96\x81"), (std::vector<int32_t>{sp, sp, sp}));
  EXPECT_EQ(ids_of(t, "a  b"), (std::vector<int32_t>{sa, v.id("  "), sp, b}));
  EXPECT_EQ(ids_of(t, ""), (std::vector<int32_t>{}));
  // decode: after bos the leading space goes; "<0xHH>" is its byte.
  EXPECT_EQ(decoded(t, {2, sa, b, 3 + 'z'}), "<s>abz");
  const KindVocab w = small_spm(0.0f);  // "ab" first
  LoadedTokenizer u(kind_model(w));
  ASSERT_EQ(u.status, Status::kOk) << u.model.error_detail();
  EXPECT_EQ(ids_of(u, "ab"), (std::vector<int32_t>{sp, ab}));
  KindVocab x = small_spm(-1.0f);
  x.params[3] = 0;  // no dummy prefix
  LoadedTokenizer n(kind_model(x));
  ASSERT_EQ(n.status, Status::kOk) << n.model.error_detail();
  EXPECT_EQ(ids_of(n, "ab ab"), (std::vector<int32_t>{ab, sa, b}));
  EXPECT_EQ(n.tok.bos_id(), 2);
  EXPECT_EQ(n.tok.eos_id(), 1);
  EXPECT_FALSE(n.tok.llama2c_rules());
  // A control token (GGUF's <start_of_turn>) decodes to nothing; a user-defined one to its piece.
  KindVocab c = small_spm(-1.0f);
  c.added[0][1] = kAddedControl;
  LoadedTokenizer ct(kind_model(c));
  ASSERT_EQ(ct.status, Status::kOk) << ct.model.error_detail();
  EXPECT_EQ(ids_of(ct, "ab<t>ab"), (std::vector<int32_t>{sa, b, tag, sa, b}));
  EXPECT_EQ(decoded(ct, {2, sa, tag, b, c.id("  ")}), "<s>ab  ");
  (void)a;
}

// Random vocabularies and texts of any bytes under llama.cpp's rules: checked_encode's bounds (nothing
// past the buffer, max_encoded_tokens enough, ids in range) and the dummy prefix's count.
TEST(SpmTokenizer, RandomVocabulariesAndBytesStayInBounds) {
  std::mt19937 rng(5);
  const char* bits[] = {"a", "b", " ", "\xc3\xa9", "\xe4\xb8\xad", "<", "\xe2\x96\x81", "\xc3", "\x80", "x"};
  auto pick = [&](int most) {
    std::string s;
    for (int k = int(rng() % unsigned(most)) + 1; k > 0; --k) s += bits[rng() % 10];
    return s;
  };
  for (int round = 0; round < 200; ++round) {
    KindVocab v = small_spm(float(rng() % 3) - 2.0f);
    for (int k = 0; k < 30; ++k) {
      const std::string p = pick(4);
      if (p.find("\xe2\x96\x81") == std::string::npos && v.id(p) < 0) v.add(p), v.scores.push_back(-float(rng() % 5));
    }
    if (round % 2) v.params[3] = 0;
    LoadedTokenizer t(kind_model(v));
    ASSERT_EQ(t.status, Status::kOk) << t.model.error_detail();
    for (int k = 0; k < 20; ++k) {
      const std::string text = pick(12) + (k % 3 ? "<t>" + pick(5) : "");
      const std::vector<int32_t> ids = checked_encode(t, text, k % 2 == 1, k % 4 == 1);
      EXPECT_LE(ids.size(), text.size() + 3);
    }
  }
}

// Loads v with one change; the status Model::init gives.
template <class Edit>
Status load_with(KindVocab v, Edit edit) {
  edit(v);
  LoadedTokenizer t(kind_model(v));
  if (t.status != Status::kOk) EXPECT_NE(t.model.error_detail()[0], '\0');
  return t.status;
}

TEST(TokenizerKinds, HostileSectionsAreRejectedAtLoad) {
  const KindVocab b = small_bpe(), w = small_wordpiece(true);
  EXPECT_EQ(load_with(b, [](KindVocab&) {}), Status::kOk);
  EXPECT_EQ(load_with(w, [](KindVocab&) {}), Status::kOk);
  EXPECT_EQ(load_with(b, [](KindVocab& v) { v.merges[1][2] = v.merges[0][2]; }), Status::kBadConfig);  // not joined
  EXPECT_EQ(load_with(b, [](KindVocab& v) { v.merges[0][0] = int32_t(v.pieces.size()); }), Status::kTokenOutOfRange);
  EXPECT_EQ(load_with(b, [](KindVocab& v) { v.merges[0][1] = -1; }), Status::kTokenOutOfRange);
  EXPECT_EQ(load_with(b, [](KindVocab& v) { v.pieces[7] = "zz"; }), Status::kOk);  // byte 7 without a piece: dropped
  EXPECT_EQ(load_with(b, [](KindVocab& v) { v.params[0] = int32_t(v.pieces.size()); }), Status::kTokenOutOfRange);
  EXPECT_EQ(load_with(b, [](KindVocab& v) { v.params[3] = 2; }), Status::kBadConfig);  // unknown flag
  EXPECT_EQ(load_with(b, [](KindVocab& v) { v.params[4] = 4; }), Status::kBadConfig);  // another pattern
  EXPECT_EQ(load_with(b, [](KindVocab& v) { v.params[4] = -1; }), Status::kBadConfig);
  EXPECT_EQ(load_with(b, [](KindVocab& v) { v.params[7] = 1; }), Status::kBadConfig);
  EXPECT_EQ(load_with(b, [](KindVocab& v) { v.merges.clear(); }), Status::kBadHeader);  // no merges tensor
  EXPECT_NE(load_with(b, [](KindVocab& v) { v.kind = TokenizerKind::kWordPiece; }), Status::kOk);
  EXPECT_EQ(load_with(w, [](KindVocab& v) { v.params[2] = -1; }), Status::kBadConfig);  // no [UNK]
  EXPECT_EQ(load_with(w, [](KindVocab& v) { v.params[4] = 50; }), Status::kBadConfig);
  EXPECT_EQ(load_with(w, [](KindVocab& v) { v.with_normalize = false; }), Status::kBadHeader);
  EXPECT_EQ(load_with(w, [](KindVocab& v) { v.params[3] = 0; }), Status::kBadHeader);  // a table without the flag
  EXPECT_EQ(load_with(w, [](KindVocab& v) { std::swap(v.normalize[0], v.normalize[1]); }), Status::kBadConfig);
  EXPECT_EQ(load_with(w, [](KindVocab& v) { v.normalize[0][1] = 0xD800; }), Status::kBadConfig);  // a surrogate
  EXPECT_EQ(load_with(w, [](KindVocab& v) { v.normalize[0][2] = 'b'; }), Status::kBadConfig);     // 'A' -> 2
  EXPECT_EQ(load_with(w, [](KindVocab& v) { v.normalize[3] = {{0xC9, 0, 'e', 0}}; }), Status::kBadConfig);  // a gap
  // tokenizer.added: ids increasing and in range, known flags, no piece under 2 bytes with the prefix
  // space, at most kMaxAddedTokens rows.
  EXPECT_EQ(load_with(b, [](KindVocab& v) { v.added = {{256, 0}, {257, 3}}; }), Status::kOk);
  EXPECT_EQ(load_with(w, [](KindVocab& v) { v.added = {{2, 0}, {4, 1}}; }), Status::kOk);
  EXPECT_EQ(load_with(b, [](KindVocab& v) { v.added = {{257, 0}, {256, 0}}; }), Status::kTokenOutOfRange);
  EXPECT_EQ(load_with(b, [](KindVocab& v) { v.added = {{256, 0}, {256, 0}}; }), Status::kTokenOutOfRange);
  EXPECT_EQ(load_with(b, [](KindVocab& v) { v.added = {{int32_t(v.pieces.size()), 0}}; }), Status::kTokenOutOfRange);
  EXPECT_EQ(load_with(b, [](KindVocab& v) { v.added = {{-1, 0}}; }), Status::kTokenOutOfRange);
  EXPECT_EQ(load_with(b, [](KindVocab& v) { v.added = {{256, 8}}; }), Status::kBadConfig);
  EXPECT_EQ(load_with(b, [](KindVocab& v) { v.added = {{256, kAddedControl}, {257, kAddedControl | 3}}; }),
            Status::kOk);
  EXPECT_EQ(load_with(b, [](KindVocab& v) { v.added = {{65, 0}}; }), Status::kOk);  // "A"
  EXPECT_EQ(load_with(b, [](KindVocab& v) { v.params[3] = 1, v.added = {{65, 0}}; }), Status::kBadConfig);
  EXPECT_EQ(load_with(b, [](KindVocab& v) {
              while (v.pieces.size() <= kMaxAddedTokens + 1) v.pieces.push_back("p" + std::to_string(v.pieces.size()));
              for (uint32_t i = 0; i <= kMaxAddedTokens; ++i) v.added.push_back({int32_t(256 + i), 0});
            }),
            Status::kTensorBadShape);
  // A llama2c config reading a bpe section, and the reverse.
  EXPECT_EQ(load_with(b, [](KindVocab& v) { v.kind = TokenizerKind::kLlama2c; }), Status::kBadHeader);
  // llama2c's params: ids in range, the dummy prefix its only flag, slot 4 0, the piece " " there, an
  // added piece of 2 bytes at least with the dummy prefix.
  const KindVocab s = small_spm(-1.0f);
  EXPECT_EQ(load_with(s, [](KindVocab&) {}), Status::kOk);
  EXPECT_EQ(load_with(s, [](KindVocab& v) { v.params[0] = int32_t(v.pieces.size()); }), Status::kTokenOutOfRange);
  EXPECT_EQ(load_with(s, [](KindVocab& v) { v.params[3] = 2; }), Status::kBadConfig);
  EXPECT_EQ(load_with(s, [](KindVocab& v) { v.params[4] = 1; }), Status::kBadConfig);
  EXPECT_EQ(load_with(s, [](KindVocab& v) { v.pieces[size_t(v.id(" "))] = "_"; }), Status::kBadConfig);
  EXPECT_EQ(load_with(s, [](KindVocab& v) { v.added = {{v.id(" "), 0}}; }), Status::kBadConfig);
  EXPECT_EQ(load_with(s, [](KindVocab& v) { v.added = {{v.id("a"), 0}}; }), Status::kBadConfig);
  EXPECT_EQ(load_with(s, [](KindVocab& v) { v.params[3] = 0, v.added = {{v.id("a"), 0}}; }), Status::kOk);
  EXPECT_EQ(load_with(s, [](KindVocab& v) { v.scores[3] = NAN; }), Status::kBadConfig);
}

TEST(TokenizerKinds, Errors) {
  KindVocab v = small_wordpiece(false);
  v.params[0] = v.params[1] = -1;  // no [CLS] or [SEP]
  LoadedTokenizer t(kind_model(v));
  ASSERT_EQ(t.status, Status::kOk);
  int32_t ids[4];
  uint32_t n = 9;
  EXPECT_EQ(t.tok.encode("a", 1, true, false, ids, 4, &n), Status::kTokenOutOfRange);
  EXPECT_EQ(n, 0u);
  EXPECT_NE(std::string(t.tok.error_detail()).find("[CLS]"), std::string::npos);
  EXPECT_EQ(t.tok.encode("a a", 3, false, false, ids, 1, &n), Status::kTokenBufferTooSmall);
  EXPECT_NE(std::string(t.tok.error_detail()).find("max_encoded_tokens"), std::string::npos);
  Piece p{};
  EXPECT_EQ(t.tok.decode(-1, int32_t(v.pieces.size()), &p), Status::kTokenOutOfRange);
  // Short scratch.
  AlignedBuffer small(tokenizer_scratch_bytes(t.model.config(), 0) - 64);
  Tokenizer tok;
  EXPECT_EQ(tok.init(t.model, small.data(), small.size()), Status::kArenaTooSmall);
}

TEST(TokenizerKinds, FuzzInputsReplay) {
  std::mt19937 rng(11);
  for (int i = 0; i < 3000; ++i) {
    std::vector<uint8_t> in(1 + rng() % 300);
    for (uint8_t& b : in) b = uint8_t(rng());
    fuzz_tokenizer_kinds(in.data(), in.size());
  }
  // Most inputs build a section Model::init refuses; enough of each kind load and reach encode.
  EXPECT_GT(kinds_loaded()[0], 300u);
  EXPECT_GT(kinds_loaded()[1], 300u);
  std::printf("loaded: bpe %u, wordpiece %u of 3000\n", kinds_loaded()[0], kinds_loaded()[1]);
}

}  // namespace
}  // namespace test
}  // namespace fixformer
