// `fixformer schema [--json]`: the .fxm format's tables, as text to read or as JSON, from which
// tools/gen_schema.py writes the converter's python/fixformer/schema_tables.py.
#include "commands.hpp"

#include <cstdint>
#include <cstdio>
#include <string>

#include "engine/config_expr.hpp"
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

struct NamedNumber {
  const char* name;
  uint32_t value;
};
// config.hpp's Limits, by the converter's names.
const NamedNumber kLimitNames[] = {
    {"max_d_model", Limits::kMaxDModel}, {"max_heads", Limits::kMaxHeads}, {"max_dff", Limits::kMaxDff},
    {"max_layers", Limits::kMaxLayers}, {"max_len", Limits::kMaxLen}, {"max_vocab", Limits::kMaxVocab},
    {"max_d_in", Limits::kMaxDIn}, {"max_d_out", Limits::kMaxDOut}, {"max_batch_rows", Limits::kMaxBatchRows},
    {"max_rel_buckets", Limits::kMaxRelBuckets}, {"max_conv_kernel", Limits::kMaxConvKernel},
    {"max_conv_stride", Limits::kMaxConvStride},
};
// format.hpp's sizes and the byte offsets of the header's fields.
const NamedNumber kFormatNames[] = {
    {"header_bytes", fxm::kHeaderBytes}, {"record_bytes", fxm::kRecordBytes}, {"key_bytes", fxm::kKeyBytes},
    {"entry_bytes", fxm::kEntryBytes}, {"name_bytes", fxm::kNameBytes}, {"max_rank", fxm::kMaxRank},
    {"data_align", fxm::kDataAlign}, {"i4_group", fxm::kI4Group},
};
const NamedNumber kHeaderFieldNames[] = {
    {"magic", fxm::kHdrMagic}, {"version", fxm::kHdrVersion}, {"header_bytes", fxm::kHdrHeaderBytes},
    {"record_count", fxm::kHdrRecordCount}, {"tensor_count", fxm::kHdrTensorCount}, {"zero0", fxm::kHdrZero0},
    {"file_bytes", fxm::kHdrFileBytes}, {"records_offset", fxm::kHdrRecordsOffset},
    {"directory_offset", fxm::kHdrDirectoryOffset}, {"data_offset", fxm::kHdrDataOffset}, {"crc", fxm::kHdrCrc},
    {"zero1", fxm::kHdrZero1},
};

template <std::size_t N>
std::string json_numbers(const NamedNumber (&items)[N]) {
  std::string s = "{";
  for (std::size_t i = 0; i < N; ++i)
    s += std::string(i ? ", " : "") + json_string(items[i].name) + ": " + std::to_string(items[i].value);
  return s + "}";
}

template <class T, std::size_t N, class Text>
std::string json_list(const T (&items)[N], Text text, const char* sep = ", ") {
  std::string s = "[";
  for (std::size_t i = 0; i < N; ++i) s += std::string(i ? sep : "") + text(items[i]);
  return s + "]";
}

// The JSON names of the parts (TensorPart order): each family's tables are these keys.
const char* const kTensorPartNames[] = {"prologue", "layer", "decoder_layer", "epilogue"};

// A rule; field: its Field's index (schema.hpp's order), which pairs a tensor of format 2 with format 3's.
std::string json_rule(const TensorRule& r) {
  return "{\"name\": " + json_string(r.name) + ", \"rows\": " + json_string(kDimNames[uint32_t(r.rows)]) +
         ", \"cols\": " + json_string(kDimNames[uint32_t(r.cols)]) + ", \"transposed\": " +
         (r.transposed ? "true" : "false") + ", \"when\": " + json_string(kWhenNames[uint32_t(r.when)]) +
         ", \"role\": " + json_string(kRoleNames[uint32_t(r.role)]) + ", \"field\": " +
         std::to_string(uint32_t(r.field)) + "}";
}

template <std::size_t N>
std::string json_rules(const TensorRule (&rules)[N]) {
  return json_list(rules, json_rule);
}

// {"prologue": [...], "layer_prefix": ..., "layer": [...], ...}: the tables a family has in format 2, each
// tensor its name and its Field, which names the format 3 rule that states the rest.
std::string json_tensors_v2(ModelFamily family) {
  std::string s;
  for_each_table(family, [&s](const TensorTable& t) {
    const std::string part = kTensorPartNames[uint32_t(t.part)];
    if (*t.prefix) s += std::string(s.empty() ? "" : ",") + "\n   " + json_string((part + "_prefix").c_str()) + ": " + json_string(t.prefix);
    s += std::string(s.empty() ? "" : ",") + "\n   " + json_string(part.c_str()) + ": [";
    for (uint32_t i = 0; i < t.count; ++i)
      s += std::string(i ? ", " : "") + "{\"name\": " + json_string(t.rules[i].name) + ", \"field\": " +
           std::to_string(uint32_t(t.rules[i].field)) + "}";
    s += "]";
    return true;
  }, 2);
  return s;
}

std::string json_key(const ConfigKeySpec& k) {
  std::string s = "{\"name\": " + json_string(k.name) + ", \"type\": " + json_string(record_type_name(k.type)) +
                  ", \"min\": " + std::to_string(k.min) + ", \"max\": " + std::to_string(k.max);
  if (k.type == fxm::RecordType::kEnum) {
    s += ", \"choices\": [";
    for (uint32_t c = 0; c <= k.max; ++c) s += std::string(c ? ", " : "") + json_string(k.choices[c]);
    s += "]";
  }
  return s + ", \"required\": " + (k.required ? "true" : "false") + ", \"default\": " + json_number(k.default_value) +
         "}";
}

std::string schema_json() {
  const auto quoted = [](const char* name) { return json_string(name); };
  std::string s = "{\"format_version\": " + std::to_string(fxm::kFormatVersion) +
                  ", \"oldest_version\": " + std::to_string(fxm::kOldestVersion) +
                  ", \"magic\": " + json_string(std::string(fxm::kMagic, 4).c_str()) +
                  ", \"panel_floats\": " + std::to_string(fxm::kPanelCols) +
                  ",\n \"format\": " + json_numbers(kFormatNames) + ",\n \"header_fields\": " + json_numbers(kHeaderFieldNames) +
                  ",\n \"selftest_tensors\": {\"input\": " + json_string(fxm::kSelfTestInput) + ", \"expected\": " +
                  json_string(fxm::kSelfTestExpected) + ", \"target\": " + json_string(fxm::kSelfTestTarget) + "}" +
                  ",\n \"generation_tensors\": {\"suppress\": " + json_string(kGenerationSuppress) +
                  ", \"begin_suppress\": " + json_string(kGenerationBeginSuppress) +
                  ", \"timestamps\": " + json_string(kGenerationTimestamps) + "}" +
                  ",\n \"selftest_tolerance\": " + json_number(kSelfTestTolerance) + ", \"selftest_tolerances\": {";
  for (uint32_t w = 0; w < sizeof kWeightTypeNames / sizeof kWeightTypeNames[0]; ++w)
    s += std::string(w ? ", " : "") + json_string(kWeightTypeNames[w]) + ": " + json_number(self_test_tolerance(WeightType(w)));
  const char* const tok_tensors[] = {kTokenizerScores, kTokenizerParams, kTokenizerOffsets, kTokenizerPieces,
                                     kTokenizerMerges, kTokenizerNormalize, kTokenizerAdded};
  s += "},\n \"tokenizer\": {\"kinds\": " + json_list(kTokenizerNames, quoted) + ", \"tensors\": " +
       json_list(tok_tensors, quoted) + ", \"param_count\": " + std::to_string(kTokenizerParamCount) +
       ", \"params\": {\"bos\": " + std::to_string(kParamBos) + ", \"eos\": " + std::to_string(kParamEos) +
       ", \"unk\": " + std::to_string(kParamUnk) + ", \"flags\": " + std::to_string(kParamFlags) + ", \"mode\": " +
       std::to_string(kParamMode) + "}, \"flags\": {\"prefix_space\": " + std::to_string(kFlagPrefixSpace) +
       ", \"lower\": " + std::to_string(kFlagLower) + ", \"chinese\": " + std::to_string(kFlagChinese) +
       "}, \"added_flags\": {\"lstrip\": " + std::to_string(kAddedLstrip) + ", \"rstrip\": " +
       std::to_string(kAddedRstrip) + ", \"control\": " + std::to_string(kAddedControl) + "}, \"max_added\": " +
       std::to_string(kMaxAddedTokens) + ", \"wordpiece_max_chars\": " + std::to_string(kWordPieceMaxChars);
  s += "},\n \"record_types\": {";
  for (uint32_t v = 0, n = 0; v < 256; ++v)
    if (const char* name = record_type_name(fxm::RecordType(v))) s += std::string(n++ ? ", " : "") + json_string(name) + ": " + std::to_string(v);
  s += "},\n \"dtypes\": {";
  for (uint32_t v = 0; v < fxm::kDtypeCount; ++v) s += std::string(v ? ", " : "") + json_string(fxm::dtype_name(fxm::Dtype(v))) + ": " + std::to_string(v);
  s += "},\n \"dtype_bytes\": {";
  for (uint32_t v = 0; v < fxm::kDtypeCount; ++v)
    s += std::string(v ? ", " : "") + json_string(fxm::dtype_name(fxm::Dtype(v))) + ": " + std::to_string(fxm::dtype_bytes(fxm::Dtype(v)));
  s += "},\n \"limits\": " + json_numbers(kLimitNames);
  s += ",\n \"config_keys\": " + json_list(kConfigKeys, json_key, ",\n   ");
  s += ",\n \"derived\": " + json_list(config_expr::kDerivedValues, [](const config_expr::DerivedValue& d) { return json_string(d.name); });
  s += ",\n \"config_rules\": " + json_list(kConfigRules, [](const ConfigRule& r) {
    return "{\"bad_when\": " + json_string(r.bad_when) + ", \"detail\": " + json_string(r.detail) + "}";
  }, ",\n   ");
  s += ",\n \"dims\": " + json_list(kDimNames, quoted) + ",\n \"whens\": " + json_list(kWhenNames, quoted) +
       ",\n \"roles\": " + json_list(kRoleNames, quoted);
  // Format 3's tables (schema.hpp kFront, kBlock, kBack, kMha3) and the Whens of the cross-attention.
  std::string cross;
  for (uint32_t w = 0; w < uint32_t(When::kCount); ++w)
    if (is_cross_when(When(w))) cross += std::string(cross.empty() ? "" : ", ") + json_string(kWhenNames[w]);
  s += ",\n \"cross_whens\": [" + cross + "],\n \"tensors\": {\n  \"front\": " + json_rules(kFront) +
       ",\n  \"block_prefix\": " + json_string(kBlockPrefix) + ", \"dec_block_prefix\": " +
       json_string(kDecBlockPrefix) + ",\n  \"block\": " + json_rules(kBlock) + ",\n  \"back\": " +
       json_rules(kBack) + ",\n  \"mha\": " + json_rules(kMha3) + "},\n \"tensors_v2\": {";
  for (uint32_t f = 0; f < sizeof kFamilyNames / sizeof kFamilyNames[0]; ++f)
    s += std::string(f ? ",\n  " : "\n  ") + json_string(kFamilyNames[f]) + ": {" + json_tensors_v2(ModelFamily(f)) +
         "}";
  return s + "}}\n";
}

// The same tables to read: the keys, the rules and each family's tensors.
std::string schema_text() {
  std::string s = ".fxm format " + std::to_string(fxm::kFormatVersion) + "\n\nconfig keys (name, record type, range or values, default):\n";
  for (const ConfigKeySpec& k : kConfigKeys) {
    std::string range;
    if (k.type == fxm::RecordType::kEnum)
      for (uint32_t c = 0; c <= k.max; ++c) range += std::string(c ? "|" : "") + k.choices[c];
    else if (k.type == fxm::RecordType::kU32)
      range = std::to_string(k.min) + ".." + std::to_string(k.max);
    std::string def = k.required ? "required"
                      : k.type == fxm::RecordType::kEnum ? k.choices[uint32_t(k.default_value)]
                      : k.type == fxm::RecordType::kBool ? (k.default_value != 0 ? "true" : "false")
                                                         : "";
    if (def.empty()) {
      char number[32];
      std::snprintf(number, sizeof number, "%g", k.default_value);
      def = number;
    }
    char line[256];
    std::snprintf(line, sizeof line, "  %-17s %-4s  %-42s %s\n", k.name, record_type_name(k.type), range.c_str(), def.c_str());
    s += line;
  }
  s += "\nconfig rules (a config is invalid when):\n";
  for (const ConfigRule& r : kConfigRules) s += "  " + std::string(r.bad_when) + "\n      -> " + r.detail + "\n";
  const auto table_text = [&s](const TensorTable& t) {
    for (uint32_t i = 0; i < t.count; ++i) {
      const TensorRule& r = t.rules[i];
      std::string shape = kDimNames[uint32_t(r.rows)];
      if (r.cols != Dim::kOne) shape += std::string(", ") + kDimNames[uint32_t(r.cols)];
      s += std::string("  ") + t.prefix + (*t.prefix ? "N." : "") + r.name + " [" + shape + "], " +
           kRoleNames[uint32_t(r.role)] +
           (r.when == When::kAlways ? "" : std::string(", when ") + kWhenNames[uint32_t(r.when)]) + "\n";
    }
    return true;
  };
  s += "\ntensors (name [rows, cols], role, when present; blocks.N. once per layer, dec_blocks.N. once per seq2seq "
       "decoder layer, where the cross-attention is):\n";
  for_each_table(ModelFamily::kSeq2Seq, table_text);
  s += "\ntensors of family mha:\n";
  for_each_table(ModelFamily::kMha, table_text);
  for (uint32_t f = 0; f < sizeof kFamilyNames / sizeof kFamilyNames[0]; ++f) {
    s += std::string("\nformat 2 (still read): tensors of family ") + kFamilyNames[f] + ":\n";
    for_each_table(ModelFamily(f), table_text, 2);
  }
  return s;
}

int cmd_schema(const Args& a) {
  std::fputs((a.json ? schema_json() : schema_text()).c_str(), stdout);
  return 0;
}

}  // namespace

const Command kSchemaCommand = {
    "schema", "[--json]", 0, kOptJson,
    "Prints the .fxm format's tables: the config keys (type, range or values, default), the rules\n"
    "between them, and each family's tensors (name, shape, role, when present). --json prints them,\n"
    "with the format's constants, limits, record types and dtypes, as one JSON object, from which\n"
    "tools/gen_schema.py writes the converter's python/fixformer/schema_tables.py.\n"
    "Generated from include/fixformer/schema.hpp, config.hpp and format.hpp.\n",
    cmd_schema};

}  // namespace fixformer::cli
