#include "refold/model_inputs.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "refold/error.h"

namespace refold {

std::string no_such_input(const graph::Graph& graph, const std::string& name) {
  std::vector<std::string> names;
  for (const graph::ValueInfo& v : graph.inputs) names.push_back(v.name);
  std::string text =
      fmt::format("the model has no input '{}' (inputs: {})", name,
                  names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", ")));
  if (graph.is_constant(name)) {
    text += fmt::format(
        "; '{}' is an initializer, listed as a graph input only to give its default value "
        "(ONNX IR 3), and refold reads it as a constant",
        name);
  }
  return text;
}

void check_input_shapes(const InputShapes& shapes, const graph::Graph& graph,
                        const std::string& what) {
  for (const auto& entry : shapes) {
    const std::string& name = entry.first;  // (clang 14 cannot capture a structured binding)
    const Shape& sizes = entry.second;
    const auto input = std::find_if(graph.inputs.begin(), graph.inputs.end(),
                                    [&](const graph::ValueInfo& v) { return v.name == name; });
    if (input == graph.inputs.end())
      throw Error(fmt::format("{} {}: {}", what, name, no_such_input(graph, name)));
    if (!input->shape) continue;
    if (input->shape->size() != sizes.size())
      throw Error(fmt::format("{} {}: {} dims given, the model declares {}", what, name,
                              sizes.size(), input->shape->size()));
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      const graph::Dim& d = (*input->shape)[i];
      if (sizes[i] < 0)
        throw Error(
            fmt::format("{} {}: dim {} is {}, not a size (a number ≥ 0)", what, name, i, sizes[i]));
      if (d.is_static() && d.value != sizes[i])
        throw Error(fmt::format("{} {}: dim {} is {}, but the model declares {}", what, name, i,
                                sizes[i], d.value));
    }
  }
}

InputShapes parse_input_shapes(const std::vector<std::string>& specs) {
  InputShapes shapes;
  for (const std::string& spec : specs) {
    const auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      throw Error(
          fmt::format("--input-shape '{}': expected NAME=DxDx… (e.g. x=1x3x224x224)", spec));
    const std::string name = spec.substr(0, eq);
    Shape sizes;
    std::size_t at = eq + 1;
    while (at <= spec.size()) {
      const std::size_t x = std::min(spec.find('x', at), spec.size());
      const std::string dim = spec.substr(at, x - at);
      std::size_t used = 0;
      long long value = -1;
      try {
        value = std::stoll(dim, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != dim.size() || value < 0)
        throw Error(
            fmt::format("--input-shape '{}': '{}' is not a size (a number ≥ 0)", spec, dim));
      sizes.push_back(value);
      at = x + 1;
    }
    if (!shapes.emplace(name, std::move(sizes)).second)
      throw Error(fmt::format("--input-shape {} given twice", name));
  }
  return shapes;
}

InputShapes parse_input_shapes(const std::vector<std::string>& specs, const graph::Graph& graph) {
  InputShapes shapes = parse_input_shapes(specs);
  check_input_shapes(shapes, graph);
  return shapes;
}

std::vector<Tensor> random_inputs(const graph::Graph& graph, std::int64_t batch,
                                  bool override_batch, const InputShapes& shapes,
                                  std::uint64_t seed) {
  Generator gen(seed);
  std::vector<Tensor> result;
  for (const graph::ValueInfo& input : graph.inputs) {
    if (input.elem_type != 1) {
      throw Error(fmt::format("input '{}': element type {} needs real data (--input)", input.name,
                              input.elem_type));
    }
    if (const auto given = shapes.find(input.name); given != shapes.end()) {
      result.push_back(randn(given->second, {}, gen));
      continue;
    }
    if (!input.shape) {
      throw Error(fmt::format(
          "input '{}' has no declared shape; give its shape (--input-shape) or data (--input)",
          input.name));
    }
    Shape sizes;
    for (std::size_t i = 0; i < input.shape->size(); ++i) {
      const graph::Dim& d = (*input.shape)[i];
      if (i == 0 && (override_batch || !d.is_static())) {
        sizes.push_back(batch);
      } else if (d.is_static()) {
        sizes.push_back(d.value);
      } else {
        throw Error(fmt::format(
            "input '{}': dim {} is symbolic ('{}'); give its size (--input-shape {}=…) or data "
            "(--input)",
            input.name, i, d.param, input.name));
      }
    }
    result.push_back(randn(sizes, {}, gen));
  }
  return result;
}

bool OutputDiff::within_model_tolerance() const {
  return max_abs <= kModelTolerance * std::max(1.0, reference_max_abs);
}

OutputDiff compare_outputs(const std::vector<Tensor>& actual,
                           const std::vector<Tensor>& reference) {
  if (actual.size() != reference.size()) {
    throw Error(fmt::format("compare: {} outputs vs {}", actual.size(), reference.size()));
  }
  OutputDiff diff;
  for (std::size_t i = 0; i < actual.size(); ++i) {
    if (actual[i].sizes() != reference[i].sizes()) {
      throw Error(fmt::format("compare: output {} is {}, the reference {}", i,
                              actual[i].description(), reference[i].description()));
    }
    const std::vector<float> a = actual[i].to(DType::Float32).to_vector();
    const std::vector<float> r = reference[i].to(DType::Float32).to_vector();
    for (std::size_t k = 0; k < a.size(); ++k) {
      const double d = std::abs(static_cast<double>(a[k]) - r[k]);
      // NaN on one side only is an infinite error; NaN on both sides agrees.
      const bool nan_a = std::isnan(a[k]), nan_r = std::isnan(r[k]);
      diff.max_abs = std::max(diff.max_abs, nan_a != nan_r ? INFINITY : (nan_a ? 0.0 : d));
      if (!nan_r) diff.reference_max_abs = std::max(diff.reference_max_abs, std::abs(double{r[k]}));
    }
  }
  return diff;
}

double rounding_sensitivity(graph::Graph& graph, const std::vector<Tensor>& inputs,
                            const std::vector<Tensor>& outputs, std::uint64_t seed) {
  Generator gen(seed);
  std::vector<Tensor> moved;
  moved.reserve(inputs.size());
  for (const Tensor& x : inputs) {
    if (!x.defined() || x.dtype() != DType::Float32) {
      moved.push_back(x);
      continue;
    }
    std::vector<float> v = x.to_vector();
    for (float& e : v) e = std::nextafter(e, (gen.next_u64() & 1) != 0 ? INFINITY : -INFINITY);
    moved.push_back(from_values(v, x.sizes()));
  }
  const double delta = compare_outputs(graph.run(moved), outputs).max_abs;
  return std::isfinite(delta) ? delta : 0.0;
}

}  // namespace refold
