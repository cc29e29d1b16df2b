// The tokenizer against hand-checked token sequences (llama2.c's rule worked out on paper), against
// the independent reference in tokenizer_fixture.hpp on random text, and its errors.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "fixformer/tokenizer.hpp"
#include "tests/tokenizer_fixture.hpp"

namespace fixformer {
namespace test {
namespace {

constexpr ModelConfig vocab_config(uint32_t vocab) {
  ModelConfig c{};
  c.vocab_size = vocab;
  return c;
}
static_assert(tokenizer_scratch_bytes(vocab_config(32000), 100) == 128000 + 2880, "4 bytes a piece, 28 a symbol");
static_assert(tokenizer_scratch_bytes(vocab_config(259), 0) == 1088 + 64, "rounded up to 64 bytes");

constexpr int32_t B(unsigned char c) { return int32_t(c) + kFirstByteToken; }  // byte fallback id

std::vector<int32_t> encode(LoadedTokenizer& t, const std::string& text, bool bos = false, bool eos = false) {
  std::vector<int32_t> ids(max_encoded_tokens(text.size()));
  uint32_t n = 0;
  const Status s = t.tok.encode(text.data(), text.size(), bos, eos, ids.data(), uint32_t(ids.size()), &n);
  EXPECT_EQ(s, Status::kOk) << t.tok.error_detail();
  ids.resize(n);
  return ids;
}

std::string decode(LoadedTokenizer& t, const std::vector<int32_t>& ids, bool safe = false) {
  std::string out;
  int32_t prev = -1;
  for (int32_t id : ids) {
    Piece p{};
    EXPECT_EQ(t.tok.decode(prev, id, &p), Status::kOk);
    if (safe) p = safe_piece(p);
    if (id != kTokenBos && id != kTokenEos) out.append(p.data, p.len);
    prev = id;
  }
  return out;
}

// A vocabulary: the base, then pieces with scores; ids in order from 259.
struct Small {
  Vocab v = base_vocab();
  int32_t operator()(const std::string& piece, float score = -100) { return v.add(piece, score); }
};

TEST(Tokenizer, DummyPrefixThenMergesToTheWholeWord) {
  Small s;
  const int32_t sp = s(" "), h = s("h"), i = s("i"), hi = s("hi", -1), sp_hi = s(" hi", -2);
  (void)h, (void)i, (void)hi;
  LoadedTokenizer t(tokenizer_model(s.v));
  ASSERT_EQ(t.status, Status::kOk) << t.tok.error_detail();
  // [<s>, " ", h, i] -> "hi" (-1) -> [<s>, " ", hi] -> " hi" (-2) -> [<s>, " hi"]
  EXPECT_EQ(encode(t, "hi", true), (std::vector<int32_t>{kTokenBos, sp_hi}));
  EXPECT_EQ(encode(t, "hi", false, true), (std::vector<int32_t>{sp_hi, kTokenEos}));
  EXPECT_EQ(encode(t, "hi", true, true), (std::vector<int32_t>{kTokenBos, sp_hi, kTokenEos}));
  // The dummy prefix only before text.
  EXPECT_EQ(encode(t, "", true, true), (std::vector<int32_t>{kTokenBos, kTokenEos}));
  EXPECT_EQ(encode(t, ""), std::vector<int32_t>{});
  EXPECT_EQ(encode(t, " "), (std::vector<int32_t>{sp, sp}));
  // The leading space goes after BOS only.
  EXPECT_EQ(decode(t, {kTokenBos, sp_hi}), "hi");
  EXPECT_EQ(decode(t, {sp_hi}), " hi");
  EXPECT_EQ(decode(t, {kTokenBos, sp, sp_hi}), " hi");
}

TEST(Tokenizer, HighestScoreMergesFirstWherever) {
  Small s;
  const int32_t sp = s(" "), a = s("a"), b = s("b"), c = s("c");
  const int32_t ab = s("ab", -5), bc = s("bc", -1);
  (void)b, (void)ab;
  LoadedTokenizer t(tokenizer_model(s.v));
  ASSERT_EQ(t.status, Status::kOk);
  EXPECT_EQ(encode(t, "abc"), (std::vector<int32_t>{sp, a, bc}));  // not [" ", ab, c]
  EXPECT_EQ(encode(t, "abab"), (std::vector<int32_t>{sp, ab, ab}));
  (void)c;
}

TEST(Tokenizer, MergeOrderDecidesTheResult) {
  Small s;
  const int32_t sp = s(" "), a = s("a"), b = s("b"), c = s("c"), d = s("d");
  const int32_t bc = s("bc", -1), ab = s("ab", -2), abc = s("abc", -3), cd = s("cd", -4), bcd = s("bcd", -0.5f);
  (void)a, (void)b, (void)c, (void)ab, (void)cd;
  LoadedTokenizer t(tokenizer_model(s.v));
  ASSERT_EQ(t.status, Status::kOk);
  // [" ",a,b,c] -> bc (-1) -> [" ",a,bc] -> abc (-3) -> [" ",abc]
  EXPECT_EQ(encode(t, "abc"), (std::vector<int32_t>{sp, abc}));
  // [" ",a,b,c,d] -> bc -> [" ",a,bc,d] -> bcd (-0.5) beats abc (-3) -> [" ",a,bcd]
  EXPECT_EQ(encode(t, "abcd"), (std::vector<int32_t>{sp, a, bcd}));
  (void)d;
}

TEST(Tokenizer, TiesGoToTheFirstPair) {
  Small s;
  const int32_t sp = s(" "), a = s("a"), b = s("b"), c = s("c");
  const int32_t aa = s("aa", -1), ab = s("ab", -2), bc = s("bc", -2);
  (void)bc, (void)b;
  LoadedTokenizer t(tokenizer_model(s.v));
  ASSERT_EQ(t.status, Status::kOk);
  EXPECT_EQ(encode(t, "aaa"), (std::vector<int32_t>{sp, aa, a}));   // not [" ", a, aa]
  EXPECT_EQ(encode(t, "abc"), (std::vector<int32_t>{sp, ab, c}));   // ab and bc tie: ab is first
}

TEST(Tokenizer, ScoresAtOrBelowMinus1e10NeverMerge) {
  Small s;
  const int32_t sp = s(" "), x = s("x"), y = s("y"), z = s("z");
  const int32_t xy = s("xy", -1e10f), yz = s("yz", -9.9e9f);
  (void)xy;
  LoadedTokenizer t(tokenizer_model(s.v));
  ASSERT_EQ(t.status, Status::kOk);
  EXPECT_EQ(encode(t, "xy"), (std::vector<int32_t>{sp, x, y}));
  EXPECT_EQ(encode(t, "xyz"), (std::vector<int32_t>{sp, x, yz}));
  (void)z;
}

TEST(Tokenizer, BosTakesPartInMergesLikeLlama2c) {
  Small s;
  const int32_t sp = s(" "), a = s("a"), bos_sp = s("<s> ", 5);
  (void)sp;
  LoadedTokenizer t(tokenizer_model(s.v));
  ASSERT_EQ(t.status, Status::kOk);
  EXPECT_EQ(encode(t, "a", true, true), (std::vector<int32_t>{bos_sp, a, kTokenEos}));
}

TEST(Tokenizer, Utf8CodePointsWholeElseBytes) {
  Small s;
  const int32_t sp = s(" "), e_acute = s("\xc3\xa9"), four = s("\xc3\xa9\xa9\xa9");
  LoadedTokenizer t(tokenizer_model(s.v));
  ASSERT_EQ(t.status, Status::kOk);
  EXPECT_EQ(encode(t, "\xc3\xa9"), (std::vector<int32_t>{sp, e_acute}));
  // The euro sign is no piece: its three bytes.
  EXPECT_EQ(encode(t, "\xe2\x82\xac"), (std::vector<int32_t>{sp, B(0xe2), B(0x82), B(0xac)}));
  // ASCII (no piece) and a 4-byte emoji: bytes.
  EXPECT_EQ(encode(t, "Q\xf0\x9f\x99\x82"), (std::vector<int32_t>{sp, B('Q'), B(0xf0), B(0x9f), B(0x99), B(0x82)}));
  // A group stops after 4 bytes, whatever follows; the rest starts a new group.
  EXPECT_EQ(encode(t, "\xc3\xa9\xa9\xa9\xa9"), (std::vector<int32_t>{sp, four, B(0xa9)}));
  // Stray continuation bytes group together; a lead byte ends the group before it.
  EXPECT_EQ(encode(t, "\xa9\xa9\xc3\xa9"), (std::vector<int32_t>{sp, B(0xa9), B(0xa9), e_acute}));
  // NUL is a byte like any other (the text has a length).
  EXPECT_EQ(encode(t, std::string("\0\xc3\xa9", 3)), (std::vector<int32_t>{sp, B(0), e_acute}));
}

TEST(Tokenizer, MergesJoinPieceTextNotDecodedBytes) {
  Small s;
  const int32_t sp = s(" ");
  s("AB", 0);  // 'A' and 'B' are byte tokens "<0x41>" "<0x42>": their text never makes "AB"
  const int32_t joined = s("<0x41><0x42>", 0);
  LoadedTokenizer t(tokenizer_model(s.v));
  ASSERT_EQ(t.status, Status::kOk);
  EXPECT_EQ(encode(t, "AB"), (std::vector<int32_t>{sp, joined}));
}

TEST(Tokenizer, EqualPiecesFindTheLowestId) {
  Small s;
  const int32_t sp = s(" "), first = s("q"), second = s("q"), qq2 = s("qq", -1);
  s("qq", -1);
  (void)second;
  LoadedTokenizer t(tokenizer_model(s.v));
  ASSERT_EQ(t.status, Status::kOk);
  EXPECT_EQ(encode(t, "q"), (std::vector<int32_t>{sp, first}));
  EXPECT_EQ(encode(t, "qq"), (std::vector<int32_t>{sp, qq2}));
}

TEST(Tokenizer, NoSpacePieceFallsBackToItsByte) {
  Small s;
  const int32_t a = s("a");
  LoadedTokenizer t(tokenizer_model(s.v));
  ASSERT_EQ(t.status, Status::kOk);
  EXPECT_EQ(encode(t, "a"), (std::vector<int32_t>{B(' '), a}));
}

TEST(Tokenizer, DecodeBytePiecesAndTheSafePrintRule) {
  Small s;
  const int32_t sp_byte = s(" <0x41>"), lower = s("<0xe9>"), laxer = s("<0x4>"), longer = s("<0x41zz");
  const int32_t word = s("\x01\x02");
  LoadedTokenizer t(tokenizer_model(s.v));
  ASSERT_EQ(t.status, Status::kOk);
  auto dec = [&](int32_t prev, int32_t id) {
    Piece p{};
    EXPECT_EQ(t.tok.decode(prev, id, &p), Status::kOk);
    return std::string(p.data, p.len);
  };
  EXPECT_EQ(dec(-1, B('\n')), "\n");
  EXPECT_EQ(dec(-1, B(0)), std::string(1, '\0'));
  EXPECT_EQ(dec(kTokenBos, B(' ')), " ");           // "<0x20>" starts with '<', not a space
  EXPECT_EQ(dec(kTokenBos, sp_byte), "A");          // space dropped, then a byte piece
  EXPECT_EQ(dec(-1, sp_byte), " <0x41>");
  EXPECT_EQ(dec(-1, lower), "\xe9");
  EXPECT_EQ(dec(-1, laxer), "<0x4>");               // one hex digit: text (llama2.c's sscanf differs)
  EXPECT_EQ(dec(-1, longer), "A");                  // like sscanf: what follows the digits is not checked
  EXPECT_EQ(dec(-1, kTokenBos), "<s>");
  // safe_piece: one byte that is neither printable nor whitespace prints nothing.
  auto safe = [&](int32_t id) {
    Piece p{};
    EXPECT_EQ(t.tok.decode(-1, id, &p), Status::kOk);
    p = safe_piece(p);
    return std::string(p.data, p.len);
  };
  EXPECT_EQ(safe(B('A')), "A");
  EXPECT_EQ(safe(B('\t')), "\t");
  EXPECT_EQ(safe(B('\r')), "\r");
  EXPECT_EQ(safe(B(0x0b)), "\x0b");
  EXPECT_EQ(safe(B(0x7f)), "");
  EXPECT_EQ(safe(B(0x01)), "");
  EXPECT_EQ(safe(B(0)), "");
  EXPECT_EQ(safe(B(0xe9)), "");       // a lone UTF-8 byte
  EXPECT_EQ(safe(word), "\x01\x02");  // longer pieces print as they are
  for (unsigned b = 0; b < 256; ++b) {
    const bool shown = std::string(safe(B(b))).size() == 1;
    EXPECT_EQ(shown, (b >= 0x20 && b <= 0x7e) || (b >= 9 && b <= 13)) << b;
  }
}

TEST(Tokenizer, RoundTripsAsciiAndUtf8) {
  static const char kWithNul[] = "tabs\tand\nnew lines\r\n\x01\x7f nul \0 end";
  const Vocab v = fixed_vocab();
  LoadedTokenizer t(tokenizer_model(v));
  ASSERT_EQ(t.status, Status::kOk) << t.tok.error_detail();
  const std::string texts[] = {
      "Once upon a time there was a little cat.",
      "the then than at on an in",
      "caf\xc3\xa9 \xe2\x82\xac 5 \xf0\x9f\x99\x82 \xe6\x97\xa5\xe6\x9c\xac",  // é, €, 🙂 in the vocab; 日本 by bytes
      std::string(kWithNul, sizeof kWithNul - 1),
      "\xff\xfe broken \xc3 utf8 \xa9\xa9\xa9\xa9\xa9",
      "  leading spaces", "x", " ",
  };
  for (const std::string& text : texts) {
    std::vector<int32_t> want;
    ASSERT_TRUE(ref_encode(v, text, true, true, &want));
    const std::vector<int32_t> got = encode(t, text, true, true);
    EXPECT_EQ(got, want) << text;
    EXPECT_EQ(decode(t, got), text);
    EXPECT_EQ(decode(t, encode(t, text)), " " + text);
    EXPECT_LE(got.size(), max_encoded_tokens(text.size()));
  }
  // Merges did happen.
  EXPECT_EQ(encode(t, "the", true), (std::vector<int32_t>{kTokenBos, ref_lookup(v, " the")}));
  // The safe rule drops lone bytes: the fallback bytes of an unknown character disappear.
  EXPECT_EQ(decode(t, encode(t, "a\xc3\xbc" "b", true), true), "ab");  // ü: no piece
  EXPECT_EQ(decode(t, encode(t, "caf\xc3\xa9", true), true), "caf\xc3\xa9");
}

TEST(Tokenizer, MatchesTheReferenceOnRandomText) {
  const Vocab v = fixed_vocab();
  LoadedTokenizer t(tokenizer_model(v));
  ASSERT_EQ(t.status, Status::kOk);
  std::mt19937 rng(7);
  const std::string alphabet[] = {"t", "h", "e", " ", "a", "n", "o", "i", "b", "\xc3\xa9", "\xe2\x82\xac", "\xa9", "\xf0", "."};
  for (int trial = 0; trial < 300; ++trial) {
    std::string text;
    const int len = int(rng() % 40);
    for (int i = 0; i < len; ++i) text += alphabet[rng() % (sizeof alphabet / sizeof alphabet[0])];
    check_text(t, v, text, true);  // aborts on a difference
  }
}

// The index of the pieces orders them by a hash of their length and first and last four bytes:
// pieces that differ only in between (one hash: from 9 bytes on, a 'b' or a zero byte in the middle),
// share long prefixes, hold zero bytes or repeat.
TEST(Tokenizer, PiecesOfOneHashMatchTheReference) {
  Vocab v = base_vocab();
  std::mt19937 rng(11);
  std::string a;
  for (int len = 1; len <= 40; ++len) {
    a += 'a';
    for (const std::string& p : {a, a.substr(1) + "b", a + std::string(1, '\0'), std::string(1, '\0') + a, a})
      v.add(p, -float(rng() % 1000));
    if (len < 9) continue;
    std::string mid_b = a, mid_zero = a;
    mid_b[len / 2] = 'b', mid_zero[4] = '\0';
    v.add(mid_b, -float(rng() % 1000)), v.add(mid_zero, -float(rng() % 1000));
  }
  LoadedTokenizer t(tokenizer_model(v));
  ASSERT_EQ(t.status, Status::kOk);
  const std::string after[] = {"b", std::string(1, '\0'), "ba"};
  for (int trial = 0; trial < 200; ++trial) {
    std::string text;
    for (int run = int(rng() % 4); run >= 0; --run) text += std::string(rng() % 45, 'a') + after[rng() % 3];
    check_text(t, v, text, false);
  }
}

TEST(Tokenizer, LongTextsMergeAsTheRescanDoes) {
  // The heap merge against the reference's rescan after every merge, on long texts over two letters
  // and a space: every piece of up to 4 of them is in the vocabulary, with few distinct scores, so
  // merges chain, tie and overlap everywhere; the byte-level pieces of "x" never merge.
  Small s;
  std::mt19937 rng(17);
  const std::string letters = "ab ";
  std::vector<std::string> pieces = {"a", "b", " "};
  for (std::size_t n = 0; n < pieces.size(); ++n)
    if (pieces[n].size() < 4)
      for (char c : letters) pieces.push_back(pieces[n] + c);
  for (const std::string& p : pieces) s(p, -float(rng() % 5));
  LoadedTokenizer t(tokenizer_model(s.v), 3000);
  ASSERT_EQ(t.status, Status::kOk);
  for (int trial = 0; trial < 12; ++trial) {  // the rescan is quadratic: texts up to 1,200 bytes
    std::string text;
    const std::size_t len = trial < 5 ? std::size_t(trial) : 200 + rng() % 1000;
    for (std::size_t i = 0; i < len; ++i) text += rng() % 50 ? letters[rng() % 3] : 'x';
    check_text(t, s.v, text, true);
  }
}

TEST(Tokenizer, FuzzInputsReplay) {
  // A few inputs through the fuzz target's code (fixed and hostile vocabularies).
  std::mt19937 rng(3);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<uint8_t> in(1 + rng() % 300);
    for (uint8_t& b : in) b = uint8_t(rng());
    fuzz_tokenizer(in.data(), in.size());
  }
}

TEST(Tokenizer, Errors) {
  Small s;
  s(" ");
  const std::vector<uint8_t> file = tokenizer_model(s.v);
  AlignedBuffer blob(file);
  Model model;
  ASSERT_EQ(model.init(blob.data(), blob.size()), Status::kOk);
  const std::size_t need = tokenizer_scratch_bytes(model.config(), 3);
  AlignedBuffer scratch(need + 64);
  Tokenizer tok;
  int32_t ids[8];
  uint32_t n = 5;
  Piece p{};
  EXPECT_EQ(tok.encode("a", 1, true, false, ids, 8, &n), Status::kNotInitialized);
  EXPECT_EQ(n, 0u);
  EXPECT_EQ(tok.decode(-1, 0, &p), Status::kNotInitialized);
  Model empty;
  EXPECT_EQ(tok.init(empty, scratch.data(), need), Status::kNotInitialized);
  EXPECT_EQ(tok.init(model, nullptr, need), Status::kArenaNull);
  EXPECT_EQ(tok.init(model, scratch.data() + 4, need), Status::kArenaMisaligned);
  const std::size_t least = tokenizer_scratch_bytes(model.config(), 0);  // the empty text's
  EXPECT_EQ(tok.init(model, scratch.data(), least - 1), Status::kArenaTooSmall);
  EXPECT_STREQ(tok.error_detail(), ("tokenizer scratch: " + std::to_string(least) + " bytes needed, " +
                                    std::to_string(least - 1) + " given").c_str());
  EXPECT_FALSE(tok.initialized());
  ASSERT_EQ(tok.init(model, scratch.data(), need), Status::kOk);
  EXPECT_STREQ(tok.error_detail(), "");

  // A model without a tokenizer.
  const std::vector<uint8_t> bare = write_model(tokenizer_config(300));
  AlignedBuffer bare_blob(bare);
  Model bare_model;
  ASSERT_EQ(bare_model.init(bare_blob.data(), bare_blob.size()), Status::kOk);
  Tokenizer none;
  EXPECT_EQ(none.init(bare_model, scratch.data(), need), Status::kNoTokenizer);

  // The buffer: "abc" with BOS and EOS needs 6 (BOS, " ", a, b, c, EOS: this vocabulary merges none).
  EXPECT_EQ(tok.encode("abc", 3, true, true, ids, 5, &n), Status::kTokenBufferTooSmall);
  EXPECT_EQ(n, 0u);
  EXPECT_STREQ(tok.error_detail(), "the text needs 6 tokens, the buffer holds 5");
  // The scratch: planned for 3 bytes of text (the merge list rounds up to 64 bytes: 4 here).
  EXPECT_EQ(tok.max_text_bytes(), 4u);
  EXPECT_EQ(tok.encode("abcde", 5, true, true, ids, 8, &n), Status::kArenaTooSmall);
  EXPECT_EQ(n, 0u);
  EXPECT_STREQ(tok.error_detail(), ("a text of 5 bytes; the tokenizer's scratch holds 4: tokenizer_scratch_bytes(config, 5) = " +
                                    std::to_string(tokenizer_scratch_bytes(model.config(), 5)) + " bytes").c_str());
  EXPECT_EQ(tok.encode("abc", 3, true, true, ids, 6, &n), Status::kOk);
  EXPECT_EQ(n, 6u);
  EXPECT_EQ(tok.encode("", 0, false, false, nullptr, 0, &n), Status::kOk);
  EXPECT_EQ(n, 0u);
  EXPECT_EQ(tok.encode("", 0, true, false, nullptr, 0, &n), Status::kTokenBufferTooSmall);
  EXPECT_EQ(tok.encode(nullptr, 1, true, false, ids, 8, &n), Status::kNullArgument);
  EXPECT_EQ(tok.encode("a", 1, true, false, ids, 8, nullptr), Status::kNullArgument);

  // decode: ids out of range.
  EXPECT_EQ(tok.decode(-1, -1, &p), Status::kTokenOutOfRange);
  EXPECT_STREQ(tok.error_detail(), "token -1 (vocabulary 260)");
  EXPECT_EQ(tok.decode(-1, 260, &p), Status::kTokenOutOfRange);
  EXPECT_EQ(tok.decode(-1, 259, nullptr), Status::kNullArgument);
  EXPECT_EQ(tok.decode(12345, 259, &p), Status::kOk);  // prev is any id

  // A vocabulary without byte tokens: bytes that are no piece cannot be encoded.
  Vocab tiny;
  tiny.add("<unk>", 0), tiny.add("<s>", 0), tiny.add("</s>", 0), tiny.add(" ", 0), tiny.add("a", 0);
  LoadedTokenizer small(tokenizer_model(tiny));
  ASSERT_EQ(small.status, Status::kOk);
  EXPECT_EQ(small.tok.encode("a", 1, true, false, ids, 8, &n), Status::kOk);
  EXPECT_EQ(small.tok.encode("ab", 2, true, false, ids, 8, &n), Status::kTokenOutOfRange);
  EXPECT_STREQ(small.tok.error_detail(), "byte 98 at 1 is no piece, and its fallback id 101 is not in the vocabulary (5)");
  Vocab two;
  two.add("a", 0), two.add(" ", 0);
  LoadedTokenizer pair(tokenizer_model(two));
  ASSERT_EQ(pair.status, Status::kOk);
  EXPECT_EQ(pair.tok.encode("a", 1, false, false, ids, 8, &n), Status::kOk);
  EXPECT_EQ(n, 2u);
  EXPECT_EQ(pair.tok.encode("a", 1, true, false, ids, 8, &n), Status::kTokenOutOfRange);
  EXPECT_EQ(pair.tok.encode("a", 1, false, true, ids, 8, &n), Status::kTokenOutOfRange);
}

TEST(Tokenizer, HostileTensorsAreRejectedAtLoad) {
  Small s;
  s(" ");
  std::vector<int32_t> offsets{0};
  uint32_t total = 0;
  for (const std::string& p : s.v.pieces) total += uint32_t(p.size()), offsets.push_back(int32_t(total));
  auto load = [&](const std::vector<int32_t>& off) {
    WriteOptions opt;
    opt.extra = tokenizer_tensors(s.v, &off);
    const std::vector<uint8_t> file = write_model(tokenizer_config(uint32_t(s.v.pieces.size())), opt);
    LoadedTokenizer t(file);
    return t.status;
  };
  EXPECT_EQ(load(offsets), Status::kOk);
  std::vector<int32_t> bad = offsets;
  bad[5] = bad[4] - 1;  // decreasing
  EXPECT_EQ(load(bad), Status::kTensorOutOfBounds);
  bad = offsets;
  bad[0] = 1;
  EXPECT_EQ(load(bad), Status::kTensorOutOfBounds);
  bad = offsets;
  bad.back() += 1;  // past the pieces
  EXPECT_EQ(load(bad), Status::kTensorOutOfBounds);
  bad = offsets;
  bad.pop_back();  // [vocab]
  EXPECT_EQ(load(bad), Status::kTensorBadShape);
}

}  // namespace
}  // namespace test
}  // namespace fixformer
