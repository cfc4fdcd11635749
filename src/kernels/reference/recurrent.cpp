// The recurrent layers' checks and reference (kernels/reference/recurrent.h has the math).
#include "kernels/reference/recurrent.h"

#include <fmt/ranges.h>

#include <cctype>

#include "core/check.h"
#include "refold/tensor.h"

namespace refold::reference {
namespace {

using Kind = RecurrentActivation::Kind;

struct ActivationName {
  const char* name;
  Kind kind;
  int parameters;  // how many of α, β it takes
  double alpha, beta;
};

// ONNX's names and defaults (the operators of the same names).
constexpr ActivationName kActivations[] = {
    {"sigmoid", Kind::Sigmoid, 0, 0, 0},
    {"tanh", Kind::Tanh, 0, 0, 0},
    {"relu", Kind::Relu, 0, 0, 0},
    {"affine", Kind::Affine, 2, 1.0, 0.0},
    {"leakyrelu", Kind::LeakyRelu, 1, 0.01, 0},
    {"thresholdedrelu", Kind::ThresholdedRelu, 1, 1.0, 0},
    {"scaledtanh", Kind::ScaledTanh, 2, 1.0, 1.0},
    {"hardsigmoid", Kind::HardSigmoid, 2, 0.2, 0.5},
    {"elu", Kind::Elu, 1, 1.0, 0},
    {"softsign", Kind::Softsign, 0, 0, 0},
    {"softplus", Kind::Softplus, 0, 0, 0},
};

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string shape_text(const Tensor& t) { return fmt::format("[{}]", fmt::join(t.sizes(), ", ")); }

void check_sizes(const Tensor& t, const char* what, const Shape& expected) {
  REFOLD_CHECK(t.sizes() == expected, "{} must have shape [{}], got {}", what,
               fmt::join(expected, ", "), shape_text(t));
}

std::vector<double> doubles(const Tensor& t) {
  const std::vector<float> f = t.to_vector();
  return {f.begin(), f.end()};
}

}  // namespace

std::vector<RecurrentActivation> recurrent_activations(const std::vector<std::string>& names,
                                                       const std::vector<float>& alphas,
                                                       const std::vector<float>& betas) {
  std::vector<RecurrentActivation> out;
  std::size_t next_alpha = 0, next_beta = 0;
  for (const std::string& name : names) {
    const std::string key = lower(name);
    const ActivationName* found = nullptr;
    for (const ActivationName& a : kActivations)
      if (key == a.name) found = &a;
    REFOLD_CHECK(found != nullptr,
                 "unsupported: activation '{}' (refold has Sigmoid, Tanh, Relu, Affine, LeakyRelu, "
                 "ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign and Softplus)",
                 name);
    RecurrentActivation f{found->kind, found->alpha, found->beta};
    if (found->parameters >= 1 && next_alpha < alphas.size()) f.alpha = alphas[next_alpha++];
    if (found->parameters >= 2 && next_beta < betas.size()) f.beta = betas[next_beta++];
    out.push_back(f);
  }
  return out;
}

std::vector<RecurrentActivation> RecurrentParams::default_activations(RecurrentCell cell,
                                                                      int directions) {
  const RecurrentActivation sigmoid{Kind::Sigmoid}, tanh{Kind::Tanh};
  std::vector<RecurrentActivation> one =
      cell == RecurrentCell::RNN   ? std::vector<RecurrentActivation>{tanh}
      : cell == RecurrentCell::GRU ? std::vector<RecurrentActivation>{sigmoid, tanh}
                                   : std::vector<RecurrentActivation>{sigmoid, tanh, tanh};
  std::vector<RecurrentActivation> all;
  for (int d = 0; d < directions; ++d) all.insert(all.end(), one.begin(), one.end());
  return all;
}

const char* recurrent_op_name(RecurrentCell cell) {
  return cell == RecurrentCell::RNN ? "RNN" : cell == RecurrentCell::GRU ? "GRU" : "LSTM";
}

void check_recurrent_params(const RecurrentParams& p) {
  const int needed = p.functions() * p.directions();
  REFOLD_CHECK(static_cast<int>(p.activations.size()) == needed,
               "activations has {} functions; {} direction(s) of {} need {}", p.activations.size(),
               p.directions(), recurrent_op_name(p.cell), needed);
  REFOLD_CHECK(!p.clip || *p.clip > 0, "clip must be positive (got {})", p.clip.value_or(0.0));
}

RecurrentExtent check_recurrent(const RecurrentInputs& in, const RecurrentParams& p) {
  REFOLD_CHECK(in.x.defined() && in.w.defined() && in.r.defined(),
               "X, W and R are required inputs");
  for (const auto& [t, what] : {std::pair{&in.x, "X"},
                                {&in.w, "W"},
                                {&in.r, "R"},
                                {&in.b, "B"},
                                {&in.initial_h, "initial_h"},
                                {&in.initial_c, "initial_c"},
                                {&in.p, "P"}})
    REFOLD_CHECK(!t->defined() || is_floating(t->dtype()), "{} must be floating-point, got {}",
                 what, dtype_name(t->dtype()));
  REFOLD_CHECK(in.x.dim() == 3, "X must be 3-d ([seq_length, batch, input_size]), got {}",
               shape_text(in.x));
  REFOLD_CHECK(in.r.dim() == 3, "R must be 3-d, got {}", shape_text(in.r));
  RecurrentExtent e;
  e.steps = in.x.size(p.batch_first ? 1 : 0);
  e.batch = in.x.size(p.batch_first ? 0 : 1);
  e.input = in.x.size(2);
  e.hidden = p.hidden > 0 ? p.hidden : in.r.size(2);
  const std::int64_t D = p.directions(), GH = p.gates() * e.hidden, H = e.hidden;
  check_recurrent_params(p);
  check_sizes(in.w, "W", {D, GH, e.input});
  check_sizes(in.r, "R", {D, GH, H});
  if (in.b.defined()) check_sizes(in.b, "B", {D, 2 * GH});
  const Shape state = p.batch_first ? Shape{e.batch, D, H} : Shape{D, e.batch, H};
  if (in.initial_h.defined()) check_sizes(in.initial_h, "initial_h", state);
  if (in.initial_c.defined()) check_sizes(in.initial_c, "initial_c", state);
  if (in.p.defined()) check_sizes(in.p, "P", {D, 3 * H});
  e.lengths.assign(static_cast<std::size_t>(e.batch), e.steps);
  if (in.sequence_lens.defined()) {
    REFOLD_CHECK(in.sequence_lens.dtype() == DType::Int64, "sequence_lens must be int32, got {}",
                 dtype_name(in.sequence_lens.dtype()));
    check_sizes(in.sequence_lens, "sequence_lens", {e.batch});
    const Tensor lens = in.sequence_lens.contiguous();
    for (std::int64_t b = 0; b < e.batch; ++b) {
      const std::int64_t n = lens.data<std::int64_t>()[b];
      REFOLD_CHECK(n >= 0 && n <= e.steps, "sequence_lens[{}] = {} is outside [0, {}] (seq_length)",
                   b, n, e.steps);
      e.lengths[static_cast<std::size_t>(b)] = n;
    }
  }
  return e;
}

RecurrentOutputs recurrent(const RecurrentInputs& in, const RecurrentParams& params) {
  const RecurrentExtent e = check_recurrent(in, params);
  RecurrentParams p = params;
  p.hidden = e.hidden;
  const std::int64_t T = e.steps, B = e.batch, I = e.input, H = e.hidden, G = p.gates();
  const std::int64_t D = p.directions(), GH = G * H;
  const std::vector<double> x = doubles(in.x), w = doubles(in.w), r = doubles(in.r);
  const std::vector<double> bias =
      in.b.defined() ? doubles(in.b) : std::vector<double>(static_cast<std::size_t>(D * 2 * GH));
  const std::vector<double> h0 =
      in.initial_h.defined() ? doubles(in.initial_h) : std::vector<double>(D * B * H, 0.0);
  const std::vector<double> c0 =
      in.initial_c.defined() ? doubles(in.initial_c) : std::vector<double>(D * B * H, 0.0);
  const std::vector<double> peep = in.p.defined() ? doubles(in.p) : std::vector<double>();
  // Element offsets of x[t, b, :] and of state / Y rows in either layout.
  const auto x_row = [&](std::int64_t t, std::int64_t b) {
    return (p.batch_first ? b * T + t : t * B + b) * I;
  };
  const auto state_row = [&](std::int64_t d, std::int64_t b) {
    return (p.batch_first ? b * D + d : d * B + b) * H;
  };
  const auto y_row = [&](std::int64_t t, std::int64_t d, std::int64_t b) {
    return (p.batch_first ? (b * T + t) * D + d : (t * D + d) * B + b) * H;
  };
  std::vector<double> y(static_cast<std::size_t>(T * D * B * H)), yh(D * B * H), yc(D * B * H);
  std::vector<double> xw(static_cast<std::size_t>(B * GH));
  for (std::int64_t d = 0; d < D; ++d) {
    const double* W = w.data() + d * GH * I;
    const double* R = r.data() + d * GH * H;
    const double* Wb = bias.data() + d * 2 * GH;
    const double* Rb = Wb + GH;
    detail::RecurrentState<double> s;
    s.h.resize(static_cast<std::size_t>(B * H));
    s.c.resize(static_cast<std::size_t>(B * H));
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t j = 0; j < H; ++j) {
        s.h[b * H + j] = h0[state_row(d, b) + j];
        s.c[b * H + j] = c0[state_row(d, b) + j];
      }
    const bool reverse = p.direction == RecurrentDirection::Reverse || d == 1;
    detail::run_direction<double>(
        p, p.activations.data() + d * p.functions(), reverse, T, B, e.lengths,
        peep.empty() ? nullptr : peep.data() + d * 3 * H, s,
        [&](std::int64_t t) {
          for (std::int64_t b = 0; b < B; ++b)
            for (std::int64_t g = 0; g < GH; ++g) {
              double acc = Wb[g];
              for (std::int64_t i = 0; i < I; ++i) acc += x[x_row(t, b) + i] * W[g * I + i];
              xw[b * GH + g] = acc;
            }
          return static_cast<const double*>(xw.data());
        },
        GH,
        [&](const double* h, std::int64_t begin, std::int64_t count, double* out) {
          const std::int64_t n = count * H;
          for (std::int64_t b = 0; b < B; ++b)
            for (std::int64_t k = 0; k < n; ++k) {
              const std::int64_t row = begin * H + k;
              double acc = Rb[row];
              for (std::int64_t j = 0; j < H; ++j) acc += h[b * H + j] * R[row * H + j];
              out[b * n + k] = acc;
            }
        },
        [](const RecurrentActivation& f, double* v, std::int64_t n) {
          for (std::int64_t i = 0; i < n; ++i) v[i] = f(v[i]);
        },
        [&](std::int64_t t, const double* h) {
          for (std::int64_t b = 0; b < B; ++b)
            std::copy(h + b * H, h + (b + 1) * H, y.begin() + y_row(t, d, b));
        });
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t j = 0; j < H; ++j) {
        yh[state_row(d, b) + j] = s.h[b * H + j];
        yc[state_row(d, b) + j] = s.c[b * H + j];
      }
  }
  const DType dtype = in.x.dtype();
  const auto tensor = [&](const std::vector<double>& v, Shape sizes) {
    const std::vector<float> f(v.begin(), v.end());
    return from_values(f, std::move(sizes)).to(dtype);
  };
  RecurrentOutputs out;
  out.y = tensor(y, p.batch_first ? Shape{B, T, D, H} : Shape{T, D, B, H});
  const Shape state = p.batch_first ? Shape{B, D, H} : Shape{D, B, H};
  out.y_h = tensor(yh, state);
  if (p.cell == RecurrentCell::LSTM) out.y_c = tensor(yc, state);
  return out;
}

}  // namespace refold::reference
