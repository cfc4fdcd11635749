// Which input shapes each re-parameterizable block saw during one forward pass, so that
// refold::reparameterize can count the blocks' FLOPs for a model input shape. A trace is active
// on the current thread while a ShapeTrace object lives; RepBlock::forward records into it.
#pragma once

#include <map>
#include <vector>

#include "refold/tensor.h"

namespace refold::reparam {
class RepBlock;
}

namespace refold::reparam::detail {

class ShapeTrace {
 public:
  ShapeTrace();
  ~ShapeTrace();
  ShapeTrace(const ShapeTrace&) = delete;
  ShapeTrace& operator=(const ShapeTrace&) = delete;

  // Every input shape `block` was called with, in call order (empty when it never ran).
  const std::vector<Shape>& shapes(const RepBlock* block) const;

  // Records into the innermost active trace, if any.
  static void record(const RepBlock* block, const Shape& input);

 private:
  std::map<const RepBlock*, std::vector<Shape>> shapes_;
  ShapeTrace* previous_;
};

}  // namespace refold::reparam::detail
