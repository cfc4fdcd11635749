// Builds a refold nn module from the JSON layer list that tests/data/make_goldens.py stores in a
// golden's `layers` metadata — the same list the script turned into a torch.nn.Sequential:
//   [{"type": "Conv2d", "in_channels": 8, "out_channels": 4, "kernel_size": 3}, ...]
// Keys are the PyTorch constructor's keyword arguments; an absent key means PyTorch's default.
// A key this builder does not use is an error (GoldenError), so a golden can never describe a
// layer that the C++ side silently builds differently.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "golden/golden_case.h"
#include "refold/nn/activation.h"
#include "refold/nn/basic.h"
#include "refold/nn/batchnorm.h"
#include "refold/nn/container.h"
#include "refold/nn/conv.h"
#include "refold/nn/linear.h"
#include "refold/nn/pooling.h"

namespace refold::golden {

// One layer's JSON object; remembers which keys were read.
class LayerSpec {
 public:
  LayerSpec(const nlohmann::json& json, std::string where) : json_(json), where_(std::move(where)) {
    if (!json_.is_object()) throw error("layer is not a JSON object");
  }

  std::string type() { return string("type"); }
  bool has(const std::string& key) const { return json_.contains(key); }

  std::string string(const std::string& key) {
    const nlohmann::json& v = get(key);
    if (!v.is_string()) throw error("'" + key + "' is not a string");
    return v.get<std::string>();
  }
  std::int64_t integer(const std::string& key, std::int64_t fallback) {
    if (!has(key)) return fallback;
    const nlohmann::json& v = get(key);
    if (!v.is_number_integer()) throw error("'" + key + "' is not an integer");
    return v.get<std::int64_t>();
  }
  std::int64_t integer(const std::string& key) {
    get(key);
    return integer(key, 0);
  }
  double number(const std::string& key, double fallback) {
    if (!has(key)) return fallback;
    const nlohmann::json& v = get(key);
    if (!v.is_number()) throw error("'" + key + "' is not a number");
    return v.get<double>();
  }
  bool boolean(const std::string& key, bool fallback) {
    if (!has(key)) return fallback;
    const nlohmann::json& v = get(key);
    if (!v.is_boolean()) throw error("'" + key + "' is not a boolean");
    return v.get<bool>();
  }
  // An int (both) or [h, w], like PyTorch's `int or tuple`.
  std::optional<Size2d> size2d(const std::string& key) {
    if (!has(key)) return std::nullopt;
    const nlohmann::json& v = get(key);
    if (v.is_number_integer()) return Size2d(v.get<std::int64_t>());
    if (v.is_array() && v.size() == 2 && v[0].is_number_integer() && v[1].is_number_integer())
      return Size2d(v[0].get<std::int64_t>(), v[1].get<std::int64_t>());
    throw error("'" + key + "' is not an int or [h, w]");
  }
  Size2d size2d(const std::string& key, Size2d fallback) { return size2d(key).value_or(fallback); }
  Size2d required_size2d(const std::string& key) {
    if (!has(key)) throw error("'" + key + "' missing");
    return *size2d(key);
  }
  // Conv2d's padding: an int, [h, w], "same" or "valid".
  Padding2d conv_padding() {
    if (has("padding") && get("padding").is_string()) {
      const std::string p = string("padding");
      if (p == "same") return Padding2d::same();
      if (p == "valid") return Padding2d::valid();
      throw error("unknown padding '" + p + "'");
    }
    return Padding2d(size2d("padding", 0));
  }
  const nlohmann::json& array(const std::string& key) {
    const nlohmann::json& v = get(key);
    if (!v.is_array()) throw error("'" + key + "' is not an array");
    return v;
  }

  void check_all_used() const {
    for (const auto& [key, value] : json_.items())
      if (!used_.contains(key)) throw error("key '" + key + "' is not supported by the builder");
  }
  GoldenError error(const std::string& problem) const {
    return GoldenError("layer " + where_ + ": " + problem);
  }

 private:
  const nlohmann::json& get(const std::string& key) {
    if (!has(key)) throw error("'" + key + "' missing");
    used_.insert(key);
    return json_.at(key);
  }

  const nlohmann::json& json_;
  std::string where_;
  std::set<std::string> used_;
};

inline nn::ModulePtr build_module(const nlohmann::json& json, const std::string& where);

inline std::shared_ptr<nn::Sequential> build_sequential(const nlohmann::json& layers,
                                                        const std::string& where) {
  if (!layers.is_array()) throw GoldenError("layer " + where + ": layers is not a JSON array");
  auto sequential = std::make_shared<nn::Sequential>();
  for (std::size_t i = 0; i < layers.size(); ++i)
    sequential->push_back(build_module(layers[i], where + "." + std::to_string(i)));
  return sequential;
}

inline nn::ModulePtr build_module(const nlohmann::json& json, const std::string& where) {
  LayerSpec spec(json, where);
  const std::string type = spec.type();
  nn::ModulePtr module;
  if (type == "Sequential") {
    module = build_sequential(spec.array("layers"), where);
  } else if (type == "Conv2d") {
    nn::Conv2dOptions o(spec.integer("in_channels"), spec.integer("out_channels"),
                        spec.required_size2d("kernel_size"));
    o.stride(spec.size2d("stride", 1))
        .padding(spec.conv_padding())
        .dilation(spec.size2d("dilation", 1))
        .groups(spec.integer("groups", 1))
        .bias(spec.boolean("bias", true));
    module = std::make_shared<nn::Conv2d>(o);
  } else if (type == "ConvTranspose2d") {
    nn::ConvTranspose2dOptions o(spec.integer("in_channels"), spec.integer("out_channels"),
                                 spec.required_size2d("kernel_size"));
    o.stride(spec.size2d("stride", 1))
        .padding(spec.size2d("padding", 0))
        .output_padding(spec.size2d("output_padding", 0))
        .groups(spec.integer("groups", 1))
        .bias(spec.boolean("bias", true))
        .dilation(spec.size2d("dilation", 1));
    module = std::make_shared<nn::ConvTranspose2d>(o);
  } else if (type == "BatchNorm2d") {
    nn::BatchNorm2dOptions o(spec.integer("num_features"));
    o.eps(spec.number("eps", 1e-5)).affine(spec.boolean("affine", true));
    module = std::make_shared<nn::BatchNorm2d>(o);
  } else if (type == "ReLU") {
    module = std::make_shared<nn::ReLU>();
  } else if (type == "ReLU6") {
    module = std::make_shared<nn::ReLU6>();
  } else if (type == "LeakyReLU") {
    module = std::make_shared<nn::LeakyReLU>(
        nn::LeakyReLUOptions().negative_slope(spec.number("negative_slope", 0.01)));
  } else if (type == "Sigmoid") {
    module = std::make_shared<nn::Sigmoid>();
  } else if (type == "SiLU") {
    module = std::make_shared<nn::SiLU>();
  } else if (type == "Hardswish") {
    module = std::make_shared<nn::Hardswish>();
  } else if (type == "Hardsigmoid") {
    module = std::make_shared<nn::Hardsigmoid>();
  } else if (type == "Identity") {
    module = std::make_shared<nn::Identity>();
  } else if (type == "Flatten") {
    module = std::make_shared<nn::Flatten>(nn::FlattenOptions()
                                               .start_dim(spec.integer("start_dim", 1))
                                               .end_dim(spec.integer("end_dim", -1)));
  } else if (type == "PixelShuffle") {
    module = std::make_shared<nn::PixelShuffle>(spec.integer("upscale_factor"));
  } else if (type == "MaxPool2d") {
    nn::MaxPool2dOptions o(spec.required_size2d("kernel_size"));
    if (auto stride = spec.size2d("stride")) o.stride(*stride);
    o.padding(spec.size2d("padding", 0))
        .dilation(spec.size2d("dilation", 1))
        .ceil_mode(spec.boolean("ceil_mode", false));
    module = std::make_shared<nn::MaxPool2d>(o);
  } else if (type == "AvgPool2d") {
    nn::AvgPool2dOptions o(spec.required_size2d("kernel_size"));
    if (auto stride = spec.size2d("stride")) o.stride(*stride);
    o.padding(spec.size2d("padding", 0))
        .ceil_mode(spec.boolean("ceil_mode", false))
        .count_include_pad(spec.boolean("count_include_pad", true));
    if (spec.has("divisor_override")) o.divisor_override(spec.integer("divisor_override"));
    module = std::make_shared<nn::AvgPool2d>(o);
  } else if (type == "AdaptiveAvgPool2d") {
    module = std::make_shared<nn::AdaptiveAvgPool2d>(spec.required_size2d("output_size"));
  } else if (type == "Linear") {
    module = std::make_shared<nn::Linear>(
        nn::LinearOptions(spec.integer("in_features"), spec.integer("out_features"))
            .bias(spec.boolean("bias", true)));
  } else {
    throw spec.error("unknown layer type '" + type + "'");
  }
  spec.check_all_used();
  return module;
}

// The nn.Sequential a golden's `layers` metadata (a JSON array) describes.
inline std::shared_ptr<nn::Sequential> build_model(const GoldenCase& c) {
  const nlohmann::json layers = nlohmann::json::parse(c.meta("layers"), nullptr,
                                                      /*allow_exceptions=*/false);
  if (layers.is_discarded()) throw c.error("layers", "not valid JSON");
  return build_sequential(layers, "model");
}

}  // namespace refold::golden
