// The layout pass's cost model, for tests that hold it to real runs (tests/passes/layout_test.cpp).
#pragma once

#include <set>
#include <string>

#include "refold/passes/layout.h"

namespace refold::passes {

// The model's prediction when exactly the conv nodes named in `channels_last` have
// channels_last weights and every other conv NCHW ones; throws refold::Error when a name is not
// a conv node.
LayoutPlan evaluate_layout(const graph::Graph& graph, const std::set<std::string>& channels_last);

}  // namespace refold::passes
