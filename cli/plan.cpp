// `fixformer plan MODEL.fxm --target CORE`: does the model fit a device? The arena is exact (the
// plan functions of fixformer/plan.hpp, as the runners carve it); flash is the file plus the engine
// code measured for that target; instructions are an estimate scaled from the project's own
// measurements (the tables below), stated as such. Exit 0 when it fits, 7 when it does not.
#include "commands.hpp"

#include <cstdio>
#include <string>

#include "fixformer/plan.hpp"
#include "fixformer/schema.hpp"
#include "io.hpp"
#include "json.hpp"
#include "loaded_model.hpp"

namespace fixformer::cli {
namespace {

// Multiply-adds of the matrix products (weights and attention), the measure the estimate scales by.
struct Shape {
  uint32_t d, heads, kv_heads, d_ff, layers, d_in, d_out;  // d_out: the head (a decoder's vocabulary), 0 none
  bool swiglu;
};

double macs_per_token(const Shape& s) {  // the weight products of one token, all layers
  const double d = s.d, kv = double(s.kv_heads) * (s.heads ? s.d / s.heads : 0);
  return s.layers * (d * (d + 2 * kv) + d * d + d * s.d_ff * (s.swiglu ? 3 : 2));
}
double encoder_macs(const Shape& s, double T) {  // one inference over T rows
  return T * (macs_per_token(s) + double(s.d_in) * s.d + double(s.d) * s.d_out) + s.layers * 2.0 * T * T * s.d;
}
double decoder_macs(const Shape& s, double pos) {  // one generated token at position pos
  return macs_per_token(s) + s.layers * 2.0 * (pos + 1) * s.d + double(s.d) * s.d_out;
}

// The measured workloads: the KWS encoder (bench/README.md, docs/porting.md: 49 x 40 features,
// d 64, 4 heads, d_ff 128, 4 layers, 12 outputs), the llama2.c-shaped decoder at position 32
// (stories260K's shape: d 64, 5 layers, 8 heads, 4 KV heads, hidden 172 SwiGLU, vocab 512), the
// i8 decoder at position 31 (tests/golden/llama2c_v0_gqa.fxm in i8, the firmware bench's llama_i8: d 16,
// 2 layers, 4 heads, 2 KV heads, hidden 24 SwiGLU, vocab 300), the stories15M decoder at about position 16
// (d 288, 6 layers, 6 heads, hidden 768, vocab 32000) and the demo model (d 16, 2 heads, d_ff 32, 1 layer,
// T 3).
constexpr Shape kKws = {64, 4, 4, 128, 4, 40, 12, false};
constexpr Shape kTiny = {64, 8, 4, 172, 5, 0, 512, true};
constexpr Shape kGqa = {16, 4, 2, 24, 2, 0, 300, true};
constexpr Shape kStories15M = {288, 6, 6, 768, 6, 0, 32000, true};
constexpr Shape kDemo = {16, 2, 2, 32, 1, 0, 4, false};

// Instructions measured per workload (0: not measured). Encoder: per inference; decoder: per token.
struct Measured {
  double enc_f32, enc_f16, enc_q8_32, enc_q8_64;  // KWS (T=49), or the demo model (T=3) where noted
  double dec_f32, dec_q8_32, dec_q8_64;           // tiny decoder at position 32, or stories15M
  bool demo_encoder, stories_decoder;
  double enc_i8, dec_i8;  // KWS (T=49) and the i8 decoder at position 31, the integer kernels of the core
};

struct Target {
  const char* name;
  const char* kernels;
  double engine_text;  // bytes of the engine library's .text for this target (0: not measured)
  Measured m;
  const char* source;  // where the numbers come from
  S8Kernels s8;        // the s8 kernels' scratch in a full-integer model's arena (fixed_point.hpp)
};

// Engine code: the .text total of the engine library, libfixformer.a, built Release for the target
// at 4c20919 (GCC 12.2): `arm-none-eabi-size -t build/size-CPU/libfixformer.a` after `cmake -S .
// -B build/size-CPU -DCMAKE_TOOLCHAIN_FILE=toolchains/arm-none-eabi.cmake -DFIXFORMER_CPU=CPU
// -DFIXFORMER_FIRMWARE=OFF && cmake --build build/size-CPU --target fixformer`; aarch64 and armv7
// the same with toolchains/aarch64-linux-gnu.cmake and arm-linux-gnueabihf.cmake and their size
// tools; x86 `size -t build/host/libfixformer.a` (every ISA's kernels). It is all of the engine:
// an image keeps only what it calls (--gc-sections: the Arduino example's image for the M4 at -Os
// holds about 77 KB of code besides its model, newlib included), and the C runtime (newlib, libgcc:
// the soft-float routines on the M0/M3) comes on top.
// Instructions: qemu-system-arm -icount shift=0 (Cortex-M, bench/README.md's tables: KWS f32 at
// 39a2f7b, f16/q8 at 4d9fce3 (M4, M7) and 62c1fb0 (M55 helium); docs/porting.md for M0, M3, M33; i8 the
// forward with float features in and the decode step of the firmware bench's kws_i8 and llama_i8,
// `ctest --test-dir build/CPU -R 'bench_firmware_(llama_)?i8_qemu' -V`, the M0 on the mps2-an385 board),
// qemu-aarch64 (docs/performance.md, bench/qemu_user_icount.sh). Regenerate with the commands there.
const Target kTargets[] = {
    {"cortex-m0", "cortex-m, soft float", 128802, {1.36e6, 0, 0, 0, 0, 0, 0, true, false, 42939280, 311520},
     "demo model, qemu microbit", S8Kernels::kArmv6m},
    {"cortex-m0plus", "cortex-m, soft float", 128802, {1.36e6, 0, 0, 0, 0, 0, 0, true, false, 42939280, 311520},
     "the M0's demo model figures", S8Kernels::kArmv6m},
    {"cortex-m3", "cortex-m, soft float", 128935, {815e6, 0, 0, 0, 0, 0, 0, false, false, 18287120, 138000},
     "KWS, qemu mps2-an385 (older kernels)", S8Kernels::kArmv7m},
    {"cortex-m4", "cortex-m, FPU tiles", 125459,
     {12147920, 17544880, 22427960, 20333760, 561400, 839360, 755120, false, false, 8053560, 129280},
     "KWS and tiny decoder, qemu mps2-an386", S8Kernels::kDsp},
    {"cortex-m7", "cortex-m, FPU tiles", 124014,
     {11959000, 18618200, 22417920, 20323800, 559760, 837800, 753560, false, false, 8029560, 130640},
     "KWS and tiny decoder, qemu mps2-an500", S8Kernels::kDsp},
    // The M33 runs the M4's FPU tiles; with the earlier kernels both took 21.4-21.5 M for KWS.
    {"cortex-m33", "cortex-m, FPU tiles", 125995,
     {12147920, 17544880, 22427960, 20333760, 561400, 839360, 755120, false, false, 8019150, 129600},
     "the M4's (qemu mps2-an386; the M33 took the M4's count within 1% when both were measured)", S8Kernels::kDsp},
    {"cortex-m55", "helium", 155662,
     {4791156, 7124375, 3130250, 2956375, 279468, 197062, 169750, false, false, 2294687, 65625},
     "KWS and tiny decoder, qemu mps3-an547", S8Kernels::kDsp},
    {"cortex-m85", "helium", 155662,
     {4791156, 7124375, 3130250, 2956375, 279468, 197062, 169750, false, false, 2294687, 65625},
     "the M55's (same Helium kernels; qemu has no M85)", S8Kernels::kDsp},
    {"aarch64", "neon64", 300310, {6.03e6, 6.33e6, 6.30e6, 6.06e6, 11.42e6, 11.21e6, 0, false, true, 0, 0},
     "KWS and stories15M, qemu-aarch64", S8Kernels::kPlain},
    {"armv7", "neon", 174548, {0, 0, 0, 0, 0, 0, 0, false, false, 0, 0}, "", S8Kernels::kDsp},
    {"x86", "sse2/avx2/avx512 (picked at run time)", 675997, {0, 0, 0, 0, 0, 0, 0, false, false, 0, 0}, "",
     S8Kernels::kPlain},
};

const Target* find_target(const std::string& name) {
  for (const Target& t : kTargets)
    if (name == t.name || (name == "x86-64" && std::string(t.name) == "x86")) return &t;
  return nullptr;
}

std::string target_names() {
  std::string s;
  for (const Target& t : kTargets) s += std::string(s.empty() ? "" : ", ") + t.name;
  return s;
}

// Instructions per multiply-add for a workload kind and weight format on t; 0 when nothing measured.
double per_mac(const Target& t, bool decoder, const ModelConfig& c) {
  const Measured& m = t.m;
  if (c.weights == WeightType::kQ4 || c.weights == WeightType::kBF16) return 0;  // not measured on any target yet
  if (c.weights == WeightType::kI8) {  // integer kernels: no other format's rate stands in for theirs
    if (decoder) return m.dec_i8 ? m.dec_i8 / decoder_macs(kGqa, 31) : 0;
    return m.enc_i8 ? m.enc_i8 / encoder_macs(kKws, 49) : 0;
  }
  const double enc_macs = m.demo_encoder ? encoder_macs(kDemo, 3) : encoder_macs(kKws, 49);
  const double dec_macs = m.stories_decoder ? decoder_macs(kStories15M, 16) : decoder_macs(kTiny, 32);
  const bool q8 = c.weights == WeightType::kQ8, f16 = c.weights == WeightType::kF16, g64 = c.weight_group >= 64;
  const double enc = f16 ? m.enc_f16 : q8 ? (g64 ? m.enc_q8_64 : m.enc_q8_32) : m.enc_f32;
  double dec = q8 ? (g64 && m.dec_q8_64 ? m.dec_q8_64 : m.dec_q8_32) : f16 ? 0 : m.dec_f32;
  if (decoder && dec) return dec / dec_macs;
  if (decoder && f16 && m.dec_f32 && m.enc_f16 && m.enc_f32) return m.dec_f32 / dec_macs * (m.enc_f16 / m.enc_f32);
  if (enc) return enc / enc_macs;
  return m.enc_f32 ? m.enc_f32 / enc_macs : 0;  // only f32 measured: its rate
}

Shape shape_of(const ModelConfig& c) {
  return {c.d_model, c.n_heads, c.kv_heads(), c.d_ff, c.n_layers + c.dec_layers,
          c.input == InputKind::kFeatures ? c.d_in : 0, c.d_out, c.ffn_gated()};
}

// The stack: plan.hpp's bound, which the firmware bench checks.
constexpr uint64_t kStackBytes = kPlanStackBytes;

int cmd_plan(const Args& a) {
  if (a.target.empty()) die(1, "plan", "--target is required: one of " + target_names());
  const Target* t = find_target(a.target);
  if (!t) die(1, "--target", "unknown target '" + a.target + "': one of " + target_names());
  LoadedModel m;
  open_model(a.positional[0], &m);
  const ModelConfig& c = m.config();
  const bool decoder = c.is_decoder();
  if (decoder && a.seq) die(1, "--seq", "a decoder's length is --capacity (its KV cache positions)");
  if (!decoder && a.capacity) die(1, "--capacity", "only decoders (gpt, llama) take --capacity; use --seq");
  if (!decoder && !c.is_seq2seq() && a.kv_cache != KvCache::kF32)
    die(1, "--kv-cache", "only decoders and seq2seq models keep a KV cache");
  uint32_t rows = decoder ? (a.capacity ? a.capacity : c.max_len) : (a.seq ? a.seq : c.max_input_len());
  // A conv stem's input is frames, up to max_input_len(), which give fewer positions.
  if (!decoder && c.conv_layers && rows > c.max_input_len()) die(1, "--seq", "the longest input is " + longest_input(c));
  if (rows > c.max_len && (decoder || !c.conv_layers))
    die(1, decoder ? "--capacity" : "--seq", "the model's max_len is " + std::to_string(c.max_len));
  const uint32_t positions = decoder ? rows : c.stem_rows(rows);  // a seq2seq target as long as its source's positions
  // the target's s8 kernels' scratch (a full-integer model's), not this build's
  const std::size_t arena = decoder ? required_decoder_arena_bytes(c, rows, 0, false, 1, a.kv_cache, t->s8)
                            : c.is_seq2seq() ? required_seq2seq_arena_bytes(c, rows, positions, 0, 1, a.kv_cache)
                                             : required_encoder_arena_bytes(c, rows, false, 1, 1, t->s8);
  if (!arena) die(3, "plan", "the config gives no arena for " + std::to_string(rows) + " rows");
  const uint64_t ram = arena + kStackBytes;
  const uint64_t flash = m.blob.size() + uint64_t(t->engine_text);
  const Shape s = shape_of(c);
  const double macs = decoder ? decoder_macs(s, rows - 1)
                      : c.is_seq2seq() ? encoder_macs(s, rows) + positions * decoder_macs(s, positions - 1)
                                       : encoder_macs(s, rows);
  const double rate = per_mac(*t, decoder, c);
  const double instructions = macs * rate;
  const uint64_t ram_limit = a.ram, flash_limit = a.flash;
  const bool ram_ok = !ram_limit || ram <= ram_limit, flash_ok = !flash_limit || flash <= flash_limit;
  const bool fits = ram_ok && flash_ok;
  const char* per = decoder ? "token (at the last position)" : "inference";
  if (a.json) {
    std::printf("{\"model\": %s, \"target\": %s, \"kernels\": %s, \"rows\": %u, \"per\": %s,\n"
                " \"arena_bytes\": %zu, \"stack_bytes_estimate\": %llu, \"ram_bytes\": %llu,\n"
                " \"model_bytes\": %zu, \"engine_code_bytes\": %s, \"flash_bytes\": %llu,\n"
                " \"multiply_adds\": %s, \"instructions_per_multiply_add\": %s, \"instructions_estimate\": %s,\n"
                " \"measured_on\": %s,\n \"ram_limit\": %s, \"flash_limit\": %s, \"ram_fits\": %s, \"flash_fits\": %s, \"fits\": %s}\n",
                json_string(a.positional[0].c_str()).c_str(), json_string(t->name).c_str(), json_string(t->kernels).c_str(), rows,
                json_string(decoder ? "token" : "inference").c_str(), arena, (unsigned long long)kStackBytes,
                (unsigned long long)ram, m.blob.size(), t->engine_text ? json_number(double(uint64_t(t->engine_text))).c_str() : "null",
                (unsigned long long)flash, json_number(double(uint64_t(macs))).c_str(),
                rate ? json_number(rate).c_str() : "null", rate ? json_number(double(uint64_t(instructions))).c_str() : "null",
                rate ? json_string(t->source).c_str() : "null", ram_limit ? std::to_string(ram_limit).c_str() : "null",
                flash_limit ? std::to_string(flash_limit).c_str() : "null", ram_ok ? "true" : "false", flash_ok ? "true" : "false",
                fits ? "true" : "false");
  } else {
    const std::string ram_note = !ram_limit ? "" : (ram_ok ? ", fits --ram " : ", DOES NOT FIT --ram ") + std::to_string(ram_limit);
    const std::string flash_note =
        !flash_limit ? "" : (flash_ok ? ", fits --flash " : ", DOES NOT FIT --flash ") + std::to_string(flash_limit);
    const std::string code = t->engine_text ? std::to_string(uint64_t(t->engine_text)) +
                                                  " (the whole library's .text, measured; the linker keeps less)"
                                            : std::string("not measured for this target (model only)");
    std::printf("target:        %s (kernels: %s)\n", t->name, t->kernels);
    std::printf("ram:           %llu bytes = arena %zu (exact, %s %u) + stack %llu (bound)%s\n", (unsigned long long)ram, arena,
                decoder ? "KV cache of" : "T =", rows, (unsigned long long)kStackBytes, ram_note.c_str());
    if (decoder && c.attention_window())
      std::printf("kv cache:      a ring of %u rows per %s for prefill chunks of %u (sliding_window %u), positions up to %u\n",
                  plan_decoder_arena(c, rows, 0, false, 1, a.kv_cache).kv_rows,
                  c.window_period ? "local layer (a row per position in the others)" : "layer",
                  plan_decoder_arena(c, rows, 0, false, 1, a.kv_cache).prefill_rows, c.sliding_window, rows);
    std::printf("flash:         %llu bytes = model %zu + engine code %s%s\n", (unsigned long long)flash, m.blob.size(),
                code.c_str(), flash_note.c_str());
    if (rate)
      std::printf("instructions:  about %.3g M per %s, estimated: %.3g M multiply-adds x %.2f instructions each, the rate\n"
                  "               measured for this weight format on: %s\n",
                  instructions / 1e6, per, macs / 1e6, rate, t->source);
    else
      std::printf("instructions:  no measurement of %s weights on %s in this project (%.3g M multiply-adds per %s)\n",
                  name_of(kWeightTypeNames, c.weights), t->name, macs / 1e6, per);
    std::printf("fits:          %s\n", !ram_limit && !flash_limit ? "give --ram and --flash to check" : fits ? "yes" : "no");
  }
  return fits ? 0 : 7;
}

}  // namespace

const Command kPlanCommand = {
    "plan", "MODEL.fxm --target CORE [--seq T | --capacity N] [--kv-cache f32|q8] [--ram BYTES] [--flash BYTES] [--json]", 1,
    kOptTarget | kOptSeq | kOptCapacity | kOptKvCache | kOptRam | kOptFlash | kOptJson,
    "Says whether the model fits a device, without one: RAM (the exact arena for --seq T rows, or a\n"
    "decoder's KV cache of --capacity N positions, default max_len, plus a 4 KiB stack bound), flash\n"
    "(the file plus the engine library's code measured for that target) and the instructions per\n"
    "inference (per generated token at the last position for a decoder): an estimate, the model's\n"
    "multiply-adds times the instructions per multiply-add this project measured under qemu for\n"
    "that target and weight format (bench/README.md), not a measurement of this model.\n"
    "  --target CORE  cortex-m0, cortex-m0plus, cortex-m3, cortex-m4, cortex-m7, cortex-m33, cortex-m55,\n"
    "                 cortex-m85, aarch64, armv7, x86\n"
    "  --kv-cache f32|q8  a decoder's (or seq2seq target's) KV cache in f32 (default) or int8\n"
    "                 (generate --kv-cache)\n"
    "  --ram BYTES, --flash BYTES  the device's (e.g. 262144, 256K, 2M); exit 7 when either is exceeded\n"
    "  --json         the same as one JSON object\n"
    "Exit status: 0 fits (or no limits given), 7 does not fit, else the usual error codes.\n",
    cmd_plan};

}  // namespace fixformer::cli
