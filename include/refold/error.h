// refold::Error — the one exception type thrown across the public API.
//
// Message shape (docs/conventions.md rule 9): "<what> '<name>': <problem> (<value>)", for example
//   Conv2d 'features.3': groups (3) must divide in_channels (8)
// The module or node context is prepended once, by the innermost module that sees the error
// (see Module::operator()), so kernels only describe the problem and its values.
#pragma once

#include <stdexcept>
#include <string>

namespace refold {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message), message_(message) {}

  // The message without any context prefix.
  const std::string& message() const { return message_; }
  bool has_context() const { return has_context_; }

  // Returns a copy that reads "<context>: <message>". Only the first context sticks, so the
  // innermost (most specific) module names the error.
  Error with_context(const std::string& context) const {
    if (has_context_) return *this;
    Error e(context + ": " + message_);
    e.message_ = message_;
    e.has_context_ = true;
    return e;
  }

 private:
  std::string message_;
  bool has_context_ = false;
};

}  // namespace refold
