#include "ops/op.h"

namespace refold::ops {

const std::vector<OpDef>& reduce_ops() {
  static const std::vector<OpDef> table = {};
  return table;
}

}  // namespace refold::ops
