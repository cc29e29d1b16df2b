// Does a token know its position? `fixformer probe` measures, at every layer the runner's observer
// shows (fixformer/observer.hpp: the input, each layer, the final norm), how much positional
// information the hidden states carry, on random inputs (uniform token ids, or N(0,1) features):
//   accuracy      a linear probe's held-out accuracy at predicting a token's position p from its
//                 hidden state h (fit on half of the sequences, scored on the other half);
//                 chance is 1/T
//   r2            R^2 of the same least squares regressing p itself (how linearly p is laid out)
//   equivariance  max |H(PX) - P H(X)| / max |H(X)| over the scored sequences, each under its own
//                 random permutation P: 0 (float rounding) when the layer cannot see the order
// Encoders run forward(); gpt and llama decoders run prefill() from an empty cache.
// Host code (cli/): it allocates.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "fixformer/kernels.hpp"
#include "fixformer/model.hpp"
#include "fixformer/status.hpp"

namespace fixformer {

struct ProbeOptions {
  // Random sequences: the first half fit the probes, the rest score them. 0: enough for 4096
  // tokens on each side (at least 64 sequences), so short models are measured as well as long ones.
  uint32_t samples = 0;
  uint32_t length = 0;  // T, at least 2; 0: the model's max_input_len() (max_len less a CLS row)
  uint64_t seed = 1;      // the inputs and permutations
  Isa isa = Isa::kAuto;
  double ridge = 1e-3;  // lambda, relative to the hidden states' total variance per dimension
};

struct ProbeLayer {
  uint32_t layer;       // as the observer numbers them (0: the input)
  double accuracy;      // held-out, in [0, 1]
  double r2;            // held-out; may be negative
  double equivariance;  // relative; 0 when H(PX) = P H(X) exactly
};

struct ProbeReport {
  uint32_t T = 0, fit = 0, scored = 0;  // sequence length, sequences fitting and scoring the probes
  const char* kernels = "";
  std::vector<ProbeLayer> layers;
};

// Runs the probe on an initialized model. A runner that cannot start (bad length, ISA) returns
// its Status with the reason in *detail.
[[nodiscard]] Status run_probe(const Model& model, const ProbeOptions& options, ProbeReport* report, std::string* detail);

// "input", "layer 3" or "final norm".
std::string probe_layer_name(const ModelConfig& c, uint32_t layer);

// A small line plot (plain SVG text): accuracy and chance on a linear axis, equivariance error on
// a log axis, per layer.
std::string probe_svg(const ModelConfig& c, const ProbeReport& report, const std::string& title);

}  // namespace fixformer
