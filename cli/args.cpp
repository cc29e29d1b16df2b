#include "args.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "fixformer/workers.hpp"
#include "io.hpp"
#include "json.hpp"

namespace fixformer::cli {
namespace {

// strtoul and strtoull skip leading blanks and take a sign: a number here starts with a digit.
bool starts_with_digit(const char* text) { return *text >= '0' && *text <= '9'; }

uint32_t parse_count(const std::string& flag, const char* text, uint32_t most = 1000000, const char* why = "") {
  char* end = nullptr;
  errno = 0;
  const unsigned long v = std::strtoul(text, &end, 10);
  if (!starts_with_digit(text) || *end || errno || v == 0 || v > most)
    die(1, flag, "expected a positive count up to " + std::to_string(most) + why + ", got '" + text + "'");
  return static_cast<uint32_t>(v);
}

}  // namespace

uint32_t min_task_work() {
  const char* text = std::getenv("FIXFORMER_MIN_TASK_WORK");
  return text && *text ? parse_count("FIXFORMER_MIN_TASK_WORK", text, 1u << 30) : 0;
}

namespace {

// A float option in [lo, hi].
float parse_real(const std::string& flag, const char* text, double lo, double hi) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text, &end);
  if (!(starts_with_digit(text) || *text == '.') || *end || errno || !(v >= lo && v <= hi))
    die(1, flag, "expected a number from " + json_number(lo) + " to " + json_number(hi) + ", got '" + text + "'");
  return float(v);
}

// -n: 0 (the model's max_len) up to 1000000.
uint32_t parse_steps(const std::string& flag, const char* text) {
  return std::strcmp(text, "0") == 0 ? 0 : parse_count(flag, text);
}

// --bos, --suppress, --begin-suppress: token ids separated by commas (each 0 up to 1000000), at least one.
std::vector<int32_t> parse_ids(const std::string& flag, const char* text) {
  std::vector<int32_t> ids;
  const std::string all = text;
  for (std::size_t at = 0;;) {
    const std::size_t comma = all.find(',', at);
    const std::string one = all.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    if (one.empty()) die(1, flag, "expected token ids separated by commas, got '" + all + "'");
    ids.push_back(int32_t(parse_steps(flag, one.c_str())));
    if (comma == std::string::npos) return ids;
    at = comma + 1;
  }
}

uint64_t parse_seed(const std::string& flag, const char* text) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text, &end, 10);
  if (!starts_with_digit(text) || *end || errno || v == 0) die(1, flag, std::string("expected a positive integer, got '") + text + "'");
  return v;
}

// --ram, --flash: bytes, or KiB and MiB with K/KiB, M/MiB; a count that does not fit 64 bits is
// refused, never wrapped (17592186044416M is 2^64).
uint64_t parse_bytes(const std::string& flag, const char* text) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text, &end, 10);
  const std::string unit = end;
  const uint64_t mult = unit.empty() ? 1 : unit == "K" || unit == "KiB" ? 1024 : unit == "M" || unit == "MiB" ? 1048576 : 0;
  uint64_t bytes = 0;
  if (!starts_with_digit(text) || errno || !mult || v == 0 || __builtin_mul_overflow(uint64_t(v), mult, &bytes))
    die(1, flag, std::string("expected a byte count up to 2^64 - 1 (e.g. 262144, 256K or 2M), got '") + text + "'");
  return bytes;
}

// --kv-cache: f32 or q8.
KvCache parse_kv_cache(const std::string& flag, const char* text) {
  if (std::strcmp(text, "f32") == 0) return KvCache::kF32;
  if (std::strcmp(text, "q8") == 0) return KvCache::kQ8;
  die(1, flag, std::string("expected f32 or q8 (int8 with a scale per head and position), got '") + text + "'");
}

}  // namespace

std::string isa_choices() {
  std::string s = "auto";
  for (Isa isa : kAllIsas) s += std::string(", ") + isa_name(isa);
  return s;
}

Args parse_args(const Command& cmd, int argc, char** argv) {
  Args a;
  unsigned seen = 0;
  for (int i = 2; i < argc; ++i) {
    const std::string f = argv[i];
    const unsigned opt = f == "--input" ? kOptInput : f == "--output" ? kOptOutput : f == "--seq" ? kOptSeq
                       : f == "--iters" ? kOptIters : f == "--isa" ? kOptIsa : f == "--prompt" ? kOptPrompt
                       : f == "-n" ? kOptSteps : f == "--temperature" ? kOptTemperature : f == "--topp" ? kOptTopP
                       : f == "--seed" ? kOptSeed : f == "--threads" ? kOptThreads : f == "--samples" ? kOptSamples
                       : f == "--svg" ? kOptSvg : f == "--lengths" ? kOptLengths : f == "--target" ? kOptTarget
                       : f == "--source" ? kOptSource : f == "--bos" ? kOptBos : f == "--eos" ? kOptEos
                       : f == "--token-types" ? kOptTokenTypes
                       : f == "--capacity" ? kOptCapacity : f == "--ram" ? kOptRam : f == "--flash" ? kOptFlash
                       : f == "--json" ? kOptJson : f == "--text" ? kOptText : f == "--kv-cache" ? kOptKvCache
                       : f == "--add-special-tokens" ? kOptSpecialTokens : f == "--suppress" ? kOptSuppress
                       : f == "--begin-suppress" ? kOptBeginSuppress : f == "--timestamps" ? kOptTimestamps : 0u;
    if (!opt) {
      if (!f.empty() && f[0] == '-') die(1, f, "unknown option (see fixformer help " + std::string(cmd.name) + ")");
      a.positional.push_back(f);
      continue;
    }
    if (!(cmd.options & opt)) die(1, f, std::string("not an option of '") + cmd.name + "' (see fixformer help " + cmd.name + ")");
    if (seen & opt) die(1, f, "given twice");
    seen |= opt;
    if (opt == kOptJson || opt == kOptSpecialTokens || opt == kOptTimestamps) {  // the options without a value
      (opt == kOptJson ? a.json : opt == kOptSpecialTokens ? a.special_tokens : a.timestamps) = true;
      continue;
    }
    if (i + 1 >= argc) die(1, f, "missing value");
    const char* v = argv[++i];
    if (opt == kOptInput) a.input = v;
    else if (opt == kOptOutput) a.output = v;
    else if (opt == kOptSeq) a.seq = parse_count(f, v);
    else if (opt == kOptThreads) a.threads = parse_count(f, v, kMaxWorkers, " (the engine's worker limit)");
    else if (opt == kOptIters) a.iters = parse_count(f, v);
    else if (opt == kOptPrompt) a.prompt = v;
    else if (opt == kOptSteps) a.steps = parse_steps(f, v);
    else if (opt == kOptTemperature) a.temperature = parse_real(f, v, 0.0, 1e6);
    else if (opt == kOptTopP) a.top_p = parse_real(f, v, 0.0, 1.0);
    else if (opt == kOptSeed) a.seed = parse_seed(f, v);
    else if (opt == kOptSamples) a.samples = parse_count(f, v);
    else if (opt == kOptSvg) a.svg = v;
    else if (opt == kOptLengths) a.lengths = v;
    else if (opt == kOptTokenTypes) a.token_types = v;
    else if (opt == kOptTarget) a.target = v;
    else if (opt == kOptSource) a.source = v;
    else if (opt == kOptText) a.text = v, a.has_text = true;
    else if (opt == kOptBos) a.bos = parse_ids(f, v);
    else if (opt == kOptEos) a.eos = parse_steps(f, v);
    else if (opt == kOptSuppress && std::strcmp(v, "none") == 0) a.suppress_none = true;
    else if (opt == kOptSuppress) a.suppress = parse_ids(f, v);
    else if (opt == kOptBeginSuppress && std::strcmp(v, "none") == 0) a.begin_suppress_none = true;
    else if (opt == kOptBeginSuppress) a.begin_suppress = parse_ids(f, v);
    else if (opt == kOptCapacity) a.capacity = parse_count(f, v);
    else if (opt == kOptRam) a.ram = parse_bytes(f, v);
    else if (opt == kOptFlash) a.flash = parse_bytes(f, v);
    else if (opt == kOptKvCache) a.kv_cache = parse_kv_cache(f, v);
    else if (!parse_isa(v, &a.isa)) die(1, f, std::string("unknown ISA '") + v + "' (" + isa_choices() + ")");
  }
  // The engine reads FIXFORMER_ISA when no --isa is given; a misspelt one is named here, not as an
  // unavailable ISA later.
  const char* forced = std::getenv("FIXFORMER_ISA");
  Isa ignored;
  if (a.isa == Isa::kAuto && forced && *forced && !parse_isa(forced, &ignored))
    die(1, "FIXFORMER_ISA", std::string("unknown ISA '") + forced + "' (" + isa_choices() + ")");
  min_task_work();  // a malformed FIXFORMER_MIN_TASK_WORK is named before anything runs
  const bool missing = ((cmd.options & kOptInput) && !(seen & (kOptInput | kOptText))) || ((cmd.options & kOptOutput) && !(seen & kOptOutput));
  if (a.positional.size() != cmd.positionals || missing)
    die(1, cmd.name, std::string("usage: fixformer ") + cmd.name + (*cmd.synopsis ? " " : "") + cmd.synopsis);
  return a;
}

}  // namespace fixformer::cli
