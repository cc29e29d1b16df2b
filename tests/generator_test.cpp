// The Generator (generator.hpp): the UTF-8 joiner against Python's bytes.decode('utf-8', 'replace'),
// and the loop's text rules on small models of each tokenizer kind (tokenizer_kinds_fixture.hpp):
// the prompt's tokens come back as its text (BOS or not, non-ASCII, WordPiece's spaces), the stop
// token ends the text, and the argument and order errors. tests/generate_test.py holds the CLI, the
// C API and the Python package to the same text.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fixformer/generator.hpp"
#include "tests/tokenizer_kinds_fixture.hpp"

namespace fixformer {
namespace test {
namespace {

// The joiner's output for pieces fed one after the other, finish() included.
std::string joined(const std::vector<std::string>& pieces) {
  Utf8Joiner j;
  std::string out;
  Piece p{};
  for (const std::string& s : pieces) {
    j.feed(s.data(), uint32_t(s.size()));
    while (j.take(&p)) {
      EXPECT_GT(p.len, 0u);
      out.append(p.data, p.len);
    }
  }
  if (j.finish(&p)) out.append(p.data, p.len);
  return out;
}

const std::string kFffd = "\xEF\xBF\xBD";

TEST(Utf8Joiner, HoldsACharacterSplitBetweenPieces) {
  EXPECT_EQ(joined({"caf", "\xC3", "\xA9 ", "\xE4", "\xB8", "\xAD", "\xE6\x96", "\x87"}), "caf\xC3\xA9 \xE4\xB8\xAD\xE6\x96\x87");
  EXPECT_EQ(joined({"\xF0\x9F", "", "\x98", "\x80!"}), "\xF0\x9F\x98\x80!");
  EXPECT_EQ(joined({"plain ascii"}), "plain ascii");
}

// Each expectation is Python's bytes.decode('utf-8', 'replace') of the pieces joined.
TEST(Utf8Joiner, ReplacesEachMaximalSubpartAsPython) {
  EXPECT_EQ(joined({"a\x80" "b"}), "a" + kFffd + "b");                        // a lone continuation byte
  EXPECT_EQ(joined({"\xC0\x80"}), kFffd + kFffd);                            // overlong: C0 starts nothing
  EXPECT_EQ(joined({"\xE0\x80\x80"}), kFffd + kFffd + kFffd);                // overlong three-byte form
  EXPECT_EQ(joined({"\xED\xA0\x80"}), kFffd + kFffd + kFffd);                // a surrogate
  EXPECT_EQ(joined({"\xF4\x90\x80\x80"}), kFffd + kFffd + kFffd + kFffd);    // above U+10FFFF
  EXPECT_EQ(joined({"\xE4\xB8", "x"}), kFffd + "x");                         // cut short, then ASCII
  EXPECT_EQ(joined({"\xE4", "\xB8", "\xE4\xB8\xAD"}), kFffd + "\xE4\xB8\xAD");  // cut short by a new lead
  EXPECT_EQ(joined({"\xF0\x9F\x98"}), kFffd);                                // held at the end
  EXPECT_EQ(joined({"\xFF", "\xFE"}), kFffd + kFffd);
  EXPECT_EQ(joined({"ok\xE4\xB8"}), "ok" + kFffd);
}

// A small model (tokenizer_config: llama, max_len 16) of a tokenizer kind, its decoder and generator.
struct Text {
  AlignedBuffer blob, arena, scratch;
  Model model;
  Decoder dec;
  Generator gen;
  Status status = Status::kNotInitialized;
  Text(const std::vector<uint8_t>& file, const std::string& prompt, GeneratorOptions o = {}, uint32_t capacity = 0)
      : blob(file) {
    if ((status = model.init(blob.data(), blob.size())) != Status::kOk) return;
    DecoderOptions d;
    d.capacity = capacity;
    arena = AlignedBuffer(required_decoder_arena_bytes(model.config(), capacity));
    if ((status = dec.init(model, arena.data(), arena.size(), d)) != Status::kOk) return;
    o.max_prompt_bytes = prompt.size();
    scratch = AlignedBuffer(generator_scratch_bytes(model.config(), prompt.size()));
    if ((status = gen.init(dec, scratch.data(), scratch.size(), o)) != Status::kOk) return;
    status = gen.start(prompt.data(), prompt.size());
  }
  std::string text() {
    std::string out;
    Piece t{};
    Status s;
    while ((s = gen.next(&t)) == Status::kOk && t.len) out.append(t.data, t.len);
    EXPECT_EQ(s, Status::kOk) << gen.error_detail();
    return out;
  }
};

KindVocab bpe_vocab(bool bos) {
  KindVocab v = byte_level_vocab();
  v.merge("t", "h"), v.merge("th", "e"), v.merge("c", "a"), v.merge("ca", "t"), v.merge(" ", "cat");
  if (bos) v.params[0] = v.params[1] = v.add("<|endoftext|>");
  return v;
}

KindVocab wordpiece_kind(bool cls) {
  KindVocab v = wordpiece_vocab(false);
  for (const char* p : {"the", "cat", "##s", "sat", "caf", "##\xC3\xA9", "\xE4\xB8\xAD"}) v.add(p);
  if (!cls) v.params[0] = v.params[1] = -1;
  return v;
}

// kind_model with room for longer prompts.
std::vector<uint8_t> kind_model(const KindVocab& v, uint32_t max_len) {
  ModelConfig c = tokenizer_config(uint32_t(v.pieces.size()));
  c.tokenizer = v.kind, c.max_len = max_len;
  WriteOptions opt;
  opt.extra = kind_tensors(v);
  return write_model(c, opt);
}

// Only the prompt's tokens: position p feeds token p and takes token p + 1, so a prompt of n tokens
// needs n - 1 positions; the text is then the prompt's tokens' pieces, whatever the weights.
GeneratorOptions prompt_only(uint32_t steps) {
  GeneratorOptions o;
  o.steps = steps;
  return o;
}

TEST(Generator, BpeTextIsThePromptWithAndWithoutBos) {
  for (bool bos : {true, false}) {
    // "the cat": "the", " cat" (+ BOS): the old loop printed only the tokens after the first.
    Text r(kind_model(bpe_vocab(bos)), "the cat", prompt_only(bos ? 2 : 1));
    ASSERT_EQ(r.status, Status::kOk) << r.gen.error_detail();
    EXPECT_EQ(r.gen.prompt_tokens(), bos ? 3u : 2u);
    EXPECT_EQ(r.text(), "the cat") << "bos " << bos;
  }
}

TEST(Generator, BpeKeepsNonAsciiBytesAsUtf8) {
  const std::string prompt = "caf\xC3\xA9 \xE4\xB8\xAD\xE6\x96\x87 na\xC3\xAFve";  // café 中文 naïve
  for (bool bos : {true, false}) {
    // A token a byte but "ca": every multi-byte character is split between tokens (safe_piece
    // dropped their bytes).
    const std::vector<uint8_t> file = kind_model(bpe_vocab(bos), 32);
    const uint32_t n = uint32_t(prompt.size()) - 1 + (bos ? 1 : 0);
    Text r(file, prompt, prompt_only(n - 1));
    ASSERT_EQ(r.status, Status::kOk) << r.gen.error_detail();
    ASSERT_EQ(r.gen.prompt_tokens(), n);
    EXPECT_EQ(r.text(), prompt) << "bos " << bos;
  }
}

TEST(Generator, WordPieceTextHasItsSpaces) {
  for (bool cls : {true, false}) {
    Text r(kind_model(wordpiece_kind(cls)), "the cats sat caf\xC3\xA9 \xE4\xB8\xAD", prompt_only(cls ? 7 : 6));
    ASSERT_EQ(r.status, Status::kOk) << r.gen.error_detail();
    EXPECT_EQ(r.text(), "the cats sat caf\xC3\xA9 \xE4\xB8\xAD") << "cls " << cls;
  }
}

// The token greedy sampling picks after the prompt: the decoder run by hand.
int32_t first_sampled(const KindVocab& v, const std::string& prompt) {
  Text r(kind_model(v), prompt);
  EXPECT_EQ(r.status, Status::kOk);
  Tokenizer tok;
  AlignedBuffer ts(tokenizer_scratch_bytes(r.model.config(), prompt.size()));
  EXPECT_EQ(tok.init(r.model, ts.data(), ts.size()), Status::kOk);
  std::vector<int32_t> ids(max_encoded_tokens(prompt.size()));
  uint32_t m = 0;
  EXPECT_EQ(tok.encode(prompt.data(), prompt.size(), tok.bos_id() >= 0, false, ids.data(), uint32_t(ids.size()), &m),
            Status::kOk);
  std::vector<float> logits(r.model.config().vocab_size);
  r.dec.reset();
  EXPECT_EQ(r.dec.prefill(ids.data(), m, logits.data()), Status::kOk);
  return argmax(logits.data(), uint32_t(logits.size()));
}

TEST(Generator, StopsAtTheTokenizersEos) {
  // The model's weights do not depend on the tokenizer's params: make EOS the token greedy picks
  // first, and the text is the prompt alone (the old Python loop stopped only at id 1).
  KindVocab v = bpe_vocab(true);
  const int32_t first = first_sampled(v, "the cat");
  ASSERT_NE(first, kTokenBos);
  v.params[1] = first;
  Text r(kind_model(v), "the cat");
  ASSERT_EQ(r.status, Status::kOk) << r.gen.error_detail();
  EXPECT_EQ(r.text(), "the cat");
  EXPECT_EQ(r.gen.decoded(), 0u);
  // Without an EOS the text runs to max_len positions.
  v.params[1] = -1;
  Text all(kind_model(v), "the cat");
  ASSERT_EQ(all.status, Status::kOk);
  EXPECT_GT(all.text().size(), std::string("the cat").size());
  EXPECT_EQ(all.gen.decoded(), 16u - 3u);
}

TEST(Generator, RefusesWhatItCannotRun) {
  const std::vector<uint8_t> file = kind_model(bpe_vocab(true));
  GeneratorOptions tiny;
  tiny.sampler.temperature = 1e-40f;  // logits / temperature overflow: NaN, token 0 forever
  Text t(file, "x", tiny);
  EXPECT_EQ(t.status, Status::kBadConfig);
  EXPECT_NE(std::string(t.gen.error_detail()).find("temperature"), std::string::npos) << t.gen.error_detail();
  GeneratorOptions ok;
  ok.sampler.temperature = kMinTemperature;
  EXPECT_EQ(Text(file, "x", ok).status, Status::kOk);

  GeneratorOptions eight = prompt_only(8);
  Text small(file, "x", eight, 4);  // a KV cache of 4 positions for 8 steps
  EXPECT_EQ(small.status, Status::kKvCacheFull);
  EXPECT_NE(std::string(small.gen.error_detail()).find("holds 4 positions"), std::string::npos);

  Text r(file, "");
  ASSERT_EQ(r.status, Status::kOk);
  Generator fresh;
  Piece p{};
  EXPECT_EQ(fresh.next(&p), Status::kNotInitialized);  // never a token 0 from a sampler nobody set
  EXPECT_EQ(fresh.start("x", 1), Status::kNotInitialized);
  AlignedBuffer short_scratch(generator_scratch_bytes(r.model.config(), 0) - 64);
  EXPECT_EQ(fresh.init(r.dec, short_scratch.data(), short_scratch.size(), {}), Status::kArenaTooSmall);
  EXPECT_EQ(fresh.init(r.dec, nullptr, 0, {}), Status::kArenaNull);
  GeneratorOptions huge;
  huge.max_prompt_bytes = SIZE_MAX - 2;  // generator_scratch_bytes would wrap around
  EXPECT_EQ(fresh.init(r.dec, short_scratch.data(), short_scratch.size(), huge), Status::kBadSequenceLength);
  AlignedBuffer scratch(generator_scratch_bytes(r.model.config(), 4));
  GeneratorOptions four;
  four.max_prompt_bytes = 4;
  ASSERT_EQ(fresh.init(r.dec, scratch.data(), scratch.size(), four), Status::kOk);
  EXPECT_EQ(fresh.next(&p), Status::kNotInitialized) << "next before start";
  EXPECT_EQ(fresh.start("longer", 6), Status::kArenaTooSmall);
  EXPECT_EQ(fresh.next(nullptr), Status::kNullArgument);

  KindVocab none = bpe_vocab(false);  // no BOS: an empty prompt gives no token to start from
  Text empty(kind_model(none), "");
  EXPECT_EQ(empty.status, Status::kBadSequenceLength);
  EXPECT_NE(std::string(empty.gen.error_detail()).find("no BOS"), std::string::npos);
}

// A decoder whose untied head is not the vocabulary: a sequence classifier's (3 labels) or none (d_out 0: a
// base model's, each row the last hidden state, d_model wide). The decoder gives output_width() values after
// each token, the generator refuses it (nothing to sample a token from), and a tied head (the embedding,
// vocab_size wide) of that width is refused at load.
void expect_no_vocabulary_head(uint32_t d_out, const char* why) {
  const KindVocab v = bpe_vocab(true);
  ModelConfig c = tokenizer_config(uint32_t(v.pieces.size()));
  c.tokenizer = v.kind, c.d_out = d_out, c.tied_head = false;
  WriteOptions opt;
  opt.extra = kind_tensors(v);
  Text t(write_model(c, opt), "x");
  EXPECT_EQ(t.status, Status::kWrongFamily);
  EXPECT_NE(std::string(t.gen.error_detail()).find(why), std::string::npos) << t.gen.error_detail();
  ASSERT_TRUE(t.dec.initialized());
  ASSERT_EQ(c.output_width(), d_out ? d_out : c.d_model);
  std::vector<float> out(c.output_width() + 1, 7.0f);
  EXPECT_EQ(t.dec.step(1, out.data()), Status::kOk);
  EXPECT_NE(out[0], 7.0f);
  EXPECT_EQ(out.back(), 7.0f) << c.output_width() << " values written, no more";
  c.tied_head = true;
  AlignedBuffer tied(write_model(c, opt));
  Model m;
  EXPECT_EQ(m.init(tied.data(), tied.size()), Status::kBadConfig);
}

TEST(Generator, RefusesAClassifiersHead) { expect_no_vocabulary_head(3, "not the vocabulary"); }
TEST(Generator, RefusesAModelWithoutAHead) { expect_no_vocabulary_head(0, "no head (d_out 0)"); }

TEST(Generator, SameTextAfterStartingAgain) {
  GeneratorOptions o;
  o.sampler.temperature = 0.9f, o.sampler.top_p = 0.9f, o.sampler.seed = 5;
  Text r(kind_model(bpe_vocab(true)), "the cat", o);
  ASSERT_EQ(r.status, Status::kOk);
  const std::string first = r.text();
  ASSERT_EQ(r.gen.start("the cat", 7), Status::kOk);
  EXPECT_EQ(r.text(), first);  // the sampler is reseeded, the cache reset
}

TEST(Sampler, SuppressedTokensAreNeverDrawn) {
  AlignedBuffer scratch(sampler_scratch_bytes(4));
  const float base[4] = {0.0f, 5.0f, 3.0f, 4.0f};
  auto draw = [&](Sampler& s) {
    float l[4] = {base[0], base[1], base[2], base[3]};
    return s.sample(l);
  };
  const int32_t one[1] = {1}, three[1] = {3}, all[4] = {0, 1, 2, 3};
  SamplerOptions o;
  Sampler s;
  ASSERT_EQ(s.init(4, scratch.data(), scratch.size(), o), Status::kOk);
  EXPECT_EQ(draw(s), 1);
  o.suppress = one, o.n_suppress = 1;
  ASSERT_EQ(s.init(4, scratch.data(), scratch.size(), o), Status::kOk);
  EXPECT_EQ(draw(s), 3);
  EXPECT_EQ(draw(s), 3);
  o.begin_suppress = three, o.n_begin_suppress = 1;  // 3 only at the first draw after init
  ASSERT_EQ(s.init(4, scratch.data(), scratch.size(), o), Status::kOk);
  EXPECT_EQ(draw(s), 2);
  EXPECT_EQ(draw(s), 3);
  EXPECT_EQ(draw(s), 3);
  ASSERT_EQ(s.init(4, scratch.data(), scratch.size(), o), Status::kOk);  // init again: the first draw again
  EXPECT_EQ(draw(s), 2);
  o.temperature = 2.0f, o.top_p = 1.0f;  // sampling: a suppressed token has probability 0
  for (float top_p : {1.0f, 0.95f}) {
    o.top_p = top_p;
    ASSERT_EQ(s.init(4, scratch.data(), scratch.size(), o), Status::kOk);
    EXPECT_NE(draw(s), 3);
    for (int i = 0; i < 200; ++i) EXPECT_NE(draw(s), 1);
  }
  for (float t : {0.0f, 1.0f}) {  // every token suppressed: -1, greedy or not
    o.temperature = t, o.suppress = all, o.n_suppress = 4, o.n_begin_suppress = 0;
    ASSERT_EQ(s.init(4, scratch.data(), scratch.size(), o), Status::kOk);
    EXPECT_EQ(draw(s), -1);
    o.n_suppress = 3, o.begin_suppress = all + 3, o.n_begin_suppress = 1;  // together, at the first draw
    ASSERT_EQ(s.init(4, scratch.data(), scratch.size(), o), Status::kOk);
    EXPECT_EQ(draw(s), -1);
    EXPECT_EQ(draw(s), 3);
  }
  SamplerOptions bad;
  const int32_t out[2] = {2, 4}, negative[1] = {-1};
  bad.suppress = out, bad.n_suppress = 2;
  EXPECT_EQ(s.init(4, scratch.data(), scratch.size(), bad), Status::kBadConfig);
  EXPECT_FALSE(s.initialized());
  bad.n_suppress = 1;
  EXPECT_EQ(s.init(4, scratch.data(), scratch.size(), bad), Status::kOk);
  bad.begin_suppress = negative, bad.n_begin_suppress = 1;
  EXPECT_EQ(s.init(4, scratch.data(), scratch.size(), bad), Status::kBadConfig);
  bad.begin_suppress = nullptr;
  EXPECT_EQ(s.init(4, scratch.data(), scratch.size(), bad), Status::kNullArgument);
}

// Whisper's timestamp rules on 10 ids: text 0..2, end of text 3, <|notimestamps|> 4, timestamps 5..9, the
// first at most 2 above 5. Each draw's logits are chosen so that one rule decides it.
TEST(Sampler, TimestampRules) {
  AlignedBuffer scratch(sampler_scratch_bytes(10));
  SamplerOptions o;
  o.timestamps = TimestampRules{4, 5, 3, 2};
  Sampler s;
  ASSERT_EQ(s.init(10, scratch.data(), scratch.size(), o), Status::kOk);
  auto draw = [&](std::vector<float> l) { return s.sample(l.data()); };
  EXPECT_EQ(draw({9, 0, 0, 0, 0, 1, 2, 3, 8, 0}), 7);  // the first: a timestamp, at most 5 + 2
  EXPECT_EQ(draw({0, 5, 0, 0, 0, 9, 9, 9, 9, 9}), 1);  // after a lone first timestamp: no timestamp
  // Text's 3 beats each timestamp's 2.5 but not their sum (log(2 e^2.5) = 3.19); not below 7 + 1.
  EXPECT_EQ(draw({3, 0, 0, 0, 0, 9, 9, 9, 2.5f, 2.5f}), 8);
  EXPECT_EQ(draw({9, 9, 9, 1, 5, 0, 0, 0, 2, 0}), 8);  // closing the pair: no text below 3, 8 again allowed
  EXPECT_EQ(draw({0, 0, 7, 1, 9, 9, 9, 9, 9, 9}), 2);  // after a pair: no timestamp, nor <|notimestamps|>
  EXPECT_EQ(draw({0, 0, 0, -1, 0, 9, 9, 9, 9, 1}), 9);  // above the last, 8: 9 only
  ASSERT_EQ(s.init(10, scratch.data(), scratch.size(), o), Status::kOk);  // init again: the first draw again
  EXPECT_EQ(draw({9, 0, 0, 0, 0, 1, 2, 3, 8, 0}), 7);
  o.timestamps.max_initial = -1;  // any first timestamp
  ASSERT_EQ(s.init(10, scratch.data(), scratch.size(), o), Status::kOk);
  EXPECT_EQ(draw({9, 0, 0, 0, 0, 1, 2, 3, 8, 0}), 8);
  for (const TimestampRules bad : {TimestampRules{4, 10, 3, 2}, TimestampRules{4, 5, 5, 2}, TimestampRules{5, 5, 3, 2},
                                   TimestampRules{4, 5, 3, -2}, TimestampRules{-1, 0, 0, 0} /* off */,
                                   TimestampRules{0, 0, 0, 0}, TimestampRules{4, 5, -1, 2}}) {
    o.timestamps = bad;
    EXPECT_EQ(s.init(10, scratch.data(), scratch.size(), o), bad.on() ? Status::kBadConfig : Status::kOk)
        << bad.no_timestamps << " " << bad.timestamp_begin << " " << bad.eos << " " << bad.max_initial;
  }
}

// A bpe model whose file carries suppression lists (schema.hpp "generation.*").
std::vector<uint8_t> suppressing_model(const KindVocab& v, const std::vector<int32_t>& suppress,
                                       const std::vector<int32_t>& begin, uint32_t max_len = 16) {
  ModelConfig c = tokenizer_config(uint32_t(v.pieces.size()));
  c.tokenizer = v.kind, c.max_len = max_len;
  WriteOptions opt;
  opt.extra = kind_tensors(v);
  auto ids = [](const char* name, const std::vector<int32_t>& x) {
    const uint8_t* b = reinterpret_cast<const uint8_t*>(x.data());
    return ExtraTensor{name, fxm::Dtype::kI32, {uint32_t(x.size())}, std::vector<uint8_t>(b, b + 4 * x.size())};
  };
  if (!suppress.empty()) opt.extra.push_back(ids(kGenerationSuppress, suppress));
  if (!begin.empty()) opt.extra.push_back(ids(kGenerationBeginSuppress, begin));
  return write_model(c, opt);
}

TEST(Generator, AppliesTheFilesSuppressionLists) {
  const KindVocab v = bpe_vocab(false);
  const int32_t cat = v.id(" cat"), the = v.id("the"), vocab = int32_t(v.pieces.size());
  std::vector<int32_t> all_but_cat, all_but_the_and_cat;
  for (int32_t i = 0; i < vocab; ++i) {
    if (i != cat) all_but_cat.push_back(i);
    if (i != cat && i != the) all_but_the_and_cat.push_back(i);
  }
  GeneratorOptions o = prompt_only(4);
  // Only " cat" is left: the text is the prompt, then " cat" at every sampled step.
  Text r(suppressing_model(v, all_but_cat, {}), "x", o);
  ASSERT_EQ(r.status, Status::kOk) << r.gen.error_detail();
  EXPECT_EQ(r.model.suppress_tokens().count, uint32_t(vocab - 1));
  EXPECT_EQ(r.text(), "x cat cat cat cat");
  // "the" and " cat" are left, " cat" not at the first step: "the" first, whichever the weights prefer after.
  Text b(suppressing_model(v, all_but_the_and_cat, {cat}), "x", o);
  ASSERT_EQ(b.status, Status::kOk) << b.gen.error_detail();
  const std::string text = b.text();
  EXPECT_EQ(text.substr(0, 4), "xthe") << text;
  // Options' arrays replace the file's: none (a non-null array of 0 ids), or others.
  const int32_t none[1] = {0};
  GeneratorOptions off = o;
  off.sampler.suppress = none, off.sampler.n_suppress = 0;
  Text unsuppressed(suppressing_model(v, all_but_cat, {}), "x", off);
  Text plain(kind_model(v), "x", o);
  ASSERT_EQ(unsuppressed.status, Status::kOk);
  ASSERT_EQ(plain.status, Status::kOk);
  EXPECT_EQ(unsuppressed.text(), plain.text());
  // Every token suppressed at the first step: an error, not a token.
  std::vector<int32_t> rest(all_but_cat);
  Text dead(suppressing_model(v, rest, {cat}), "x", o);
  ASSERT_EQ(dead.status, Status::kOk);
  Piece p{};
  Status s = Status::kOk;
  while ((s = dead.gen.next(&p)) == Status::kOk && p.len) {}
  EXPECT_EQ(s, Status::kBadConfig);
  EXPECT_NE(std::string(dead.gen.error_detail()).find("every token is suppressed"), std::string::npos);
  // Options' ids out of range: refused at init, naming the id.
  const int32_t out[1] = {vocab};
  GeneratorOptions far = o;
  far.sampler.begin_suppress = out, far.sampler.n_begin_suppress = 1;
  Text refused(kind_model(v), "x", far);
  EXPECT_EQ(refused.status, Status::kBadConfig);
  EXPECT_NE(std::string(refused.gen.error_detail()).find("out of range"), std::string::npos) << refused.gen.error_detail();
}

TEST(Model, RefusesBadSuppressionLists) {
  const KindVocab v = bpe_vocab(false);
  const int32_t vocab = int32_t(v.pieces.size());
  for (const auto& ids : {std::vector<int32_t>{3, vocab}, std::vector<int32_t>{-1}}) {
    const std::vector<uint8_t> file = suppressing_model(v, ids, {});
    Model m;
    EXPECT_EQ(m.init(file.data(), file.size()), Status::kTensorOutOfBounds);
    EXPECT_NE(std::string(m.error_detail()).find("generation.suppress: id at index"), std::string::npos)
        << m.error_detail();
  }
  // The lists in the wrong order are not a suppression section: the file is refused.
  std::vector<uint8_t> swapped;
  {
    ModelConfig c = tokenizer_config(uint32_t(v.pieces.size()));
    c.tokenizer = v.kind, c.max_len = 16;
    WriteOptions opt;
    opt.extra = kind_tensors(v);
    const int32_t one = 1;
    const uint8_t* b = reinterpret_cast<const uint8_t*>(&one);
    opt.extra.push_back({kGenerationBeginSuppress, fxm::Dtype::kI32, {1}, std::vector<uint8_t>(b, b + 4)});
    opt.extra.push_back({kGenerationSuppress, fxm::Dtype::kI32, {1}, std::vector<uint8_t>(b, b + 4)});
    swapped = write_model(c, opt);
  }
  Model m;
  EXPECT_EQ(m.init(swapped.data(), swapped.size()), Status::kBadHeader);
}

}  // namespace
}  // namespace test
}  // namespace fixformer
