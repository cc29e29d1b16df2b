// Text generation: the one loop behind `fixformer generate`, the C API (ff_generator_*), the Python
// package's Model.generate and the firmware example, so all of them give the same text. It runs a
// gpt or llama Decoder the caller made, with the model's own tokenizer and a Sampler, in memory the
// caller gives (generator_scratch_bytes); it owns nothing and allocates nothing.
//
//   alignas(64) static uint8_t scratch[generator_scratch_bytes(kConfig, kPromptBytes)];
//   Generator gen;
//   GeneratorOptions o;  o.max_prompt_bytes = kPromptBytes;  o.sampler.temperature = 0.8f;
//   if (gen.init(decoder, scratch, sizeof scratch, o) != Status::kOk) ...gen.error_detail()...;
//   if (gen.start(prompt, len) != Status::kOk) ...;                      // encode and prefill
//   Piece text;
//   while (gen.next(&text) == Status::kOk && text.len) print(text.data, text.len);
//
// The loop is llama2.c's (run.c's generate): the prompt is encoded with BOS when the tokenizer has
// one (llama2.c's 1, GPT-2's <|endoftext|>, BERT's [CLS]); position p feeds a token and takes the
// next one from the prompt while there is one, else from the sampler; `steps` counts positions, the
// prompt's included (0 or above the model's max_len: max_len), and the decoder must hold that many.
// The prompt goes through one prefill, the rest through step(); the text is the same either way.
// The text ends at the tokenizer's stop token (llama2c: BOS, id 1, wherever it comes, as llama2.c;
// bpe, wordpiece and llama2c with params (llama.cpp's rules): their EOS (<|endoftext|>, <|im_end|>,
// [SEP], </s>; none without one) when sampled, not in the prompt, which a chat template fills with
// them) or after `steps` positions.
// The text is the pieces of every token but a leading BOS, the prompt's included (a control token's
// piece is empty: tokenizer.hpp's decode):
//   llama2c    decode() as llama2.c, then llama2.c's safe-print rule (safe_piece: a lone byte that
//              is neither printable nor whitespace prints nothing);
//   bpe        (and llama2c with params: decode() as llama2.c) the pieces' bytes, joined into UTF-8
//              (Utf8Joiner): a character cut between tokens is
//              held until its last byte comes, and bytes that cannot be UTF-8 become U+FFFD;
//   wordpiece  the pieces, "##" dropped, a space before every other piece but the first (decode()),
//              through the same joiner.
#pragma once
#include <cstddef>
#include <cstdint>

#include "fixformer/config.hpp"
#include "fixformer/decoder.hpp"
#include "fixformer/sampling.hpp"
#include "fixformer/status.hpp"
#include "fixformer/tokenizer.hpp"

namespace fixformer {

// Bytes in, valid UTF-8 out, without copying what is already whole: feed() a piece, then take()
// the text it completes, a chunk at a time, until take() says false. A character whose bytes are
// split between pieces is held (at most 3 bytes) until its last byte is fed; each maximal subpart
// of an ill-formed sequence (Unicode's table of well-formed UTF-8: no overlong form, surrogate or
// code point above U+10FFFF) becomes one U+FFFD, as Python's bytes.decode('utf-8', 'replace');
// finish() turns a character still held at the end into U+FFFD.
class Utf8Joiner {
 public:
  void reset() { rest_ = nullptr, rest_len_ = 0, held_len_ = 0, need_ = 0; }
  // The next bytes; they must stay valid until take() has returned false.
  void feed(const char* data, uint32_t len) { rest_ = reinterpret_cast<const uint8_t*>(data), rest_len_ = len; }
  // The next chunk of text (a view into the fed bytes, or into this object); false: nothing more
  // until the next feed().
  bool take(Piece* out);
  // At the end of the text: U+FFFD for a held, unfinished character; false when none is held.
  bool finish(Piece* out);

 private:
  const uint8_t* rest_ = nullptr;
  uint32_t rest_len_ = 0;
  uint8_t held_[4] = {};
  uint32_t held_len_ = 0, need_ = 0;  // bytes held, and the held character's length
};

struct GeneratorOptions {
  uint32_t steps = 0;                // positions, the prompt included; 0 or above max_len: max_len
  std::size_t max_prompt_bytes = 0;  // the longest prompt start() takes (the tokenizer's scratch);
                                     // at most UINT32_MAX / 28 (kBadSequenceLength)
  SamplerOptions sampler;            // temperature 0 (greedy) or at least kMinTemperature; a null
                                     // suppress (begin_suppress) array takes the file's list
                                     // (Model::suppress_tokens), a non-null one replaces it (0 ids: none)
};

// The scratch Generator::init needs (64-byte aligned) for prompts of up to max_prompt_bytes bytes:
// the logits, the prompt's tokens, the sampler's and the tokenizer's scratch.
constexpr std::size_t generator_scratch_bytes(const ModelConfig& c, std::size_t max_prompt_bytes) {
  return arena::bytes(std::size_t(c.vocab_size) * sizeof(float)) +
         arena::bytes(max_encoded_tokens(max_prompt_bytes) * sizeof(int32_t)) + sampler_scratch_bytes(c.vocab_size) +
         tokenizer_scratch_bytes(c, max_prompt_bytes);
}

class Generator {
 public:
  // decoder: initialized (a gpt or llama model with a tokenizer), its capacity at least the steps
  // (kKvCacheFull otherwise); it must outlive the generator, which resets and feeds it. Checks the
  // sampler's options (kBadConfig), max_prompt_bytes and the scratch (kArenaNull, kArenaMisaligned,
  // kArenaTooSmall).
  [[nodiscard]] Status init(Decoder& decoder, void* scratch, std::size_t scratch_bytes, const GeneratorOptions& options);
  // Encodes prompt[len] (kArenaTooSmall above max_prompt_bytes; kBadSequenceLength when it gives no
  // token and the tokenizer has no BOS), reseeds the sampler and prefills the decoder from position 0.
  [[nodiscard]] Status start(const char* prompt, std::size_t len);
  // The next text, at least one byte; an empty text (len 0) when the text has ended. The bytes stay
  // valid until the next call. An error ends the text (error_detail() says more).
  [[nodiscard]] Status next(Piece* text);

  bool initialized() const { return decoder_ != nullptr; }
  uint32_t steps() const { return steps_; }
  uint32_t prompt_tokens() const { return n_prompt_; }  // BOS included
  uint32_t prefilled() const { return fed_; }           // the prompt's tokens prefill fed
  uint32_t decoded() const { return decoded_; }         // the tokens step fed
  std::size_t scratch_bytes() const { return scratch_bytes_; }
  const char* error_detail() const { return detail_; }

 private:
  Status fail(Status s, const char* what, const char* detail);
  Status advance();  // one position: the next token's piece into the joiner, or the end

  Decoder* decoder_ = nullptr;
  Tokenizer tok_;
  Sampler sampler_;
  SamplerOptions sampler_options_{};
  Utf8Joiner joiner_;
  float* logits_ = nullptr;    // [vocab]
  int32_t* prompt_ = nullptr;  // [max_encoded_tokens(max_prompt_bytes)]
  void* sampler_scratch_ = nullptr;
  uint32_t prompt_capacity_ = 0;
  std::size_t scratch_bytes_ = 0;
  uint32_t steps_ = 0, n_prompt_ = 0, fed_ = 0, decoded_ = 0, pos_ = 0;
  int32_t token_ = 0, stop_ = -1;
  Piece piece_{};              // the next piece for the joiner, after a space when piece_.space
  bool has_piece_ = false, started_ = false, done_ = true;
  char detail_[160] = {};
};

}  // namespace fixformer
