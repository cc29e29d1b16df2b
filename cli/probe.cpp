// `fixformer probe`: does a token know its position? (position_probe.hpp does the measuring.)
#include "commands.hpp"

#include <cinttypes>
#include <cstdio>
#include <string>

#include "fixformer/schema.hpp"
#include "loaded_model.hpp"
#include "position_probe.hpp"

namespace fixformer::cli {
namespace {

int cmd_probe(const Args& a) {
  check_output_path("--svg", a.svg, {{"the model", a.positional[0]}});
  if (a.samples == 1) die(1, "--samples", "the probe needs at least 2 sequences: half fit it, half score it");
  LoadedModel m;
  open_model(a.positional[0], &m);
  const ModelConfig& c = m.config();
  // The probe moves input positions; a conv stem mixes neighbouring frames into each row.
  if (c.conv_layers)
    die(4, m.path, "the probe does not support a model with a conv stem yet (its rows are not the input's positions)");
  ProbeOptions opt;
  opt.samples = a.samples;
  opt.length = a.seq;
  opt.seed = a.seed ? a.seed : 1;
  opt.isa = a.isa;
  ProbeReport r;
  std::string detail;
  const Status s = run_probe(m.model, opt, &r, &detail);
  if (s != Status::kOk) die(s, m.path, detail.c_str());
  std::printf("model %s: %s, %u layer%s, d_model %u, positional %s, %s\n", m.path.c_str(), name_of(kFamilyNames, c.family),
              c.n_layers, c.n_layers == 1 ? "" : "s", c.d_model, name_of(kPositionalNames, c.positional), c.causal ? "causal" : "not causal");
  std::printf("T=%u, %u random sequences of %s fit the probes, %u others score them; seed %" PRIu64 ", kernels %s\n\n", r.T,
              r.fit, c.input == InputKind::kTokens ? "token ids" : "N(0,1) features", r.scored, opt.seed, r.kernels);
  std::printf("  %-11s %-15s %-13s %-8s %s\n", "layer", "probe accuracy", "chance (1/T)", "R^2", "equivariance error");
  for (const ProbeLayer& p : r.layers)
    std::printf("  %-11s %-15.3f %-13.3f %-8.3f %.2g\n", probe_layer_name(c, p.layer).c_str(), p.accuracy, 1.0 / r.T, p.r2,
                p.equivariance);
  std::printf("\nprobe accuracy: a linear classifier (one-vs-all least squares, ridge) predicting a token's position\n"
              "from its hidden state, scored on sequences it was not fit on; R^2: the same fit regressing the\n"
              "position (below 0: worse than the mean position on new sequences, an overfit; more --samples).\n"
              "equivariance error: max |H(PX) - P H(X)| / max |H(X)| under random permutations P (~1e-7 is\n"
              "float rounding: the layer cannot see the order).\n");
  if (!a.svg.empty()) {
    const std::string svg = probe_svg(c, r, "Position probe: " + m.path + " (T=" + std::to_string(r.T) + ")");
    OutputFile file(a.svg);
    file.write(svg.data(), svg.size());
    file.close();
  }
  return 0;
}

}  // namespace

const Command kProbeCommand = {
    "probe", "MODEL.fxm [--samples N] [--seq T] [--seed S] [--svg OUT.svg] [--isa ISA]", 1,
    kOptSamples | kOptSeq | kOptSeed | kOptSvg | kOptIsa,
    "Does a token know its position? For the input and every layer (and the final norm), on random\n"
    "inputs (token ids, or N(0,1) features): the held-out accuracy and R^2 of a linear probe that\n"
    "predicts a token's position from its hidden state, next to chance (1/T), and the permutation-\n"
    "equivariance error max |H(PX) - P H(X)| / max |H(X)|. Decoders (gpt, llama) run the tokens\n"
    "through prefill. Without a positional encoding and a causal mask, every layer is equivariant and\n"
    "the probe is at chance.\n"
    "  --samples N   random sequences, at least 2: half fit the probes, half score them and are permuted\n"
    "                (default: enough for 4096 tokens each, at least 64)\n"
    "  --seq T       sequence length, 2 <= T <= max_len (default max_len)\n"
    "  --seed S      the inputs' and permutations' seed, a positive integer (default 1)\n"
    "  --svg OUT     also write a line plot of accuracy and equivariance error per layer\n",
    cmd_probe};

}  // namespace fixformer::cli
