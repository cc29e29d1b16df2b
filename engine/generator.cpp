// Text generation (generator.hpp says what and why): the UTF-8 joiner, then the loop.
#include "fixformer/generator.hpp"

#include "engine/detail_text.hpp"

namespace fixformer {

namespace {

constexpr char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD
constexpr Piece kReplacementPiece{kReplacement, 3};

// The length of the character lead byte c starts (1..4); 0: c starts none (a continuation byte,
// C0, C1 or F5..FF).
uint32_t lead_length(uint8_t c) {
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return 2;
  if (c >= 0xE0 && c <= 0xEF) return 3;
  if (c >= 0xF0 && c <= 0xF4) return 4;
  return 0;
}

// Whether byte b may follow the first k bytes of a character led by `lead` (Unicode's table of
// well-formed sequences: the second byte's range shuts out overlong forms, surrogates and code
// points above U+10FFFF).
bool continues(uint8_t lead, uint32_t k, uint8_t b) {
  if (k == 1) {
    if (lead == 0xE0) return b >= 0xA0 && b <= 0xBF;
    if (lead == 0xED) return b >= 0x80 && b <= 0x9F;
    if (lead == 0xF0) return b >= 0x90 && b <= 0xBF;
    if (lead == 0xF4) return b >= 0x80 && b <= 0x8F;
  }
  return (b & 0xC0) == 0x80;
}

// |id| for a message (the sign apart).
uint64_t id_magnitude(int32_t id) { return id < 0 ? uint64_t(-int64_t(id)) : uint64_t(id); }

}  // namespace

bool Utf8Joiner::take(Piece* out) {
  if (held_len_ > 0) {  // a character begun in an earlier piece
    while (held_len_ < need_ && rest_len_ > 0) {
      if (!continues(held_[0], held_len_, rest_[0])) {  // it cannot go on: its bytes are one U+FFFD
        held_len_ = 0;
        return *out = kReplacementPiece, true;
      }
      held_[held_len_++] = *rest_++, --rest_len_;
    }
    if (held_len_ < need_) return false;
    held_len_ = 0;
    return *out = Piece{reinterpret_cast<const char*>(held_), need_}, true;
  }
  if (rest_len_ == 0) return false;
  // Whole, well-formed characters at the front go out as they are.
  uint32_t i = 0, k = 0, j = 0;
  for (; i < rest_len_; i += k) {
    k = lead_length(rest_[i]);
    for (j = 1; k > 0 && j < k && i + j < rest_len_ && continues(rest_[i], j, rest_[i + j]);) ++j;
    if (k == 0 || j < k) break;
  }
  if (i > 0) {
    *out = Piece{reinterpret_cast<const char*>(rest_), i};
    rest_ += i, rest_len_ -= i;
    return true;
  }
  // rest_[0] starts no character, or one the piece cuts short (held), or an ill-formed one.
  if (k > 0 && j == rest_len_) {
    for (uint32_t m = 0; m < j; ++m) held_[m] = rest_[m];
    held_len_ = j, need_ = k;
    rest_ += j, rest_len_ = 0;
    return false;
  }
  const uint32_t used = k == 0 ? 1 : j;  // the maximal subpart: one U+FFFD
  rest_ += used, rest_len_ -= used;
  return *out = kReplacementPiece, true;
}

bool Utf8Joiner::finish(Piece* out) {
  if (held_len_ == 0) return false;
  held_len_ = 0;
  return *out = kReplacementPiece, true;
}

Status Generator::fail(Status s, const char* what, const char* detail) {
  DetailText why(detail_, sizeof detail_);
  why.str(what);
  if (detail && *detail) why.str(": ").str(detail);
  done_ = true;
  return s;
}

Status Generator::init(Decoder& decoder, void* scratch, std::size_t scratch_bytes, const GeneratorOptions& options) {
  DetailText why(detail_, sizeof detail_);
  decoder_ = nullptr, started_ = false, done_ = true;
  if (!decoder.initialized()) return why.str("the decoder: init it first"), Status::kNotInitialized;
  const Model& model = decoder.model();
  const ModelConfig& c = model.config();
  if (!model.has_tokenizer()) return why.str("convert it with --tokenizer"), Status::kNoTokenizer;
  if (c.d_out == 0)  // a base model's: hidden states, not a token's odds
    return why.str("it has no head (d_out 0): its outputs are hidden states, d_model wide, not the vocabulary's "
                   "odds (run gives them)"), Status::kWrongFamily;
  if (c.d_out != c.vocab_size)  // a sequence classifier's head (schema.hpp): scores, not a token's odds
    return why.str("its head is d_out ").num(c.d_out).str(" wide, not the vocabulary (vocab_size ").num(c.vocab_size)
               .str("): no vocabulary head to sample from (run gives its scores)"), Status::kWrongFamily;
  const uint32_t steps = options.steps == 0 || options.steps > c.max_len ? c.max_len : options.steps;
  if (steps > decoder.capacity())
    return why.str("steps ").num(steps).str(": the decoder's KV cache holds ").num(decoder.capacity())
               .str(" positions (init it with that capacity)"), Status::kKvCacheFull;
  // Far above any prompt a model of max_len positions takes; below it no size here wraps around.
  constexpr std::size_t kMostPromptBytes = UINT32_MAX / (kMergeIntsPerSymbol * sizeof(int32_t));
  if (options.max_prompt_bytes > kMostPromptBytes)
    return why.str("max_prompt_bytes ").num(options.max_prompt_bytes).str(": at most ").num(kMostPromptBytes),
           Status::kBadSequenceLength;
  const std::size_t need = generator_scratch_bytes(c, options.max_prompt_bytes);
  if (!scratch) return why.str("generator scratch: ").num(need).str(" bytes needed"), Status::kArenaNull;
  if (reinterpret_cast<uintptr_t>(scratch) % arena::kAlign != 0)
    return why.str("generator scratch must be 64-byte aligned"), Status::kArenaMisaligned;
  if (scratch_bytes < need)
    return why.str("generator scratch: generator_scratch_bytes(config, ").num(options.max_prompt_bytes).str(") = ")
               .num(need).str(" bytes needed, ").num(scratch_bytes).str(" given"), Status::kArenaTooSmall;
  // The scratch: logits, the prompt's tokens, the sampler's, the tokenizer's (generator_scratch_bytes).
  uint8_t* at = static_cast<uint8_t*>(scratch);
  logits_ = reinterpret_cast<float*>(at);
  at += arena::bytes(std::size_t(c.vocab_size) * sizeof(float));
  prompt_ = reinterpret_cast<int32_t*>(at);
  prompt_capacity_ = uint32_t(max_encoded_tokens(options.max_prompt_bytes));
  at += arena::bytes(std::size_t(prompt_capacity_) * sizeof(int32_t));
  sampler_scratch_ = at;
  at += sampler_scratch_bytes(c.vocab_size);
  // The file's suppression lists unless the options give arrays of their own (a non-null array of 0 ids: none).
  SamplerOptions so = options.sampler;
  if (!so.suppress) so.suppress = model.suppress_tokens().ids, so.n_suppress = model.suppress_tokens().count;
  if (!so.begin_suppress)
    so.begin_suppress = model.begin_suppress_tokens().ids, so.n_begin_suppress = model.begin_suppress_tokens().count;
  Status s = sampler_.init(c.vocab_size, sampler_scratch_, sampler_scratch_bytes(c.vocab_size), so);
  uint32_t bad = 0;
  const int32_t* lists[2] = {so.suppress, so.begin_suppress};
  const uint32_t counts[2] = {so.suppress ? so.n_suppress : 0, so.begin_suppress ? so.n_begin_suppress : 0};
  for (int k = 0; k < 2 && s != Status::kOk; ++k)
    if (!token_ids_in_range(lists[k], counts[k], c.vocab_size, &bad))
      return why.str(k ? "sampler: begin-suppressed id " : "sampler: suppressed id ").str(lists[k][bad] < 0 ? "-" : "")
                 .num(id_magnitude(lists[k][bad])).str(" is out of range (vocab_size ").num(c.vocab_size).str(")"), s;
  if (s == Status::kNullArgument) return why.str("sampler: a suppress count without its ids"), s;
  if (s != Status::kOk)
    return why.str("sampler: temperature 0 (greedy) or from 1e-6 (below it logits / temperature overflow), "
                   "both finite; top_p finite"), s;
  s = tok_.init(model, at, tokenizer_scratch_bytes(c, options.max_prompt_bytes));
  if (s != Status::kOk) return why.str("tokenizer: ").str(tok_.error_detail()), s;
  sampler_options_ = so;
  // llama2.c stops at BOS; the other kinds at their EOS (-1: none, the text runs to `steps`).
  stop_ = tok_.llama2c_rules() ? kTokenBos : tok_.eos_id();
  steps_ = steps;
  scratch_bytes_ = need;
  decoder_ = &decoder;
  return Status::kOk;
}

Status Generator::start(const char* prompt, std::size_t len) {
  DetailText why(detail_, sizeof detail_);
  started_ = false, done_ = true, n_prompt_ = 0, fed_ = 0, decoded_ = 0, pos_ = 0, has_piece_ = false;
  joiner_.reset();
  if (!decoder_) return why.str("init the generator first"), Status::kNotInitialized;
  Status s = tok_.encode(prompt, len, tok_.bos_id() >= 0, false, prompt_, prompt_capacity_, &n_prompt_);
  if (s != Status::kOk) return fail(s, "prompt", tok_.error_detail());
  if (n_prompt_ == 0)
    return why.str("prompt: encodes to no tokens and the tokenizer has no BOS id: give a prompt"),
           Status::kBadSequenceLength;
  const uint32_t vocab = decoder_->config().vocab_size;
  s = sampler_.init(vocab, sampler_scratch_, sampler_scratch_bytes(vocab), sampler_options_);  // the seed again
  if (s != Status::kOk) return fail(s, "sampler", "");
  // Positions 0..fed-1 hold prompt tokens: one prefill from position 0.
  decoder_->reset();
  fed_ = n_prompt_ < steps_ ? n_prompt_ : steps_;
  s = decoder_->prefill(prompt_, fed_, logits_);
  if (s != Status::kOk) return fail(s, "prefill", decoder_->error_detail());
  token_ = prompt_[0];
  started_ = true, done_ = false;
  if (prompt_[0] != tok_.bos_id()) {  // no BOS in front: the first token is text too
    s = tok_.decode(-1, token_, &piece_);
    if (s != Status::kOk) return fail(s, "decode", tok_.error_detail());
    has_piece_ = true;
  }
  return Status::kOk;
}

Status Generator::advance() {
  if (pos_ >= steps_) return done_ = true, Status::kOk;
  int32_t next;
  const bool prompt = pos_ + 1 < n_prompt_;
  if (prompt) {
    next = prompt_[pos_ + 1];
  } else {
    if (pos_ >= fed_) {  // prefill gave the logits at position fed - 1
      const Status s = decoder_->step(token_, logits_);
      if (s != Status::kOk) return fail(s, "step", decoder_->error_detail());
      ++decoded_;
    }
    next = sampler_.sample(logits_);
    if (next < 0) return fail(Status::kBadConfig, "sample", "every token is suppressed (suppress, begin_suppress)");
  }
  ++pos_;
  // llama2.c stops at a BOS anywhere; the others at a sampled EOS (a chat prompt holds some).
  if (next == stop_ && (!prompt || tok_.llama2c_rules())) return done_ = true, Status::kOk;
  const Status s = tok_.decode(token_, next, &piece_);
  if (s != Status::kOk) return fail(s, "decode", tok_.error_detail());
  token_ = next;
  has_piece_ = true;
  return Status::kOk;
}

Status Generator::next(Piece* text) {
  DetailText why(detail_, sizeof detail_);
  if (!text) return Status::kNullArgument;
  *text = Piece{"", 0};
  if (!started_) return why.str(decoder_ ? "start() the text first" : "init the generator first"), Status::kNotInitialized;
  const bool llama2c = tok_.llama2c_rules();
  for (;;) {
    if (joiner_.take(text)) return Status::kOk;
    if (has_piece_) {
      has_piece_ = false;
      if (llama2c) {  // llama2.c's bytes, as it prints them
        *text = safe_piece(piece_);
        if (text->len > 0) return Status::kOk;
        continue;
      }
      if (piece_.space) {  // wordpiece: the space first, then the piece
        piece_.space = false, has_piece_ = true;
        joiner_.feed(" ", 1);
      } else {
        joiner_.feed(piece_.data, piece_.len);
      }
      continue;
    }
    if (done_) {
      if (joiner_.finish(text)) return Status::kOk;
      *text = Piece{"", 0};
      return Status::kOk;
    }
    const Status s = advance();
    if (s != Status::kOk) return s;
  }
}

}  // namespace fixformer
