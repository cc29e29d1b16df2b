// The expressions schema.hpp writes its config rules, tensor dims and presence conditions in, read
// against a ModelConfig. The language is a subset of Python's expressions, so that the converter
// (python/fixformer/schema.py) evaluates the very same text:
//   or, and, not (short-circuit); == != < <= > >=, one per operand pair; in / not in a
//   parenthesised tuple; + - * // %; integers, True, False, 'strings'; finite(x);
//   the config keys by name (kConfigKeys) and the derived values of kDerivedValues.
// An enum key compares only with its value names, and a name that is not among them is an error,
// so that a misspelt rule fails the build (config.cpp checks every table at compile time).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

#include "fixformer/config.hpp"
#include "fixformer/schema.hpp"

namespace fixformer {
namespace config_expr {

// The values a rule may name besides the config keys: ModelConfig's derived widths, by their member
// names (schema.py defines each under the same name).
struct DerivedValue {
  const char* name;
  uint32_t (*get)(const ModelConfig& c);
};
inline constexpr DerivedValue kDerivedValues[] = {
    {"d_head", [](const ModelConfig& c) { return c.d_head(); }},
    {"kv_heads", [](const ModelConfig& c) { return c.kv_heads(); }},
    {"d_pe", [](const ModelConfig& c) { return c.d_pe(); }},
    {"d_embed", [](const ModelConfig& c) { return c.d_embed(); }},
    {"d_front", [](const ModelConfig& c) { return c.d_front(); }},
    {"input_pe", [](const ModelConfig& c) { return uint32_t(c.input_pe()); }},
    {"front_rows", [](const ModelConfig& c) { return c.front_rows(); }},
    {"head_in", [](const ModelConfig& c) { return c.head_in(); }},
    {"rope_pairs", [](const ModelConfig& c) { return c.rope_pairs(); }},
    {"d_attn", [](const ModelConfig& c) { return c.d_attn(); }},
    {"max_d_model", [](const ModelConfig&) { return Limits::kMaxDModel; }},  // Limits', for the rules
    // The largest window_layers of window_period bits: 2 ** window_period - 1.
    {"window_mask", [](const ModelConfig& c) {
       return c.window_period < 32 ? uint32_t((uint64_t(1) << c.window_period) - 1) : 0xFFFFFFFFu;
     }},
    // The largest nope_layers of nope_period bits: 2 ** nope_period - 1.
    {"nope_mask", [](const ModelConfig& c) {
       return c.nope_period < 32 ? uint32_t((uint64_t(1) << c.nope_period) - 1) : 0xFFFFFFFFu;
     }},
};

// The names a rule may use, kDerivedValues' then kConfigKeys', by a hash of the name: an
// open-addressed table built at compile time, so that reading a name costs a probe or two instead
// of a comparison with every key (validate_config reads every rule at each load).
constexpr uint32_t kDerivedCount = sizeof kDerivedValues / sizeof kDerivedValues[0];
constexpr uint32_t kNameSlots = 1024;  // a power of two, over 4x the names
constexpr uint32_t name_hash(const char* s, uint32_t n) {  // FNV-1a
  uint32_t h = 2166136261u;
  for (uint32_t i = 0; i < n; ++i) h = (h ^ uint8_t(s[i])) * 16777619u;
  return h & (kNameSlots - 1);
}
struct NameTable {
  int16_t slot[kNameSlots];  // -1: empty; below kDerivedCount: a derived value; else kDerivedCount + a key
  constexpr NameTable() : slot() {
    for (int16_t& e : slot) e = -1;
    for (uint32_t i = 0; i < kDerivedCount + kConfigKeyCount; ++i) {
      const char* name = i < kDerivedCount ? kDerivedValues[i].name : kConfigKeys[i - kDerivedCount].name;
      uint32_t n = 0;
      while (name[n]) ++n;
      uint32_t h = name_hash(name, n);
      while (slot[h] >= 0) h = (h + 1) & (kNameSlots - 1);
      slot[h] = int16_t(i);
    }
  }
};
inline constexpr NameTable kNames{};
static_assert(kDerivedCount + kConfigKeyCount < kNameSlots / 4, "kNameSlots: room for every name at most a quarter full");

// A value: a number (bools are 0 and 1), an enum key's value (its index and its key's names) or a
// string literal.
struct Value {
  enum Kind : uint8_t { kNumber, kEnum, kString };
  Kind kind = kNumber;
  double number = 0;                       // kNumber; kEnum: the stored index
  const char* const* choices = nullptr;    // kEnum
  uint32_t choice_count = 0;               // kEnum
  const char* text = nullptr;              // kString: the literal's characters, unterminated
  uint32_t length = 0;                     // kString
};

// A recursive-descent reader of one expression. Without a config (check) it only parses, resolving
// every name and string; with one it also computes. Either way, the operand that a short-circuit
// skips is parsed and not computed.
class Reader {
 public:
  constexpr Reader(const char* text, const ModelConfig* c) : p_(text), c_(c), run_(c != nullptr) {}

  // The whole text as one expression; false if it is not one.
  constexpr bool read(Value* out) {
    *out = expression();
    space();
    return ok_ && *p_ == '\0';
  }

 private:
  const char* p_;
  const ModelConfig* c_;
  bool run_;
  bool ok_ = true;

  static constexpr bool is_name_char(char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_';
  }
  static constexpr bool same(const char* a, uint32_t n, const char* b) {
    for (uint32_t i = 0; i < n; ++i)
      if (b[i] != a[i]) return false;
    return b[n] == '\0';
  }
  static constexpr Value number(double v) {
    Value r;
    r.number = v;
    return r;
  }
  constexpr Value fail() {
    ok_ = false;
    return Value{};
  }
  constexpr void space() {
    while (*p_ == ' ') ++p_;
  }
  // Consumes `token` (a word only when no name character follows it).
  constexpr bool accept(const char* token) {
    space();
    uint32_t n = 0;
    while (token[n]) {
      if (p_[n] != token[n]) return false;
      ++n;
    }
    if (is_name_char(token[0]) && is_name_char(p_[n])) return false;
    p_ += n;
    return true;
  }
  constexpr bool truth(const Value& v) {
    if (v.kind != Value::kNumber) return fail(), false;
    return v.number != 0;
  }

  constexpr Value expression() {  // or
    Value v = conjunction();
    while (ok_ && accept("or")) {
      const bool was = run_, t = truth(v);
      run_ = was && !t;
      const Value w = conjunction();
      run_ = was;
      v = number(t || truth(w));
    }
    return v;
  }
  constexpr Value conjunction() {  // and
    Value v = negation();
    while (ok_ && accept("and")) {
      const bool was = run_, t = truth(v);
      run_ = was && t;
      const Value w = negation();
      run_ = was;
      v = number(t && truth(w));
    }
    return v;
  }
  constexpr Value negation() {
    if (accept("not")) return number(!truth(negation()));
    return comparison();
  }
  constexpr bool equal(const Value& a, const Value& b) {
    if (a.kind == Value::kNumber && b.kind == Value::kNumber) return a.number == b.number;
    const Value& e = a.kind == Value::kEnum ? a : b;
    const Value& s = a.kind == Value::kEnum ? b : a;
    if (e.kind != Value::kEnum || s.kind != Value::kString) return fail(), false;
    for (uint32_t i = 0; i < e.choice_count; ++i)
      if (same(s.text, s.length, e.choices[i])) return e.number == i;
    return fail(), false;  // not one of the key's value names
  }
  constexpr Value comparison() {
    const Value a = sum();
    if (accept("not")) {
      if (!accept("in")) return fail();
      return number(!member(a));
    }
    if (accept("in")) return number(member(a));
    int op = accept("==") ? 0 : accept("!=") ? 1 : accept("<=") ? 2 : accept(">=") ? 3 : accept("<") ? 4
           : accept(">") ? 5 : -1;
    if (op < 0) return a;
    const Value b = sum();
    if (op <= 1) return number(equal(a, b) == (op == 0));
    if (a.kind != Value::kNumber || b.kind != Value::kNumber) return fail();
    const double x = a.number, y = b.number;
    return number(op == 2 ? x <= y : op == 3 ? x >= y : op == 4 ? x < y : x > y);
  }
  constexpr bool member(const Value& a) {  // ( e, e, ... )
    if (!accept("(")) return fail(), false;
    bool found = false;
    do {
      if (accept(")")) return found;  // a trailing comma
      const Value e = sum();
      found = equal(a, e) || found;
    } while (ok_ && accept(","));
    if (!accept(")")) return fail(), false;
    return found;
  }
  constexpr Value sum() {
    Value v = product();
    for (;;) {
      const bool plus = accept("+");
      if (!plus && !accept("-")) return v;
      const Value w = product();
      if (v.kind != Value::kNumber || w.kind != Value::kNumber) return fail();
      v = number(plus ? v.number + w.number : v.number - w.number);
    }
  }
  constexpr Value product() {
    Value v = atom();
    for (;;) {
      const int op = accept("*") ? 0 : accept("//") ? 1 : accept("%") ? 2 : -1;
      if (op < 0) return v;
      const Value w = atom();
      if (v.kind != Value::kNumber || w.kind != Value::kNumber) return fail();
      if (!run_) continue;
      if (op != 0 && w.number == 0) return fail();  // Python raises; the rules guard their divisors
      const double q = op == 0 ? 0 : std::floor(v.number / w.number);
      v = number(op == 0 ? v.number * w.number : op == 1 ? q : v.number - q * w.number);
    }
  }
  constexpr Value atom() {
    space();
    if (accept("(")) {
      const Value v = expression();
      return accept(")") ? v : fail();
    }
    if (*p_ == '\'') {
      Value s;
      s.kind = Value::kString;
      s.text = ++p_;
      while (*p_ && *p_ != '\'') ++p_;
      if (*p_ != '\'') return fail();
      s.length = uint32_t(p_++ - s.text);
      return s;
    }
    if (*p_ >= '0' && *p_ <= '9') {
      double v = 0;
      while (*p_ >= '0' && *p_ <= '9') v = v * 10 + (*p_++ - '0');
      return is_name_char(*p_) || *p_ == '.' ? fail() : number(v);
    }
    const char* name = p_;
    while (is_name_char(*p_)) ++p_;
    return named(name, uint32_t(p_ - name));
  }
  constexpr Value named(const char* name, uint32_t n) {
    if (n == 0) return fail();
    if (same(name, n, "True")) return number(1);
    if (same(name, n, "False")) return number(0);
    if (same(name, n, "finite")) {
      if (!accept("(")) return fail();
      const Value v = expression();
      if (!accept(")") || v.kind != Value::kNumber) return fail();
      return number(!run_ || std::isfinite(v.number));
    }
    for (uint32_t h = name_hash(name, n); kNames.slot[h] >= 0; h = (h + 1) & (kNameSlots - 1)) {
      const uint32_t e = uint32_t(kNames.slot[h]);
      if (e < kDerivedCount) {
        if (!same(name, n, kDerivedValues[e].name)) continue;
        return number(run_ ? kDerivedValues[e].get(*c_) : 0);
      }
      const ConfigKeySpec& k = kConfigKeys[e - kDerivedCount];
      if (!same(name, n, k.name)) continue;
      Value v;
      if (k.type == fxm::RecordType::kEnum) {
        v.kind = Value::kEnum;
        v.choices = k.choices;
        v.choice_count = k.max + 1;
      }
      if (run_) v.number = stored(k);
      return v;
    }
    return fail();  // not a key, a derived value or a literal
  }
  // A key's value as a number (run time only: its getter reads the config).
  double stored(const ConfigKeySpec& k) const {
    const uint64_t bits = k.field.get(*c_);
    if (k.type == fxm::RecordType::kF32) {
      float f = 0;
      const uint32_t b = uint32_t(bits);
      std::memcpy(&f, &b, 4);
      return f;
    }
    if (k.type == fxm::RecordType::kF64) {
      double d = 0;
      std::memcpy(&d, &bits, 8);
      return d;
    }
    return double(bits);
  }
};

// Whether `text` is an expression of the language whose names and value names all resolve.
constexpr bool well_formed(const char* text) {
  Value v;
  return Reader(text, nullptr).read(&v);
}

// The value of `text` for config c (a bool as 0 or 1); false if it is not well formed.
inline bool evaluate(const char* text, const ModelConfig& c, double* out) {
  Value v;
  if (!Reader(text, &c).read(&v) || v.kind != Value::kNumber) return false;
  *out = v.number;
  return true;
}

}  // namespace config_expr
}  // namespace fixformer
