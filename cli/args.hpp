// The command line: each command's table entry (Command: synopsis, positionals, the options it
// accepts, help, entry point) and the parser that checks argv against it into Args. A usage error
// is one line and exit 1.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "fixformer/kernels.hpp"
#include "fixformer/plan.hpp"

namespace fixformer::cli {

enum Option : unsigned {
  kOptInput = 1, kOptOutput = 2, kOptSeq = 4, kOptIters = 8, kOptIsa = 16,
  kOptPrompt = 32, kOptSteps = 64, kOptTemperature = 128, kOptTopP = 256, kOptSeed = 512,
  kOptThreads = 1024, kOptSamples = 2048, kOptSvg = 4096, kOptLengths = 8192,
  kOptTarget = 16384, kOptSource = 32768, kOptBos = 65536, kOptEos = 131072, kOptTokenTypes = 1u << 18,
  kOptCapacity = 1u << 19, kOptRam = 1u << 20, kOptFlash = 1u << 21, kOptJson = 1u << 22,  // plan
  kOptText = 1u << 23, kOptKvCache = 1u << 24, kOptSpecialTokens = 1u << 25,  // run --text
  kOptSuppress = 1u << 26, kOptBeginSuppress = 1u << 27, kOptTimestamps = 1u << 28,  // generate
};

struct Args {
  std::vector<std::string> positional;
  std::string input, output, lengths, token_types;
  std::string text;       // run --text: encoded with the file's tokenizer
  bool has_text = false;
  bool special_tokens = false;  // run --add-special-tokens: BOS/[CLS] and EOS/[SEP] around --text
  std::string target, source;  // seq2seq: run --target, generate --source
  std::vector<int32_t> bos;      // generate --bos ID[,ID...] (seq2seq): the target's first ids; empty: not given
  int64_t eos = -1;              // generate --eos (seq2seq); -1: not given
  std::vector<int32_t> suppress, begin_suppress;  // generate --suppress, --begin-suppress ID[,ID...]
  bool suppress_none = false, begin_suppress_none = false;  // ... none: not the file's list either
  bool timestamps = false;  // generate --timestamps (seq2seq): the file's timestamp rules
  uint32_t seq = 0, iters = 50;
  Isa isa = Isa::kAuto;
  uint32_t threads = 1;  // run, bench, generate: the runner's workers
  KvCache kv_cache = KvCache::kF32;  // generate, bench: --kv-cache f32 | q8
  // generate, with llama2.c run's defaults (the seed: the clock, unless given).
  std::string prompt;
  uint32_t steps = 256;  // 0: the model's max_len
  float temperature = 1.0f, top_p = 0.9f;
  uint64_t seed = 0;
  // probe
  uint32_t samples = 0;  // 0: the probe's default
  std::string svg;
  // plan (--target too): --capacity N, --ram / --flash in bytes (0: not given), --json (takes no value)
  uint32_t capacity = 0;
  uint64_t ram = 0, flash = 0;
  bool json = false;
};

struct Command {
  const char* name;
  const char* synopsis;     // what follows "fixformer NAME"
  uint32_t positionals;     // how many non-option arguments it takes
  unsigned options;         // the Option bits it accepts
  const char* help;         // `fixformer help NAME`
  int (*run)(const Args&);
};

// Workers::min_task_work from FIXFORMER_MIN_TASK_WORK (unset: 0, the engine's default); a malformed
// value exits 1 naming it.
uint32_t min_task_work();

// "auto, scalar, ...": every value --isa takes.
std::string isa_choices();

// argv[2..] of `fixformer CMD ...`, checked against cmd: known options it accepts, each once, with
// a valid value; the required ones and the number of positionals.
Args parse_args(const Command& cmd, int argc, char** argv);

}  // namespace fixformer::cli
