// One PyTorch golden (tests/data/goldens/*.safetensors, written by tests/data/make_goldens.py):
// its tensors and its __metadata__ options, read strictly. Every accessor throws GoldenError
// naming the file and the key when something is missing or malformed, so a golden that lacks
// what its op needs fails its test instead of quietly testing less. The formats (documented in
// make_goldens.py): a pair is "h,w"; conv padding is "same", "valid", "h,w" or
// "top,left,bottom,right"; booleans are "1"/"0"; lists are comma-separated.
#pragma once

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "refold/io/safetensors.h"
#include "refold/op_options.h"
#include "refold/state_dict.h"
#include "refold/tensor.h"

namespace refold::golden {

class GoldenError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The golden files, sorted by name (empty when the directory is missing).
inline std::vector<std::filesystem::path> golden_files(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".safetensors") files.push_back(it->path());
  std::sort(files.begin(), files.end());
  return files;
}

class GoldenCase {
 public:
  explicit GoldenCase(const std::filesystem::path& path)
      : name_(path.filename().string()), file_(io::read_safetensors_file(path)) {}

  const std::string& name() const { return name_; }
  const std::string& op() const { return meta("op"); }
  DType dtype() const {
    const std::string& d = meta("dtype");
    if (d == "float32") return DType::Float32;
    if (d == "bfloat16") return DType::BFloat16;
    throw error("dtype", "unknown dtype '" + d + "'");
  }

  // --- tensors. Each one read is remembered, so unused_tensors() can name what a test skipped.
  bool has_tensor(const std::string& key) const { return file_.tensors.contains(key); }
  Tensor tensor(const std::string& key) const {
    const Tensor* t = file_.tensors.find(key);
    if (t == nullptr) throw error(key, "tensor missing");
    used_.insert(key);
    return *t;
  }
  // A tensor whose presence a boolean option decides (conv `bias`, batch_norm `affine`):
  // required when the option is "1", forbidden when "0"; undefined when absent.
  Tensor optional_tensor(const std::string& key, const std::string& flag_key) const {
    if (flag(flag_key)) return tensor(key);
    if (has_tensor(key)) throw error(key, "present although " + flag_key + " is 0");
    return {};
  }
  // Every tensor except the op's inputs and the expected output: the parameters and buffers,
  // under their state_dict names.
  StateDict parameters() const {
    StateDict state;
    for (const auto& [key, t] : file_.tensors)
      if (key != "input" && key != "input2" && key != "output") {
        used_.insert(key);
        state.insert(key, t);
      }
    return state;
  }
  std::vector<std::string> unused_tensors() const {
    std::vector<std::string> unused;
    for (const auto& [key, t] : file_.tensors)
      if (!used_.contains(key)) unused.push_back(key);
    return unused;
  }

  // --- metadata
  std::optional<std::string> find_meta(const std::string& key) const {
    auto it = file_.metadata.find(key);
    if (it == file_.metadata.end()) return std::nullopt;
    return it->second;
  }
  const std::string& meta(const std::string& key) const {
    auto it = file_.metadata.find(key);
    if (it == file_.metadata.end()) throw error(key, "metadata missing");
    return it->second;
  }
  bool flag(const std::string& key) const {
    const std::string& v = meta(key);
    if (v != "0" && v != "1") throw error(key, "expected \"0\" or \"1\", got '" + v + "'");
    return v == "1";
  }
  std::int64_t integer(const std::string& key) const { return parse_int(key, meta(key)); }
  double number(const std::string& key) const {
    const std::string& v = meta(key);
    try {
      std::size_t used = 0;
      const double d = std::stod(v, &used);
      if (used == v.size()) return d;
    } catch (const std::exception&) {
    }
    throw error(key, "not a number: '" + v + "'");
  }
  std::vector<std::int64_t> ints(const std::string& key) const {
    std::vector<std::int64_t> values;
    std::string_view rest = meta(key);
    while (true) {
      const auto comma = rest.find(',');
      values.push_back(parse_int(key, rest.substr(0, comma)));
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
    return values;
  }
  Size2d pair(const std::string& key) const {
    const std::vector<std::int64_t> v = ints(key);
    if (v.size() != 2) throw error(key, "expected \"h,w\", got '" + meta(key) + "'");
    return {v[0], v[1]};
  }
  std::optional<Size2d> optional_pair(const std::string& key) const {
    if (!find_meta(key)) return std::nullopt;
    return pair(key);
  }
  // "same", "valid", "h,w" or "top,left,bottom,right".
  Padding2d conv_padding() const {
    const std::string& v = meta("padding");
    if (v == "same") return Padding2d::same();
    if (v == "valid") return Padding2d::valid();
    const std::vector<std::int64_t> p = ints("padding");
    if (p.size() == 2) return Padding2d(p[0], p[1]);
    if (p.size() == 4) return Padding2d::asymmetric(p[0], p[1], p[2], p[3]);
    throw error("padding", "expected same, valid, h,w or t,l,b,r; got '" + v + "'");
  }

  GoldenError error(const std::string& key, const std::string& problem) const {
    return GoldenError("golden " + name_ + ": '" + key + "': " + problem);
  }

 private:
  std::int64_t parse_int(const std::string& key, std::string_view text) const {
    std::int64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end != text.data() + text.size() || text.empty())
      throw error(key, "not an integer: '" + std::string(text) + "'");
    return value;
  }

  std::string name_;
  io::SafetensorsFile file_;
  mutable std::set<std::string> used_;
};

}  // namespace refold::golden
