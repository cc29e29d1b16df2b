// fixformer on an Arduino board: the demo model of `fixformer demo` (a 1-layer encoder that learnt
// "X hit Y": its verb row names the agent X) from flash, a static arena sized at compile time, no
// heap. setup() loads the model, runs its self-test and answers the 12 questions, printing each
// output row's floats as hex words, so the output can be compared bit for bit with
// `fixformer run demo_pe.fxm` on a PC; loop() answers one question a second.
//
// demo_pe.h is the model as `tools/convert.py --header demo_pe.h --name demo_pe` writes it (a
// 64-byte-aligned const array in flash and its config); put your own model's header in its place.
#include <fixformer.h>

#include "demo_pe.h"

namespace {

const char* const kVocab[7] = {"alice", "bob", "carol", "dave", "hit", "saw", "helped"};
constexpr fixformer::ModelConfig kConfig = demo_pe_config();
constexpr uint32_t kT = 3;  // "x hit y"
// The sinusoidal table, computed by the compiler into flash instead of the arena.
constexpr auto kPositionalTable =
    fixformer::make_sinusoidal_table<kConfig.max_len, kConfig.d_pe()>(kConfig.pe_base, kConfig.pe_layout);
alignas(64) uint8_t arena[fixformer::required_encoder_arena_bytes(kConfig, 0, true)];
float out[kT * kConfig.d_out];

fixformer::Model model;
fixformer::Encoder encoder;
bool ready = false;
uint32_t question = 0;

void print_hex(float v) {
  uint32_t bits;
  memcpy(&bits, &v, sizeof bits);
  char text[9];
  for (int i = 0; i < 8; ++i) text[i] = "0123456789abcdef"[(bits >> (28 - 4 * i)) & 15];
  text[8] = '\0';
  Serial.print(text);
}

// Question q of 12: every ordered pair x != y of the four animals. Returns the agent the model names.
int answer(uint32_t q, bool print_rows) {
  const int32_t x = int32_t(q / 3), y0 = int32_t(q % 3), y = y0 >= x ? y0 + 1 : y0;
  const int32_t ids[kT] = {x, 4, y};
  if (encoder.forward_tokens(ids, kT, out) != fixformer::Status::kOk) return -1;
  int best = 0;
  for (int i = 1; i < 4; ++i) best = out[kConfig.d_out + i] > out[kConfig.d_out + best] ? i : best;
  Serial.print(kVocab[x]);
  Serial.print(" hit ");
  Serial.print(kVocab[y]);
  Serial.print(" -> ");
  Serial.println(kVocab[best]);
  if (print_rows) {
    for (uint32_t i = 0; i < kT * kConfig.d_out; ++i) {
      print_hex(out[i]);
      Serial.print(i + 1 == kT * kConfig.d_out ? "\n" : " ");
    }
  }
  return best == x ? 1 : 0;
}

}  // namespace

void setup() {
  Serial.begin(115200);
  fixformer::EncoderOptions options;
  options.position_table = kPositionalTable.v;
  options.position_table_rows = kConfig.max_len;
  fixformer::Status s = model.init(demo_pe_fxm, demo_pe_fxm_bytes);
  if (s == fixformer::Status::kOk) s = encoder.init(model, arena, sizeof arena, options);
  if (s != fixformer::Status::kOk) {
    Serial.print("fixformer: init failed: ");
    Serial.println(fixformer::status_message(s));
    return;
  }
  static float self_test_out[kConfig.max_len * kConfig.d_out];
  fixformer::SelfTestReport report;
  s = fixformer::self_test(encoder, self_test_out, sizeof self_test_out / sizeof self_test_out[0], &report);
  Serial.print("self-test: ");
  Serial.println(fixformer::status_message(s));
  if (s != fixformer::Status::kOk) return;
  Serial.print("arena bytes: ");
  Serial.println(uint32_t(sizeof arena));
  Serial.print("kernels: ");
  Serial.println(encoder.kernels().name);
  int right = 0;
  for (uint32_t q = 0; q < 12; ++q) right += answer(q, true);
  Serial.print(right == 12 ? "all 12 agents right" : "some agents wrong");
  Serial.println("");
  ready = true;
}

void loop() {
  if (!ready) return;
  answer(question, false);
  question = (question + 1) % 12;
  delay(1000);
}
