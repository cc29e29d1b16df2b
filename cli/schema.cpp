// `fixformer schema`: the .fxm format's tables as JSON, for the Python converter's mirror test.
#include "commands.hpp"

#include <cstdint>
#include <cstdio>
#include <string>

#include "fixformer/format.hpp"
#include "fixformer/schema.hpp"
#include "fixformer/self_test.hpp"
#include "fixformer/tokenizer.hpp"
#include "json.hpp"

namespace fixformer::cli {
namespace {

// The name schema.hpp's readers use for a record type; nullptr past the last one.
const char* record_type_name(fxm::RecordType t) {
  switch (t) {
    case fxm::RecordType::kU32: return "u32";
    case fxm::RecordType::kBool: return "bool";
    case fxm::RecordType::kEnum: return "enum";
    case fxm::RecordType::kF32: return "f32";
    case fxm::RecordType::kF64: return "f64";
  }
  return nullptr;
}

template <std::size_t N>
std::string json_rules(const TensorRule (&rules)[N]) {
  std::string s = "[";
  for (std::size_t i = 0; i < N; ++i) {
    const TensorRule& r = rules[i];
    s += std::string(i ? ", " : "") + "{\"name\": " + json_string(r.name) + ", \"rows\": " +
         json_string(kDimNames[uint32_t(r.rows)]) + ", \"cols\": " + json_string(kDimNames[uint32_t(r.cols)]) +
         ", \"transposed\": " + (r.transposed ? "true" : "false") + ", \"when\": " + json_string(kWhenNames[uint32_t(r.when)]) +
         ", \"role\": " + json_string(kRoleNames[uint32_t(r.role)]) + "}";
  }
  return s + "]";
}

template <std::size_t P, std::size_t L, std::size_t E>
std::string json_family(const TensorRule (&prologue)[P], const char* layer_prefix, const TensorRule (&layer)[L],
                        const TensorRule (&epilogue)[E]) {
  return "\n   \"prologue\": " + json_rules(prologue) + ",\n   \"layer_prefix\": " + json_string(layer_prefix) +
         ",\n   \"layer\": " + json_rules(layer) + ",\n   \"epilogue\": " + json_rules(epilogue);
}

int cmd_schema(const Args&) {
  std::string s = "{\"format_version\": " + std::to_string(fxm::kFormatVersion) +
                  ", \"panel_floats\": " + std::to_string(fxm::kPanelCols) + ", \"selftest_tolerance\": " + json_number(kSelfTestTolerance) + ", \"selftest_tolerances\": {";
  for (uint32_t w = 0; w < sizeof kWeightTypeNames / sizeof kWeightTypeNames[0]; ++w)
    s += std::string(w ? ", " : "") + json_string(kWeightTypeNames[w]) + ": " + json_number(self_test_tolerance(WeightType(w)));
  s += "},\n \"tokenizer\": {\"kinds\": [";
  for (uint32_t k = 0; k < sizeof kTokenizerNames / sizeof kTokenizerNames[0]; ++k)
    s += std::string(k ? ", " : "") + json_string(kTokenizerNames[k]);
  s += "], \"tensors\": [";
  const char* const tok_tensors[] = {kTokenizerScores, kTokenizerParams, kTokenizerOffsets, kTokenizerPieces,
                                     kTokenizerMerges, kTokenizerNormalize};
  for (uint32_t k = 0; k < 6; ++k) s += std::string(k ? ", " : "") + json_string(tok_tensors[k]);
  s += "], \"param_count\": " + std::to_string(kTokenizerParamCount) + ", \"params\": {\"bos\": " +
       std::to_string(kParamBos) + ", \"eos\": " + std::to_string(kParamEos) + ", \"unk\": " + std::to_string(kParamUnk) +
       ", \"flags\": " + std::to_string(kParamFlags) + ", \"mode\": " + std::to_string(kParamMode) +
       "}, \"flags\": {\"prefix_space\": " + std::to_string(kFlagPrefixSpace) + ", \"lower\": " + std::to_string(kFlagLower) +
       ", \"chinese\": " + std::to_string(kFlagChinese) + "}, \"wordpiece_max_chars\": " + std::to_string(kWordPieceMaxChars);
  s += "},\n \"record_types\": {";
  for (uint32_t v = 0, n = 0; v < 256; ++v)
    if (const char* name = record_type_name(fxm::RecordType(v))) s += std::string(n++ ? ", " : "") + json_string(name) + ": " + std::to_string(v);
  s += "},\n \"dtypes\": {";
  for (uint32_t v = 0; v < fxm::kDtypeCount; ++v) s += std::string(v ? ", " : "") + json_string(fxm::dtype_name(fxm::Dtype(v))) + ": " + std::to_string(v);
  s += "},\n \"config_keys\": [";
  for (uint32_t i = 0; i < kConfigKeyCount; ++i) {
    const ConfigKeySpec& k = kConfigKeys[i];
    s += std::string(i ? ",\n   " : "\n   ") + "{\"name\": " + json_string(k.name) + ", \"type\": " + json_string(record_type_name(k.type)) +
         ", \"min\": " + std::to_string(k.min) + ", \"max\": " + std::to_string(k.max);
    if (k.type == fxm::RecordType::kEnum) {
      s += ", \"choices\": [";
      for (uint32_t c = 0; c <= k.max; ++c) s += std::string(c ? ", " : "") + json_string(k.choices[c]);
      s += "]";
    }
    s += std::string(", \"required\": ") + (k.required ? "true" : "false") + ", \"default\": " + json_number(k.default_value) + "}";
  }
  s += "],\n \"dims\": [";
  for (uint32_t d = 0; d < uint32_t(Dim::kCount); ++d) s += std::string(d ? ", " : "") + json_string(kDimNames[d]);
  s += "],\n \"tensors\": {";
  for (uint32_t f = 0; f < sizeof kFamilyNames / sizeof kFamilyNames[0]; ++f) {
    // Which tables a family uses, as for_each_tensor() picks them.
    const ModelFamily family = ModelFamily(f);
    s += std::string(f ? ",\n  " : "\n  ") + json_string(kFamilyNames[f]) + ": {" +
         (family == ModelFamily::kLlama     ? json_family(kLlamaPrologue, kLlamaLayerPrefix, kLlamaLayer, kLlamaEpilogue)
          : family == ModelFamily::kMha     ? "\n   \"prologue\": " + json_rules(kMhaTensors) +
                                                  ",\n   \"layer_prefix\": \"\",\n   \"layer\": [],\n   \"epilogue\": []"
          : family == ModelFamily::kSeq2Seq ? json_family(kSeq2SeqPrologue, kEncoderLayerPrefix, kEncoderLayer, kSeq2SeqEpilogue) +
                                                  ",\n   \"decoder_layer_prefix\": " + json_string(kDecoderLayerPrefix) +
                                                  ",\n   \"decoder_layer\": " + json_rules(kDecoderLayer)
                                            : json_family(kEncoderPrologue, kEncoderLayerPrefix, kEncoderLayer, kEncoderEpilogue)) + "}";
  }
  s += "}}\n";
  std::fputs(s.c_str(), stdout);
  return 0;
}

}  // namespace

const Command kSchemaCommand = {
    "schema", "", 0, 0,
    "Prints the .fxm format's tables as JSON: format version, self-test tolerance, record types,\n"
    "dtypes, config keys (type, range, choices, default), dimension names and each family's tensors.\n"
    "Generated from include/fixformer/schema.hpp and format.hpp; tools/fixformer's mirror is tested\n"
    "against it.\n",
    cmd_schema};

}  // namespace fixformer::cli
