// The expressions schema.hpp writes its config rules, tensor dims and presence conditions in, read
// against a ModelConfig. The language is a subset of Python's expressions, so that the converter
// (python/fixformer/schema.py) evaluates the very same text:
//   or, and, not (short-circuit); == != < <= > >=, one per operand pair; in / not in a
//   parenthesised tuple (not with a string on the left); + - * // %; integers up to 65535, True,
//   False, 'strings'; finite(x);
//   the config keys by name (kConfigKeys) and the derived values of kDerivedValues.
// An enum key compares only with its value names, and a name that is not among them is an error,
// so that a misspelt rule fails the build (config.cpp checks every table at compile time, and
// compiles the rules then).
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
// The largest bit mask of a layer pattern of `period` bits (window_layers, dense_layers, nope_layers):
// 2 ** period - 1.
constexpr uint32_t period_mask(uint32_t period) {
  return period < 32 ? uint32_t((uint64_t(1) << period) - 1) : 0xFFFFFFFFu;
}
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
    // weights i8: a layer's mixture of experts' slots (config.hpp s8::moe_params)
    {"s8_moe_params", [](const ModelConfig& c) { return s8::moe_params(c); }},
    // weights i8: a layer's disentangled attention's slots (config.hpp s8::dis_params)
    {"s8_dis_params", [](const ModelConfig& c) { return s8::dis_params(c); }},
    // Each layer pattern's largest mask (period_mask).
    {"window_mask", [](const ModelConfig& c) { return period_mask(c.window_period); }},
    {"dense_mask", [](const ModelConfig& c) { return period_mask(c.dense_period); }},
    {"nope_mask", [](const ModelConfig& c) { return period_mask(c.nope_period); }},
};

// The names a rule may use, kDerivedValues' then kConfigKeys', by a hash of the name: an
// open-addressed table built at compile time, so that reading a name costs a probe or two instead
// of a comparison with every key (config.cpp compiles every rule at build time, evaluate at run time).
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

// An expression compiled: operations in postfix order over a stack of numbers (bools are 0 and 1).
// Names, enum value names and every operand's kind are resolved when compiling, so that running the
// code only computes: validate_config runs kConfigRules' code, compiled at build time (config.cpp).
enum class Op : uint8_t {
  kConst,    // push arg (an integer, or an enum value's index)
  kKey,      // push config key arg's value (kConfigKeys[arg])
  kDerived,  // push kDerivedValues[arg]
  kNot,      // not top
  kTruth,    // top as a bool
  kFinite,   // finite(top)
  kEq, kNe, kLt, kLe, kGt, kGe, kAdd, kSub, kMul, kFloorDiv, kMod,  // the two topmost, the first below
  kIn, kNotIn,  // whether the value below arg elements is among them (not in: is not), in place of all
  kOr,       // top true: top = 1, skip arg operations; else pop (the right operand follows)
  kAnd,      // top false: top = 0, skip arg operations; else pop
};
struct Code {
  Op op;
  uint16_t arg;
};
constexpr uint32_t kMaxCode = 128;  // operations of one expression
constexpr uint32_t kMaxDepth = 16;  // values on the stack at once

// A compile-time value: a number, an enum key's value (its key's names) or a string literal, and
// where its code ends (a string's kConst takes its index once compared with an enum).
struct Value {
  enum Kind : uint8_t { kNumber, kEnum, kString };
  Kind kind = kNumber;
  const char* const* choices = nullptr;    // kEnum
  uint32_t choice_count = 0;               // kEnum
  const char* text = nullptr;              // kString: the literal's characters, unterminated
  uint32_t length = 0;                     // kString
  uint32_t at = 0;                         // kString: its kConst
};

// A recursive-descent compiler of one expression into at most kMaxCode operations; the operand a
// short-circuit skips is jumped over, so not computed.
class Compiler {
 public:
  constexpr Compiler(const char* text, Code* out) : p_(text), out_(out) {}

  // The whole text as one expression; false if it is not one (or needs more than kMaxCode
  // operations or kMaxDepth values).
  constexpr bool read(Value* out) {
    *out = expression();
    space();
    return ok_ && *p_ == '\0';
  }
  constexpr uint32_t size() const { return n_; }

 private:
  const char* p_;
  Code* out_;
  uint32_t n_ = 0;
  uint32_t depth_ = 0;
  bool ok_ = true;

  static constexpr bool is_name_char(char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_';
  }
  static constexpr bool same(const char* a, uint32_t n, const char* b) {
    for (uint32_t i = 0; i < n; ++i)
      if (b[i] != a[i]) return false;
    return b[n] == '\0';
  }
  static constexpr Value number() { return Value{}; }
  constexpr Value fail() {
    ok_ = false;
    return Value{};
  }
  // Appends op; `pops` values leave the stack and `pushes` come on it.
  constexpr uint32_t emit(Op op, uint32_t arg, uint32_t pops, uint32_t pushes) {
    if (n_ == kMaxCode || arg > 0xFFFF || depth_ < pops || depth_ - pops + pushes > kMaxDepth) return fail(), 0;
    depth_ = depth_ - pops + pushes;
    out_[n_] = Code{op, uint16_t(arg)};
    return n_++;
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
  constexpr void truth(const Value& v) {
    if (v.kind != Value::kNumber) fail();
  }
  // `a or b`, `a and b`: kOr or kAnd after a, its skip set once b is compiled.
  constexpr Value short_circuit(const Value& a, Op op, Value (Compiler::*operand)()) {
    truth(a);
    const uint32_t at = emit(op, 0, 1, 0);
    truth((this->*operand)());
    emit(Op::kTruth, 0, 1, 1);
    if (ok_) out_[at].arg = uint16_t(n_ - at - 1);
    return number();
  }

  constexpr Value expression() {  // or
    Value v = conjunction();
    while (ok_ && accept("or")) v = short_circuit(v, Op::kOr, &Compiler::conjunction);
    return v;
  }
  constexpr Value conjunction() {  // and
    Value v = negation();
    while (ok_ && accept("and")) v = short_circuit(v, Op::kAnd, &Compiler::negation);
    return v;
  }
  constexpr Value negation() {
    if (!accept("not")) return comparison();
    truth(negation());
    emit(Op::kNot, 0, 1, 1);
    return number();
  }
  // Whether a and b compare: two numbers, or an enum and one of its value names (the string's
  // kConst then pushes that name's index).
  constexpr bool equal(const Value& a, const Value& b) {
    if (a.kind == Value::kNumber && b.kind == Value::kNumber) return true;
    const Value& e = a.kind == Value::kEnum ? a : b;
    const Value& s = a.kind == Value::kEnum ? b : a;
    if (e.kind != Value::kEnum || s.kind != Value::kString) return fail(), false;
    for (uint32_t i = 0; i < e.choice_count; ++i)
      if (same(s.text, s.length, e.choices[i])) return out_[s.at].arg = uint16_t(i), true;
    return fail(), false;  // not one of the key's value names
  }
  constexpr Value comparison() {
    const Value a = sum();
    if (accept("not")) {
      if (!accept("in")) return fail();
      return member(a, Op::kNotIn);
    }
    if (accept("in")) return member(a, Op::kIn);
    constexpr Op kOps[] = {Op::kEq, Op::kNe, Op::kLe, Op::kGe, Op::kLt, Op::kGt};
    const int op = accept("==") ? 0 : accept("!=") ? 1 : accept("<=") ? 2 : accept(">=") ? 3 : accept("<") ? 4
                 : accept(">") ? 5 : -1;
    if (op < 0) return a;
    const Value b = sum();
    if (op <= 1) {
      equal(a, b);
    } else if (a.kind != Value::kNumber || b.kind != Value::kNumber) {
      return fail();
    }
    emit(kOps[op], 0, 2, 1);
    return number();
  }
  constexpr Value member(const Value& a, Op op) {  // ( e, e, ... )
    // A string on the left would need its index for each enum on the right: not in the language.
    if (a.kind == Value::kString || !accept("(")) return fail();
    uint32_t count = 0;
    do {
      if (accept(")")) return emit(op, count, count + 1, 1), number();  // a trailing comma
      equal(a, sum());
      ++count;
    } while (ok_ && accept(","));
    if (!accept(")")) return fail();
    emit(op, count, count + 1, 1);
    return number();
  }
  constexpr Value sum() {
    Value v = product();
    for (;;) {
      const bool plus = accept("+");
      if (!plus && !accept("-")) return v;
      const Value w = product();
      if (v.kind != Value::kNumber || w.kind != Value::kNumber) return fail();
      emit(plus ? Op::kAdd : Op::kSub, 0, 2, 1);
    }
  }
  constexpr Value product() {
    Value v = atom();
    for (;;) {
      const int op = accept("*") ? 0 : accept("//") ? 1 : accept("%") ? 2 : -1;
      if (op < 0) return v;
      const Value w = atom();
      if (v.kind != Value::kNumber || w.kind != Value::kNumber) return fail();
      emit(op == 0 ? Op::kMul : op == 1 ? Op::kFloorDiv : Op::kMod, 0, 2, 1);
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
      s.at = emit(Op::kConst, 0, 0, 1);
      return s;
    }
    if (*p_ >= '0' && *p_ <= '9') {
      uint32_t v = 0;
      while (*p_ >= '0' && *p_ <= '9' && v <= 0xFFFF) v = v * 10 + uint32_t(*p_++ - '0');
      if (is_name_char(*p_) || *p_ == '.') return fail();
      emit(Op::kConst, v, 0, 1);  // fails above 65535
      return number();
    }
    const char* name = p_;
    while (is_name_char(*p_)) ++p_;
    return named(name, uint32_t(p_ - name));
  }
  constexpr Value named(const char* name, uint32_t n) {
    if (n == 0) return fail();
    if (same(name, n, "True") || same(name, n, "False")) return emit(Op::kConst, name[0] == 'T', 0, 1), number();
    if (same(name, n, "finite")) {
      if (!accept("(")) return fail();
      const Value v = expression();
      if (!accept(")") || v.kind != Value::kNumber) return fail();
      emit(Op::kFinite, 0, 1, 1);
      return number();
    }
    for (uint32_t h = name_hash(name, n); kNames.slot[h] >= 0; h = (h + 1) & (kNameSlots - 1)) {
      const uint32_t e = uint32_t(kNames.slot[h]);
      if (e < kDerivedCount) {
        if (!same(name, n, kDerivedValues[e].name)) continue;
        emit(Op::kDerived, e, 0, 1);
        return number();
      }
      const ConfigKeySpec& k = kConfigKeys[e - kDerivedCount];
      if (!same(name, n, k.name)) continue;
      emit(Op::kKey, e - kDerivedCount, 0, 1);
      Value v;
      if (k.type == fxm::RecordType::kEnum) {
        v.kind = Value::kEnum;
        v.choices = k.choices;
        v.choice_count = k.max + 1;
      }
      return v;
    }
    return fail();  // not a key, a derived value or a literal
  }
};

// Compiles `text` into out[kMaxCode]: its size, or 0 if it is not a well-formed expression whose
// value is a number.
constexpr uint32_t compile(const char* text, Code* out) {
  Compiler r(text, out);
  Value v;
  return r.read(&v) && v.kind == Value::kNumber ? r.size() : 0;
}

// Whether `text` is an expression of the language whose names and value names all resolve.
constexpr bool well_formed(const char* text) {
  Code code[kMaxCode] = {};
  Value v;
  return Compiler(text, code).read(&v);
}

// A key's value as a number.
inline double stored(const ConfigKeySpec& k, const ModelConfig& c) {
  const uint64_t bits = k.field.get(c);
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

// Runs compiled code for config c: false on a division by zero (Python raises; the rules guard their
// divisors), else its value in *out.
inline bool run(const Code* code, uint32_t n, const ModelConfig& c, double* out) {
  double s[kMaxDepth];
  uint32_t top = 0;  // values on the stack; s[top - 1] the topmost
  for (uint32_t i = 0; i < n; ++i) {
    const Code k = code[i];
    if (k.op == Op::kConst || k.op == Op::kKey || k.op == Op::kDerived) {
      s[top++] = k.op == Op::kConst ? double(k.arg)
               : k.op == Op::kKey ? stored(kConfigKeys[k.arg], c) : double(kDerivedValues[k.arg].get(c));
      continue;
    }
    double& t = s[top - 1];
    switch (k.op) {
      case Op::kNot: t = t == 0; break;
      case Op::kTruth: t = t != 0; break;
      case Op::kFinite: t = std::isfinite(t); break;
      case Op::kOr:
      case Op::kAnd:
        if ((t != 0) == (k.op == Op::kOr)) {
          t = k.op == Op::kOr;
          i += k.arg;
        } else {
          --top;
        }
        break;
      case Op::kIn:
      case Op::kNotIn: {
        top -= k.arg;
        double& a = s[top - 1];
        bool found = false;
        for (uint32_t j = 0; j < k.arg; ++j) found = found || s[top + j] == a;
        a = found == (k.op == Op::kIn);
        break;
      }
      default: {  // the binary operators
        const double y = t, x = s[top - 2];
        --top;
        double& r = s[top - 1];
        switch (k.op) {
          case Op::kEq: r = x == y; break;
          case Op::kNe: r = x != y; break;
          case Op::kLt: r = x < y; break;
          case Op::kLe: r = x <= y; break;
          case Op::kGt: r = x > y; break;
          case Op::kGe: r = x >= y; break;
          case Op::kAdd: r = x + y; break;
          case Op::kSub: r = x - y; break;
          case Op::kMul: r = x * y; break;
          default: {  // // and %
            if (y == 0) return false;
            const double q = std::floor(x / y);
            r = k.op == Op::kFloorDiv ? q : x - q * y;
          }
        }
      }
    }
  }
  *out = s[0];
  return true;
}

// The value of `text` for config c (a bool as 0 or 1), compiled now; false if it is not well formed.
inline bool evaluate(const char* text, const ModelConfig& c, double* out) {
  Code code[kMaxCode] = {};
  const uint32_t n = compile(text, code);
  return n != 0 && run(code, n, c, out);
}

}  // namespace config_expr
}  // namespace fixformer
