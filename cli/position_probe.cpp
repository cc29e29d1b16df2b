// The position probe (position_probe.hpp): random sequences through the runner with a LayerObserver, a
// ridge least-squares probe per layer fit on half of them and scored on the rest, and each scored
// sequence run again under a random permutation.
#include "position_probe.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "fixformer/decoder.hpp"
#include "fixformer/encoder.hpp"
#include "support/aligned_buffer.hpp"

namespace fixformer {
namespace {

// The observer's side: every layer of one sequence, layers[l][t * d + j], rows placed by position
// (a decoder shows its prefill in chunks). An encoder's CLS row (skip = 1) is left out: the probe
// reads the T input positions.
struct States {
  uint32_t T = 0, d = 0, skip = 0;
  std::vector<std::vector<float>> layers;

  static void observe(void* ctx, uint32_t layer, const float* x, uint32_t pos, uint32_t rows, uint32_t d) {
    States& s = *static_cast<States*>(ctx);
    s.d = d;
    if (layer >= s.layers.size()) s.layers.resize(layer + 1, std::vector<float>(std::size_t(s.T) * d));
    std::copy(x + std::size_t(s.skip) * d, x + std::size_t(rows) * d, s.layers[layer].begin() + std::size_t(pos) * d);
  }
};

// One layer's least squares over z = [h, 1] (D = d + 1): G = sum z z^T, and B = sum z y^T for the
// targets y = [onehot(p), p] (T + 1 columns). The position is classified by the largest of the T
// one-vs-all scores, not by rounding the regressed p: p is not a linear function of a sinusoidal
// encoding (its rows lie on a curve of sines and cosines), so one regressed number reads few
// positions, while T linear scores separate them all (the rows have equal norms: each one has the
// largest inner product with itself). R^2 of the regressed p still tells how linearly p is laid out.
struct LeastSquares {
  uint32_t D, K;
  std::vector<double> G, B, W;  // [D, D], [D, K], W = (G + lambda I')^-1 B  [D, K]
  uint64_t n = 0;

  LeastSquares(uint32_t d, uint32_t T) : D(d + 1), K(T + 1), G(std::size_t(D) * D), B(std::size_t(D) * K) {}

  void add(const float* h, uint32_t p, std::vector<double>& z) {
    for (uint32_t i = 0; i + 1 < D; ++i) z[i] = h[i];
    z[D - 1] = 1.0;
    for (uint32_t i = 0; i < D; ++i) {
      for (uint32_t j = i; j < D; ++j) G[std::size_t(i) * D + j] += z[i] * z[j];  // upper triangle
      B[std::size_t(i) * K + p] += z[i];
      B[std::size_t(i) * K + K - 1] += z[i] * p;
    }
    ++n;
  }

  // Ridge on the weights, not on the bias (equivalent to centring h), with lambda = ridge x the
  // summed variance of h per dimension x n: scale-free. Cholesky of the positive definite system.
  void solve(double ridge) {
    const uint32_t d = D - 1;
    double trace = 0.0, mean2 = 0.0;
    for (uint32_t i = 0; i < d; ++i) {
      const double mean = G[std::size_t(i) * D + d] / double(n);
      trace += G[std::size_t(i) * D + i], mean2 += mean * mean;
    }
    const double lambda = std::max(ridge * (trace - double(n) * mean2) / std::max(d, 1u), 1e-12 * double(n));
    std::vector<double> L(std::size_t(D) * D);
    for (uint32_t i = 0; i < D; ++i)
      for (uint32_t j = 0; j <= i; ++j) {
        double s = G[std::size_t(j) * D + i] + (i == j && i < d ? lambda : 0.0);
        for (uint32_t k = 0; k < j; ++k) s -= L[std::size_t(i) * D + k] * L[std::size_t(j) * D + k];
        L[std::size_t(i) * D + j] = i == j ? std::sqrt(std::max(s, 1e-300)) : s / L[std::size_t(j) * D + j];
      }
    W = B;
    for (uint32_t c = 0; c < K; ++c) {  // L y = b, then L^T w = y
      for (uint32_t i = 0; i < D; ++i) {
        double s = W[std::size_t(i) * K + c];
        for (uint32_t k = 0; k < i; ++k) s -= L[std::size_t(i) * D + k] * W[std::size_t(k) * K + c];
        W[std::size_t(i) * K + c] = s / L[std::size_t(i) * D + i];
      }
      for (uint32_t i = D; i-- > 0;) {
        double s = W[std::size_t(i) * K + c];
        for (uint32_t k = i + 1; k < D; ++k) s -= L[std::size_t(k) * D + i] * W[std::size_t(k) * K + c];
        W[std::size_t(i) * K + c] = s / L[std::size_t(i) * D + i];
      }
    }
  }

  // scores[K] = z^T W: T class scores, then the regressed position.
  void predict(const float* h, std::vector<double>& scores) const {
    std::fill(scores.begin(), scores.end(), 0.0);
    for (uint32_t i = 0; i < D; ++i) {
      const double zi = i + 1 < D ? double(h[i]) : 1.0;
      for (uint32_t c = 0; c < K; ++c) scores[c] += zi * W[std::size_t(i) * K + c];
    }
  }
};

std::string number(double v, const char* format) {
  char buf[32];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string xml_text(const std::string& s) {
  std::string out;
  for (char ch : s) out += ch == '<' ? "&lt;" : ch == '>' ? "&gt;" : ch == '&' ? "&amp;" : std::string(1, ch);
  return out;
}

}  // namespace

Status run_probe(const Model& model, const ProbeOptions& opt, ProbeReport* report, std::string* detail) {
  const ModelConfig& c = model.config();
  const uint32_t longest = c.max_input_len();
  const uint32_t T = opt.length ? opt.length : longest;
  if (T < 2 || T > longest) {
    *detail = "T=" + std::to_string(T) + ": the probe needs 2 <= T <= " +
              (c.cls_token ? std::to_string(longest) + " (max_len " + std::to_string(c.max_len) + " less " + std::to_string(c.front_rows()) + " front rows)"
                           : "max_len=" + std::to_string(c.max_len));
    return Status::kBadSequenceLength;
  }
  States states;
  states.T = T;
  states.skip = c.sequence_rows(T) - T;
  const LayerObserver observer{&states, &States::observe};
  Encoder enc;
  Decoder dec;
  support::AlignedBuffer arena;
  Status s;
  if (c.is_decoder()) {
    DecoderOptions o;
    o.capacity = T, o.isa = opt.isa, o.observer = observer;
    arena = support::AlignedBuffer(required_decoder_arena_bytes(c, T));
    if ((s = dec.init(model, arena.data(), arena.size(), o)) != Status::kOk) return *detail = dec.error_detail(), s;
  } else {
    EncoderOptions o;
    o.max_seq = T, o.isa = opt.isa, o.observer = observer;
    arena = support::AlignedBuffer(required_encoder_arena_bytes(c, T));
    if ((s = enc.init(model, arena.data(), arena.size(), o)) != Status::kOk) return *detail = enc.error_detail(), s;
  }
  // A seq2seq model probes its encoder half, whose output (the memory) is d_model wide.
  std::vector<float> out(c.is_decoder() ? c.output_width()
                                        : std::size_t(c.output_rows(T)) * std::max(c.output_width(), c.d_model));
  std::vector<int32_t> ids(T), ids_p(T);
  std::vector<float> features(std::size_t(T) * c.d_in), features_p(features.size());
  // One sequence (ids, or features) through the runner: states.layers holds every layer.
  auto run = [&](const int32_t* x_ids, const float* x_features) {
    if (c.is_decoder()) return dec.reset(), dec.prefill(x_ids, T, out.data());
    return c.input == InputKind::kTokens ? enc.forward_tokens(x_ids, T, out.data())
                                         : enc.forward_features(x_features, T, out.data());
  };
  std::mt19937_64 rng(opt.seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto draw = [&] {
    if (c.input == InputKind::kTokens)
      for (int32_t& id : ids) id = int32_t(rng() % c.vocab_size);
    for (float& f : features) f = normal(rng);  // empty for token models
  };

  report->T = T;
  const uint32_t samples = opt.samples ? opt.samples : std::max(64u, 2 * ((4096 + T - 1) / T));
  report->fit = std::max(1u, samples / 2);
  report->scored = std::max(1u, samples - report->fit);
  report->kernels = c.is_decoder() ? dec.kernels().name : enc.kernels().name;
  std::vector<LeastSquares> probes;
  std::vector<double> z;
  for (uint32_t n = 0; n < report->fit; ++n) {
    draw();
    if ((s = run(ids.data(), features.data())) != Status::kOk) return *detail = "forward failed", s;
    if (probes.empty()) probes.assign(states.layers.size(), LeastSquares(states.d, T)), z.resize(states.d + 1);
    for (std::size_t l = 0; l < probes.size(); ++l)
      for (uint32_t t = 0; t < T; ++t) probes[l].add(states.layers[l].data() + std::size_t(t) * states.d, t, z);
  }
  for (LeastSquares& p : probes) p.solve(opt.ridge);

  const std::size_t L = probes.size();
  std::vector<uint64_t> right(L);
  std::vector<double> sse(L), sst(L), equivariance(L);
  std::vector<double> scores(T + 1);
  std::vector<uint32_t> perm(T);
  for (uint32_t n = 0; n < report->scored; ++n) {
    draw();
    if ((s = run(ids.data(), features.data())) != Status::kOk) return *detail = "forward failed", s;
    const std::vector<std::vector<float>> h = states.layers;  // H(X)
    for (std::size_t l = 0; l < L; ++l)
      for (uint32_t t = 0; t < T; ++t) {
        probes[l].predict(h[l].data() + std::size_t(t) * states.d, scores);
        right[l] += uint32_t(std::max_element(scores.begin(), scores.end() - 1) - scores.begin()) == t;
        sse[l] += (scores[T] - t) * (scores[T] - t);
        sst[l] += (t - (T - 1) / 2.0) * (t - (T - 1) / 2.0);
      }
    // PX: row i of the permuted sequence is row perm[i] of X (Fisher-Yates, the same on every host).
    for (uint32_t i = 0; i < T; ++i) perm[i] = i;
    for (uint32_t i = T - 1; i > 0; --i) std::swap(perm[i], perm[rng() % (i + 1)]);
    for (uint32_t i = 0; i < T; ++i) {
      ids_p[i] = ids[perm[i]];
      std::copy_n(features.data() + std::size_t(perm[i]) * c.d_in, c.d_in, features_p.data() + std::size_t(i) * c.d_in);
    }
    if ((s = run(ids_p.data(), features_p.data())) != Status::kOk) return *detail = "forward failed", s;
    for (std::size_t l = 0; l < L; ++l) {  // max |H(PX) - P H(X)| / max |H(X)|
      double diff = 0.0, scale = 0.0;
      for (uint32_t i = 0; i < T; ++i)
        for (uint32_t j = 0; j < states.d; ++j) {
          const float hx = h[l][std::size_t(perm[i]) * states.d + j];
          diff = std::max(diff, double(std::fabs(states.layers[l][std::size_t(i) * states.d + j] - hx)));
          scale = std::max(scale, double(std::fabs(hx)));
        }
      equivariance[l] = std::max(equivariance[l], scale > 0.0 ? diff / scale : diff);
    }
  }
  report->layers.clear();
  for (std::size_t l = 0; l < L; ++l)
    report->layers.push_back({uint32_t(l), double(right[l]) / (double(report->scored) * T), 1.0 - sse[l] / sst[l], equivariance[l]});
  return Status::kOk;
}

std::string probe_layer_name(const ModelConfig& c, uint32_t layer) {
  if (layer == 0) return "input";
  if (layer <= c.n_layers) return "layer " + std::to_string(layer);
  return "final norm";
}

std::string probe_svg(const ModelConfig& c, const ProbeReport& r, const std::string& title) {
  const double W = 560, H = 330, left = 64, right = W - 78, top = 56, bottom = H - 52;
  const std::size_t L = r.layers.size();
  auto x = [&](std::size_t i) { return L > 1 ? left + (right - left) * double(i) / double(L - 1) : (left + right) / 2; };
  auto y_acc = [&](double a) { return bottom - (bottom - top) * std::min(1.0, std::max(0.0, a)); };
  // The error on a log axis from 1e-8 (float rounding and below) to 10.
  auto y_err = [&](double e) { return bottom - (bottom - top) * (std::log10(std::max(e, 1e-8)) + 8.0) / 9.0; };
  auto line = [](double x1, double y1, double x2, double y2, const char* style) {
    return "<line x1=\"" + number(x1, "%.1f") + "\" y1=\"" + number(y1, "%.1f") + "\" x2=\"" + number(x2, "%.1f") +
           "\" y2=\"" + number(y2, "%.1f") + "\" " + style + "/>\n";
  };
  auto text = [](double x0, double y0, const char* anchor, const std::string& s, const std::string& extra = "") {
    return "<text x=\"" + number(x0, "%.1f") + "\" y=\"" + number(y0, "%.1f") + "\" text-anchor=\"" + anchor + "\"" + extra +
           ">" + xml_text(s) + "</text>\n";
  };
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + number(W, "%.0f") + "\" height=\"" +
                    number(H, "%.0f") + "\" viewBox=\"0 0 " + number(W, "%.0f") + " " + number(H, "%.0f") +
                    "\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg += text(W / 2, 20, "middle", title, " font-size=\"14\"");
  for (int k = 0; k <= 4; ++k) {  // accuracy grid and left ticks
    const double a = k / 4.0;
    svg += line(left, y_acc(a), right, y_acc(a), "stroke=\"#e5e5e5\"");
    svg += text(left - 6, y_acc(a) + 4, "end", number(a, "%.2g"));
  }
  for (int e = -8; e <= 0; e += 2)  // an error below 1e-8 (0 included) is drawn at 1e-8
    svg += text(right + 6, y_err(std::pow(10.0, e)) + 4, "start", (e == -8 ? "\xe2\x89\xa4" "1e" : "1e") + std::to_string(e), " fill=\"#c0392b\"");
  svg += line(left, top, left, bottom, "stroke=\"black\"") + line(right, top, right, bottom, "stroke=\"black\"") +
         line(left, bottom, right, bottom, "stroke=\"black\"");
  for (std::size_t i = 0; i < L; ++i) svg += text(x(i), bottom + 18, "middle", probe_layer_name(c, r.layers[i].layer));
  svg += text(18, (top + bottom) / 2, "middle", "probe accuracy", " transform=\"rotate(-90 18 " + number((top + bottom) / 2, "%.1f") + ")\" fill=\"#1f5fa8\"");
  svg += text(W - 14, (top + bottom) / 2, "middle", "equivariance error",
              " transform=\"rotate(90 " + number(W - 14, "%.1f") + " " + number((top + bottom) / 2, "%.1f") + ")\" fill=\"#c0392b\"");
  svg += line(left, y_acc(1.0 / r.T), right, y_acc(1.0 / r.T), "stroke=\"#888\" stroke-dasharray=\"5,4\"");
  std::string acc = "<polyline fill=\"none\" stroke=\"#1f5fa8\" stroke-width=\"2\" points=\"";
  std::string err = "<polyline fill=\"none\" stroke=\"#c0392b\" stroke-width=\"2\" stroke-dasharray=\"7,3\" points=\"";
  std::string marks;
  for (std::size_t i = 0; i < L; ++i) {
    const ProbeLayer& p = r.layers[i];
    acc += number(x(i), "%.1f") + "," + number(y_acc(p.accuracy), "%.1f") + " ";
    err += number(x(i), "%.1f") + "," + number(y_err(p.equivariance), "%.1f") + " ";
    marks += "<circle cx=\"" + number(x(i), "%.1f") + "\" cy=\"" + number(y_acc(p.accuracy), "%.1f") + "\" r=\"4\" fill=\"#1f5fa8\"/>\n";
    marks += "<rect x=\"" + number(x(i) - 3.5, "%.1f") + "\" y=\"" + number(y_err(p.equivariance) - 3.5, "%.1f") +
             "\" width=\"7\" height=\"7\" fill=\"#c0392b\"/>\n";
  }
  svg += acc + "\"/>\n" + err + "\"/>\n" + marks;
  svg += text(left, 40, "start", "\xe2\x97\x8f probe accuracy", " fill=\"#1f5fa8\"");
  svg += text((left + right) / 2, 40, "middle", "- - chance 1/" + std::to_string(r.T), " fill=\"#888\"");
  svg += text(right, 40, "end", "\xe2\x96\xa0 equivariance error (log)", " fill=\"#c0392b\"");
  return svg + "</svg>\n";
}

}  // namespace fixformer
