// ONNX's recurrent layers RNN, GRU and LSTM (torch.nn.RNN/GRU/LSTM as exported; Sequencer's
// BiLSTMs): their parameters, checks and the sequence loop, shared by the reference (double) and
// the native kernel (float, with oneDNN's products).
//
// X [T, B, I] (batch_first: [B, T, I]); per direction d (forward, reverse, or both): W [D, G·H, I],
// R [D, G·H, H], B [D, 2·G·H] (Wb then Rb), sequence_lens [B], initial_h/initial_c [D, B, H]
// (batch_first: [B, D, H]), P [D, 3H] (LSTM's peepholes i, o, f). G gate blocks of H rows each:
// RNN 1 (i), GRU 3 (z, r, h), LSTM 4 (i, o, f, c). With xw = x_t·Wᵀ + Wb and hr = H·Rᵀ + Rb per
// block, f, g, h the direction's activations and clip(v) = min(max(v, −clip), clip) applied to
// every gate's input (not C' before h) where clip is set:
//   RNN   H' = f(xw_i + hr_i)
//   GRU   z = f(xw_z + hr_z), r = f(xw_r + hr_r),
//         h̃ = g(xw_h + (r ⊙ H)·R_hᵀ + Rb_h)   (linear_before_reset 0)
//         h̃ = g(xw_h + r ⊙ hr_h)              (linear_before_reset 1),   H' = (1 − z) ⊙ h̃ + z ⊙ H
//   LSTM  i = f(xw_i + hr_i + P_i ⊙ C), f = f(xw_f + hr_f + P_f ⊙ C) (input_forget: 1 − i),
//         c̃ = g(xw_c + hr_c), C' = f ⊙ C + i ⊙ c̃, o = f(xw_o + hr_o + P_o ⊙ C'), H' = o ⊙ h(C')
// The forward direction steps t = 0 … T − 1, the reverse one T − 1 … 0; a batch entry b is
// active at step t while t < sequence_lens[b]: elsewhere its state stays and its Y is 0 (so the
// reverse direction starts at its own last step). Y [T, D, B, H] (batch_first [B, T, D, H])
// holds every step's H', Y_h and Y_c the final H and C per direction ([D, B, H], batch_first
// [B, D, H]).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "refold/tensor.h"

namespace refold::reference {

enum class RecurrentCell { RNN, GRU, LSTM };
enum class RecurrentDirection { Forward, Reverse, Bidirectional };

// The activations these ops name in their `activations` attribute, with ONNX's defaults for α
// and β where the function takes them.
struct RecurrentActivation {
  enum class Kind {
    Sigmoid,
    Tanh,
    Relu,
    Affine,
    LeakyRelu,
    ThresholdedRelu,
    ScaledTanh,
    HardSigmoid,
    Elu,
    Softsign,
    Softplus
  };
  Kind kind = Kind::Sigmoid;
  double alpha = 0.0, beta = 0.0;

  template <typename T>
  T operator()(T x) const {
    const T a = static_cast<T>(alpha), b = static_cast<T>(beta);
    switch (kind) {
      case Kind::Sigmoid:
        return T(1) / (T(1) + std::exp(-x));
      case Kind::Tanh:
        return std::tanh(x);
      case Kind::Relu:
        return std::max(x, T(0));
      case Kind::Affine:
        return a * x + b;
      case Kind::LeakyRelu:
        return x >= T(0) ? x : a * x;
      case Kind::ThresholdedRelu:
        return x > a ? x : T(0);
      case Kind::ScaledTanh:
        return a * std::tanh(b * x);
      case Kind::HardSigmoid:
        return std::clamp(a * x + b, T(0), T(1));
      case Kind::Elu:
        return x >= T(0) ? x : a * (std::exp(x) - T(1));
      case Kind::Softsign:
        return x / (T(1) + std::abs(x));
      case Kind::Softplus:
        return std::log1p(std::exp(-std::abs(x))) + std::max(x, T(0));
    }
    return x;
  }
};

// The activations of an `activations` attribute (names as ONNX spells them, any case), α and β
// consumed in order by the functions that take them; an unknown name is an error naming it.
std::vector<RecurrentActivation> recurrent_activations(const std::vector<std::string>& names,
                                                       const std::vector<float>& alphas,
                                                       const std::vector<float>& betas);

// "RNN", "GRU", "LSTM": the ONNX op.
const char* recurrent_op_name(RecurrentCell cell);

struct RecurrentParams {
  RecurrentCell cell = RecurrentCell::LSTM;
  RecurrentDirection direction = RecurrentDirection::Forward;
  std::int64_t hidden = 0;  // 0: R's last size
  // functions() per direction, the forward direction's first: f (, g (, h)).
  std::vector<RecurrentActivation> activations;
  std::optional<double> clip;
  bool input_forget = false;         // LSTM
  bool linear_before_reset = false;  // GRU
  bool batch_first = false;          // the `layout` attribute (opset 14)

  int gates() const { return cell == RecurrentCell::RNN ? 1 : cell == RecurrentCell::GRU ? 3 : 4; }
  int functions() const {
    return cell == RecurrentCell::RNN ? 1 : cell == RecurrentCell::GRU ? 2 : 3;
  }
  int directions() const { return direction == RecurrentDirection::Bidirectional ? 2 : 1; }
  // ONNX's defaults: sigmoid gates, tanh candidates and outputs (RNN: tanh).
  static std::vector<RecurrentActivation> default_activations(RecurrentCell cell, int directions);
};

// The parameters' own checks (refold::Error): functions() activations per direction, clip
// positive where set. The importer runs them on the node's attributes, check_recurrent again.
void check_recurrent_params(const RecurrentParams& p);

// The op's inputs; an absent optional one is undefined.
struct RecurrentInputs {
  Tensor x, w, r, b, sequence_lens, initial_h, initial_c, p;
};

struct RecurrentOutputs {
  Tensor y, y_h, y_c;  // y_c: LSTM only
};

// T, B, I and H (hidden_size, or R's last size when the attribute is absent), after every check
// of the inputs' ranks, sizes, dtypes and sequence lengths (refold::Error naming the input and
// the value), and each batch entry's active steps (T without sequence_lens).
struct RecurrentExtent {
  std::int64_t steps = 0, batch = 0, input = 0, hidden = 0;
  std::vector<std::int64_t> lengths;
};
RecurrentExtent check_recurrent(const RecurrentInputs& in, const RecurrentParams& p);

// The reference: every product and gate in double, rounded once to x's dtype.
RecurrentOutputs recurrent(const RecurrentInputs& in, const RecurrentParams& p);

namespace detail {

// One direction's running state: H and C (LSTM), [B, H] each.
template <typename T>
struct RecurrentState {
  std::vector<T> h, c;
};

// One direction's steps. `xw(t)` returns step t's input products x_t·Wᵀ + Wb: a row of G·H per
// batch entry (gate blocks in the op's order), `xw_stride` elements apart; `hr(h, begin, count,
// out)` writes the gate blocks begin … begin + count − 1 of h·Rᵀ + Rb: out[b, k] = Σ_j h[b,
// j]·R[begin·H + k, j] + Rb[begin·H + k] for k < count·H; `peep` is P's [3H] or null; `lengths` the
// active steps per batch entry; `store(t, h)` receives each step's H' rows (inactive rows zero).
// `apply(f, v, n)` applies activation f to n values in place.
template <typename T, typename Xw, typename Hr, typename Apply, typename Store>
void run_direction(const RecurrentParams& p, const RecurrentActivation* f, bool reverse,
                   std::int64_t steps, std::int64_t batch, const std::vector<std::int64_t>& lengths,
                   const T* peep, RecurrentState<T>& s, Xw&& xw, std::int64_t xw_stride, Hr&& hr,
                   Apply&& apply, Store&& store) {
  const std::int64_t H = p.hidden, G = p.gates(), BH = batch * H;
  const bool lstm = p.cell == RecurrentCell::LSTM, gru = p.cell == RecurrentCell::GRU;
  // GRU without linear_before_reset multiplies r ⊙ H by R_h later: the first product covers z, r.
  const std::int64_t product_gates = gru && !p.linear_before_reset ? 2 : G;
  std::vector<T> rec(static_cast<std::size_t>(batch * product_gates * H));
  std::vector<T> gate(static_cast<std::size_t>(G * BH));  // [G][B][H]: each gate one array
  std::vector<T> next_h(static_cast<std::size_t>(BH)), next_c(lstm ? BH : 0), scratch(BH);
  std::vector<T> reset_product(gru && !p.linear_before_reset ? BH : 0);  // (r ⊙ H)·R_hᵀ + Rb_h
  const auto clip = [&](T* v, std::int64_t n) {
    if (!p.clip) return;
    const T c = static_cast<T>(*p.clip);
    for (std::int64_t i = 0; i < n; ++i) v[i] = std::clamp(v[i], -c, c);
  };
  const auto activate = [&](int which, T* v, std::int64_t n) {
    clip(v, n);
    apply(f[which], v, n);
  };
  for (std::int64_t k = 0; k < steps; ++k) {
    const std::int64_t t = reverse ? steps - 1 - k : k;
    const T* x_products = xw(t);
    hr(s.h.data(), 0, product_gates, rec.data());
    // gate[g][b][j] = xw[b][g·H + j] + hr[b][g·H + j] (GRU's h block: xw alone for now).
    for (std::int64_t g = 0; g < G; ++g) {
      for (std::int64_t b = 0; b < batch; ++b) {
        T* dst = gate.data() + g * BH + b * H;
        const T* xr = x_products + b * xw_stride + g * H;
        const T* rr = rec.data() + b * product_gates * H + g * H;
        const bool with_rec = g < product_gates && !(gru && g == 2);
        for (std::int64_t j = 0; j < H; ++j) dst[j] = xr[j] + (with_rec ? rr[j] : T(0));
      }
    }
    if (p.cell == RecurrentCell::RNN) {
      activate(0, gate.data(), BH);
      std::copy(gate.begin(), gate.begin() + BH, next_h.begin());
    } else if (gru) {
      T* z = gate.data();
      T* r = gate.data() + BH;
      T* hh = gate.data() + 2 * BH;
      activate(0, z, 2 * BH);  // z and r, adjacent
      if (p.linear_before_reset) {
        for (std::int64_t b = 0; b < batch; ++b)
          for (std::int64_t j = 0; j < H; ++j)
            hh[b * H + j] += r[b * H + j] * rec[b * G * H + 2 * H + j];
      } else {
        for (std::int64_t i = 0; i < BH; ++i) scratch[i] = r[i] * s.h[i];
        hr(scratch.data(), 2, 1, reset_product.data());
        for (std::int64_t i = 0; i < BH; ++i) hh[i] += reset_product[i];
      }
      activate(1, hh, BH);
      for (std::int64_t i = 0; i < BH; ++i) next_h[i] = (T(1) - z[i]) * hh[i] + z[i] * s.h[i];
    } else {
      T* gi = gate.data();
      T* go = gate.data() + BH;
      T* gf = gate.data() + 2 * BH;
      T* gc = gate.data() + 3 * BH;
      if (peep != nullptr) {
        for (std::int64_t b = 0; b < batch; ++b)
          for (std::int64_t j = 0; j < H; ++j) {
            gi[b * H + j] += peep[j] * s.c[b * H + j];
            gf[b * H + j] += peep[2 * H + j] * s.c[b * H + j];
          }
      }
      activate(0, gi, BH);
      if (p.input_forget) {
        for (std::int64_t i = 0; i < BH; ++i) gf[i] = T(1) - gi[i];
      } else {
        activate(0, gf, BH);
      }
      activate(1, gc, BH);
      for (std::int64_t i = 0; i < BH; ++i) next_c[i] = gf[i] * s.c[i] + gi[i] * gc[i];
      if (peep != nullptr) {
        for (std::int64_t b = 0; b < batch; ++b)
          for (std::int64_t j = 0; j < H; ++j) go[b * H + j] += peep[H + j] * next_c[b * H + j];
      }
      activate(0, go, BH);
      std::copy(next_c.begin(), next_c.end(), scratch.begin());
      apply(f[2], scratch.data(), BH);  // h(C'): C' is no gate's input, not clipped
      for (std::int64_t i = 0; i < BH; ++i) next_h[i] = go[i] * scratch[i];
    }
    // Inactive entries keep their state and write zeros.
    for (std::int64_t b = 0; b < batch; ++b) {
      const auto row = static_cast<std::ptrdiff_t>(b * H);
      if (t < lengths[static_cast<std::size_t>(b)]) {
        std::copy(next_h.begin() + row, next_h.begin() + row + H, s.h.begin() + row);
        if (lstm) std::copy(next_c.begin() + row, next_c.begin() + row + H, s.c.begin() + row);
      } else {
        std::fill(next_h.begin() + row, next_h.begin() + row + H, T(0));
      }
    }
    store(t, next_h.data());
  }
}

}  // namespace detail
}  // namespace refold::reference
