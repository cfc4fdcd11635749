// Reference Einsum (see onnx_ops.h): the equation parsed once, each label's stride summed per
// input (a repeated label walks the diagonal; a broadcast "..." dimension has stride 0), then
// for every output element the sum over the contracted labels of the product of the inputs, in
// double, rounded once.
#include <algorithm>
#include <cctype>

#include <fmt/ranges.h>

#include "core/check.h"
#include "core/checked_math.h"
#include "core/element_access.h"
#include "kernels/reference/onnx_ops.h"

namespace refold::reference {
namespace {

// A term's labels, "..." as '.'.
std::string parse_term(const std::string& term, const std::string& equation) {
  std::string labels;
  for (std::size_t i = 0; i < term.size();) {
    if (term.compare(i, 3, "...") == 0) {
      REFOLD_CHECK(labels.find('.') == std::string::npos,
                   "Einsum: equation '{}': term '{}' has more than one '...'", equation, term);
      labels += '.';
      i += 3;
      continue;
    }
    const char c = term[i];
    REFOLD_CHECK(std::isalpha(static_cast<unsigned char>(c)) != 0,
                 "Einsum: equation '{}': unexpected character '{}' in term '{}' (labels are "
                 "letters, plus '...')",
                 equation, c, term);
    labels += c;
    ++i;
  }
  return labels;
}

}  // namespace

EinsumEquation parse_einsum(const std::string& equation_in, std::size_t n_inputs) {
  std::string eq;
  for (char c : equation_in)
    if (c != ' ') eq += c;
  const std::size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  const std::string rhs = arrow == std::string::npos ? std::string() : eq.substr(arrow + 2);
  REFOLD_CHECK(rhs.find("->") == std::string::npos, "Einsum: equation '{}' has more than one '->'",
               equation_in);
  EinsumEquation out;
  std::size_t begin = 0;
  while (true) {
    const std::size_t comma = lhs.find(',', begin);
    const std::size_t stop = comma == std::string::npos ? lhs.size() : comma;
    out.inputs.push_back(parse_term(lhs.substr(begin, stop - begin), equation_in));
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  REFOLD_CHECK(out.inputs.size() == n_inputs,
               "Einsum: equation '{}' has {} input terms for {} inputs", equation_in,
               out.inputs.size(), n_inputs);
  int count[128] = {};
  bool ellipsis = false;
  for (const std::string& term : out.inputs)
    for (char c : term) {
      if (c == '.')
        ellipsis = true;
      else
        ++count[static_cast<unsigned char>(c)];
    }
  out.explicit_output = arrow != std::string::npos;
  if (out.explicit_output) {
    out.output = parse_term(rhs, equation_in);
    int seen[128] = {};
    for (char c : out.output) {
      if (c == '.') continue;
      const auto u = static_cast<unsigned char>(c);
      REFOLD_CHECK(seen[u]++ == 0, "Einsum: equation '{}': label '{}' appears twice in the output",
                   equation_in, c);
      REFOLD_CHECK(count[u] > 0, "Einsum: equation '{}': output label '{}' is in no input",
                   equation_in, c);
    }
    return out;
  }
  if (ellipsis) out.output.push_back('.');
  for (int c = 0; c < 128; ++c)
    if (count[c] == 1) out.output += static_cast<char>(c);
  return out;
}

EinsumLabels einsum_labels(const EinsumEquation& equation, const std::vector<Shape>& shapes) {
  REFOLD_CHECK(shapes.size() == equation.inputs.size(), "Einsum: {} inputs for {} terms",
               shapes.size(), equation.inputs.size());
  // The ellipsis dimensions of each input, and their number in the output (the most).
  std::vector<std::size_t> ell(shapes.size(), 0);
  std::size_t e_max = 0;
  for (std::size_t t = 0; t < shapes.size(); ++t) {
    const std::string& term = equation.inputs[t];
    const bool has_ellipsis = term.find('.') != std::string::npos;
    const std::size_t named = term.size() - (has_ellipsis ? 1 : 0);
    const std::size_t rank = shapes[t].size();
    REFOLD_CHECK(has_ellipsis ? rank >= named : rank == named,
                 "Einsum: input {} has rank {} but its term '{}' names {} dimensions", t, rank,
                 term, named);
    ell[t] = has_ellipsis ? rank - named : 0;
    e_max = std::max(e_max, ell[t]);
  }
  const bool out_ellipsis = equation.output.find('.') != std::string::npos;
  REFOLD_CHECK(e_max == 0 || out_ellipsis,
               "Einsum: the output must keep '...' (it stands for {} dimensions)", e_max);
  EinsumLabels labels;
  labels.sizes.assign(static_cast<std::size_t>(kEllipsisLabel) + e_max, -1);
  for (std::size_t t = 0; t < shapes.size(); ++t) {
    std::vector<int>& out = labels.inputs.emplace_back();
    std::size_t d = 0;
    for (char c : equation.inputs[t]) {
      if (c == '.') {
        for (std::size_t j = 0; j < ell[t]; ++j, ++d) {
          const int label = kEllipsisLabel + static_cast<int>(e_max - ell[t] + j);
          std::int64_t& size = labels.sizes[static_cast<std::size_t>(label)];
          const std::int64_t dim = shapes[t][d];
          REFOLD_CHECK(size == -1 || size == 1 || dim == 1 || dim == size,
                       "Einsum: the '...' dimensions of input {} [{}] do not broadcast with the "
                       "other inputs' (size {} vs {})",
                       t, fmt::join(shapes[t], ", "), dim, size);
          if (size == -1 || size == 1) size = dim;
          out.push_back(label);
        }
        continue;
      }
      const auto label = static_cast<int>(static_cast<unsigned char>(c));
      std::int64_t& size = labels.sizes[static_cast<std::size_t>(label)];
      const std::int64_t dim = shapes[t][d++];
      REFOLD_CHECK(size == -1 || size == dim,
                   "Einsum: label '{}' has size {} in input {} [{}] but {} elsewhere", c, dim, t,
                   fmt::join(shapes[t], ", "), size);
      size = dim;
      out.push_back(label);
    }
  }
  for (char c : equation.output) {
    if (c != '.') {
      labels.output.push_back(static_cast<unsigned char>(c));
      continue;
    }
    for (std::size_t j = 0; j < e_max; ++j)
      labels.output.push_back(kEllipsisLabel + static_cast<int>(j));
  }
  return labels;
}

Tensor einsum(const EinsumEquation& equation, const std::vector<Tensor>& inputs) {
  REFOLD_CHECK(!inputs.empty(), "Einsum: no inputs");
  std::vector<Shape> shapes;
  for (std::size_t t = 0; t < inputs.size(); ++t) {
    const Tensor& x = inputs[t];
    REFOLD_CHECK(x.defined(), "Einsum: input {} is undefined", t);
    REFOLD_CHECK(is_floating(x.dtype()) && x.dtype() == inputs[0].dtype(),
                 "Einsum: input {} has dtype {}; the inputs must be float32 or bfloat16, all one "
                 "dtype",
                 t, dtype_name(x.dtype()));
    shapes.push_back(x.sizes());
  }
  const EinsumLabels labels = einsum_labels(equation, shapes);
  const std::size_t n_labels = labels.sizes.size();
  // Each input's stride per label (0 where it lacks the label or broadcasts it).
  std::vector<std::vector<std::int64_t>> strides(inputs.size(),
                                                 std::vector<std::int64_t>(n_labels, 0));
  std::vector<bool> used(n_labels, false);
  for (std::size_t t = 0; t < inputs.size(); ++t)
    for (std::size_t d = 0; d < labels.inputs[t].size(); ++d) {
      const auto label = static_cast<std::size_t>(labels.inputs[t][d]);
      used[label] = true;
      if (shapes[t][d] == 1 && labels.sizes[label] != 1) continue;
      strides[t][label] += inputs[t].strides()[d];
    }
  Shape out_sizes;
  for (int label : labels.output) {
    out_sizes.push_back(labels.sizes[static_cast<std::size_t>(label)]);
    used[static_cast<std::size_t>(label)] = false;
  }
  std::vector<std::size_t> contracted;
  Shape contracted_sizes;
  for (std::size_t label = 0; label < n_labels; ++label)
    if (used[label]) {
      contracted.push_back(label);
      contracted_sizes.push_back(labels.sizes[label]);
    }
  const DType dtype = inputs[0].dtype();
  checked_mul(checked_numel(out_sizes, "Einsum"),
              static_cast<std::int64_t>(inputs[0].element_size()), "Einsum");
  Tensor output = empty(out_sizes, dtype);
  std::vector<FloatReader> readers;
  for (const Tensor& x : inputs) readers.emplace_back(x);
  const FloatWriter writer(output);
  std::vector<std::int64_t> base(inputs.size());
  for_each_index(out_sizes, [&](const Shape& idx) {
    for (std::size_t t = 0; t < inputs.size(); ++t) {
      base[t] = 0;
      for (std::size_t k = 0; k < idx.size(); ++k)
        base[t] += idx[k] * strides[t][static_cast<std::size_t>(labels.output[k])];
    }
    double acc = 0;
    for_each_index(contracted_sizes, [&](const Shape& c) {
      double product = 1;
      for (std::size_t t = 0; t < inputs.size(); ++t) {
        std::int64_t off = base[t];
        for (std::size_t k = 0; k < c.size(); ++k) off += c[k] * strides[t][contracted[k]];
        product *= static_cast<double>(readers[t].at_offset(off));
      }
      acc += product;
    });
    writer.set_offset(offset_of(idx, writer.strides()), round_to_dtype(acc, dtype));
  });
  return output;
}

}  // namespace refold::reference
