// refold's cat (kernels/native/concat.h) against reference::cat: ranks 1–5 along every dim,
// channels_last along N, C, H and W, three inputs, an empty one, non-float dtypes (a byte
// copy), rows of every length the copy moves differently, an output large enough to split over
// threads, 1 and 2 threads; inputs in every other layout (views, an NCHW one beside NHWC ones)
// copied straight into their place; the declines; and that functional::cat (the ONNX Concat
// op's path) runs it.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "kernels/native/concat.h"
#include "kernels/onednn/reorder.h"
#include "kernels/reference/tensor_ops.h"
#include "kernels/verbose.h"
#include "ops/concat.h"
#include "refold/error.h"
#include "refold/functional.h"
#include "refold/reference.h"
#include "refold/threads.h"
#include "testing/compare.h"
#include "testing/layouts.h"
#include "testing/threads.h"

namespace refold {
namespace {

using ::testing::Contains;

struct CatCase {
  std::vector<Shape> inputs;
  std::int64_t dim;
  MemoryFormat format = MemoryFormat::Contiguous;
};

std::vector<CatCase> cat_cases() {
  constexpr auto NHWC = MemoryFormat::ChannelsLast;
  return {
      {{{7}, {3}}, 0},
      {{{3, 5}, {3, 2}, {3, 1}}, 1},
      {{{2, 5}, {4, 5}}, -2},
      {{{2, 3, 4}, {2, 1, 4}}, 1},
      {{{1, 16, 112, 112}, {1, 16, 112, 112}}, 1, NHWC},  // GhostNet's first ghost module
      {{{1, 16, 112, 112}, {1, 16, 112, 112}}, 1},
      {{{2, 3, 5, 4}, {2, 5, 5, 4}, {2, 1, 5, 4}}, 1, NHWC},
      {{{2, 3, 5, 4}, {1, 3, 5, 4}}, 0, NHWC},
      {{{2, 3, 5, 4}, {2, 3, 2, 4}}, 2, NHWC},
      {{{2, 3, 5, 4}, {2, 3, 5, 7}}, -1, NHWC},
      {{{2, 3, 5, 4}, {2, 0, 5, 4}, {2, 2, 5, 4}}, 1, NHWC},  // an empty input
      {{{1, 2, 3, 4, 5}, {1, 2, 3, 1, 5}}, 3},
      // Rows of every length copy_row moves differently (4 to 68 bytes), over more pixels than
      // one block of rows.
      {{{1, 1, 23, 13},
        {1, 2, 23, 13},
        {1, 3, 23, 13},
        {1, 5, 23, 13},
        {1, 9, 23, 13},
        {1, 17, 23, 13}},
       1,
       NHWC},
  };
}

class NativeCat : public ::testing::Test {
 private:
  testing::RestoreNumThreads restore_threads_;
};

TEST_F(NativeCat, MatchesTheReferenceExactly) {
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    for (const CatCase& c : cat_cases()) {
      Generator gen(5);
      std::vector<Tensor> inputs;
      for (const Shape& s : c.inputs)
        inputs.push_back(testing::laid_out(randn(s, {}, gen), c.format));
      // What functional::cat hands it: the inputs in the output's layout (an empty one, whose
      // layout is ambiguous, makes that contiguous).
      const MemoryFormat format = reference::cat_output_format(inputs);
      for (Tensor& t : inputs)
        if (t.numel() > 0) t = t.contiguous(format);
      SCOPED_TRACE(fmt::format("{} inputs, first [{}], dim {}, {}, {} threads", inputs.size(),
                               fmt::join(c.inputs[0], ", "), c.dim,
                               c.format == MemoryFormat::ChannelsLast ? "NHWC" : "contiguous",
                               threads));
      std::string declined;
      const Tensor y = native::cat(inputs, c.dim, &declined);
      ASSERT_TRUE(y.defined()) << declined;
      const Tensor expected = reference::cat(inputs, c.dim);
      EXPECT_EQ(y.sizes(), expected.sizes());
      EXPECT_EQ(y.strides(), expected.strides());
      EXPECT_TRUE(testing::all_close(y, expected, testing::Tolerance::exact()));
    }
  }
}

// split is cat's inverse: the concatenation of every case cut at the inputs' lengths gives the
// inputs back, bit for bit, each dense in the concatenation's layout.
TEST_F(NativeCat, SplitUndoesIt) {
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    for (const CatCase& c : cat_cases()) {
      Generator gen(6);
      std::vector<Tensor> inputs;
      for (const Shape& s : c.inputs)
        inputs.push_back(testing::laid_out(randn(s, {}, gen), c.format));
      const Tensor whole = testing::laid_out(reference::cat(inputs, c.dim), c.format);
      const std::int64_t d = c.dim < 0 ? c.dim + whole.dim() : c.dim;
      std::vector<std::int64_t> lengths;
      for (const Tensor& t : inputs) lengths.push_back(t.size(d));
      SCOPED_TRACE(fmt::format("[{}] dim {} lengths [{}], {} threads",
                               fmt::join(whole.sizes(), ", "), c.dim, fmt::join(lengths, ", "),
                               threads));
      std::string declined;
      const std::vector<Tensor> pieces = native::split(whole, c.dim, lengths, &declined);
      ASSERT_EQ(pieces.size(), inputs.size());
      for (std::size_t k = 0; k < pieces.size(); ++k) {
        ASSERT_TRUE(pieces[k].defined()) << declined;
        EXPECT_EQ(pieces[k].sizes(), inputs[k].sizes());
        const bool nhwc = !whole.is_contiguous();
        EXPECT_TRUE(
            pieces[k].is_contiguous(nhwc ? MemoryFormat::ChannelsLast : MemoryFormat::Contiguous));
        EXPECT_TRUE(testing::all_close(pieces[k], inputs[k], testing::Tolerance::exact()));
      }
    }
  }
  std::string declined;
  const Tensor strided = randn({4, 6}).permute({1, 0});
  EXPECT_FALSE(native::split(strided, 0, {3, 3}, &declined)[0].defined());
  EXPECT_EQ(declined, "x is not dense");
}

// The Split op runs it: a channel split of an NHWC tensor, and the reference's slices where x is
// not dense.
TEST_F(NativeCat, SplitNodesRunIt) {
  ops::Split split(1, 2, std::vector<std::int64_t>{5, 7}, false);
  const Tensor x = randn({1, 12, 5, 5}).contiguous(MemoryFormat::ChannelsLast);
  for (const Tensor& input : {x, x.as_strided({1, 12, 5, 4}, x.strides(), 0)}) {
    DispatchLog log;
    const std::vector<Tensor> pieces = split.run({input});
    ASSERT_EQ(pieces.size(), 2u);
    EXPECT_THAT(log.take(),
                Contains(input.numel() == x.numel() ? "split: native" : "split: reference"));
    EXPECT_TRUE(testing::all_close(reference::cat(pieces, 1), input, testing::Tolerance::exact()));
  }
}

// A byte copy: int64 and bfloat16 tensors are joined as they are.
TEST_F(NativeCat, CopiesAnyDtype) {
  auto counting = [](const Shape& sizes) {  // 0, 1, 2, … in int64
    Tensor t = empty(sizes, {DType::Int64});
    for (std::int64_t i = 0; i < t.numel(); ++i) t.data<std::int64_t>()[i] = i;
    return t;
  };
  const Tensor a = counting({2, 3});
  const Tensor b = counting({2, 2});
  std::string declined;
  const Tensor y = native::cat({a, b}, 1, &declined);
  ASSERT_TRUE(y.defined()) << declined;
  EXPECT_EQ(y.sizes(), (Shape{2, 5}));
  const std::int64_t* v = y.data<std::int64_t>();
  EXPECT_EQ(std::vector<std::int64_t>(v, v + 10),
            (std::vector<std::int64_t>{0, 1, 2, 0, 1, 3, 4, 5, 2, 3}));
  Generator gen(2);
  const Tensor h = randn({1, 4, 3, 3}, {}, gen).to(DType::BFloat16);
  const Tensor joined = native::cat({h, h}, 1, &declined);
  ASSERT_TRUE(joined.defined()) << declined;
  EXPECT_TRUE(testing::all_close(joined, reference::cat({h, h}, 1), testing::Tolerance::exact()));
}

// Inputs in every layout of testing::conv_layouts (NCHW beside NHWC, a dense permutation,
// windows of NaN-filled buffers: a value read from outside its window shows), one input at a
// time: the same values as the reference, with or without `place`; what `place` is handed is
// the output's view of an input's size.
TEST_F(NativeCat, JoinsInputsInAnyLayout) {
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    for (const CatCase& c : cat_cases()) {
      if (c.inputs[0].size() != 4) continue;
      Generator gen(7);
      std::vector<Tensor> dense_inputs;
      for (const Shape& s : c.inputs)
        dense_inputs.push_back(testing::laid_out(randn(s, {}, gen), c.format));
      for (std::size_t k = 0; k < dense_inputs.size(); ++k) {
        if (dense_inputs[k].numel() == 0) continue;
        for (const auto& [name, laid, suggests] : testing::conv_layouts(dense_inputs[k])) {
          std::vector<Tensor> inputs = dense_inputs;
          inputs[k] = laid;
          const Tensor expected = reference::cat(inputs, c.dim);
          SCOPED_TRACE(fmt::format("[{}] dim {}, input {} {}, {} threads",
                                   fmt::join(c.inputs[0], ", "), c.dim, k, name, threads));
          std::string declined;
          const Tensor copied = native::cat(inputs, c.dim, &declined);
          ASSERT_TRUE(copied.defined()) << declined;
          EXPECT_EQ(copied.strides(), expected.strides());
          EXPECT_TRUE(testing::all_close(copied, expected, testing::Tolerance::exact()));
          const Tensor y =
              native::cat(inputs, c.dim, &declined, [&](const Tensor& input, Tensor& dst) {
                EXPECT_TRUE(std::any_of(inputs.begin(), inputs.end(),
                                        [&](const Tensor& t) { return t.is_same(input); }));
                EXPECT_EQ(dst.sizes(), input.sizes());
                dst.copy_(input);
              });
          ASSERT_TRUE(y.defined()) << declined;
          EXPECT_TRUE(testing::all_close(y, expected, testing::Tolerance::exact()));
        }
      }
    }
  }
}

// A slice whose memory holds the rows the copy moves, only further apart, is copied as rows
// (an NHWC channel slice, YOLO's C2f halves; torch.roll's slices along W); a view whose memory
// order differs from the output's (a head's NHWC maps read as [N, C, H·W], an NHWC input
// beside an NCHW one) goes to `place`, once.
TEST_F(NativeCat, CopiesSlicesAsRowsAndPlacesTheRest) {
  Generator gen(8);
  const Tensor wide = randn({1, 12, 5, 5}, {}, gen).contiguous(MemoryFormat::ChannelsLast);
  const Tensor channels = wide.as_strided({1, 6, 5, 5}, wide.strides(), 2);
  const Tensor tokens = randn({1, 6, 6, 4}, {}, gen);
  const Tensor nhwc_map = randn({1, 6, 4, 4}, {}, gen).contiguous(MemoryFormat::ChannelsLast);
  struct Case {
    std::string name;
    std::vector<Tensor> inputs;
    std::int64_t dim;
    std::size_t placed;
  };
  const std::vector<Case> cases = {
      {"channel slice",
       {channels, randn({1, 4, 5, 5}).contiguous(MemoryFormat::ChannelsLast)},
       1,
       0},
      {"roll along W",
       {tokens.as_strided({1, 6, 2, 4}, tokens.strides(), 16),
        tokens.as_strided({1, 6, 4, 4}, tokens.strides(), 0)},
       2,
       0},
      {"head maps", {nhwc_map.view({1, 6, 16}), randn({1, 6, 8})}, 2, 1},
      {"NHWC beside NCHW", {nhwc_map, randn({1, 2, 4, 4})}, 1, 1},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::size_t placed = 0;
    std::string declined;
    const Tensor y = native::cat(c.inputs, c.dim, &declined, [&](const Tensor& in, Tensor& dst) {
      ++placed;
      dst.copy_(in);
    });
    ASSERT_TRUE(y.defined()) << declined;
    EXPECT_EQ(placed, c.placed);
    EXPECT_TRUE(
        testing::all_close(y, reference::cat(c.inputs, c.dim), testing::Tolerance::exact()));
  }
}

TEST_F(NativeCat, DeclinesWithAReason) {
  std::string why;
  // What is wrong goes to the reference, which names the problem.
  EXPECT_FALSE(native::cat({zeros({2, 3}), zeros({3, 3})}, 1, &why).defined());
  EXPECT_EQ(why, "sizes the reference reports");
  EXPECT_FALSE(native::cat({zeros({2, 3}), zeros({2, 3}, {DType::Int64})}, 0, &why).defined());
  EXPECT_FALSE(native::cat({zeros({2, 3})}, 2, &why).defined());
  EXPECT_THROW(functional::cat({zeros({2, 3}), zeros({3, 3})}, 1), Error);
}

// functional::cat copies an input of another layout straight into the output (contiguous
// unless every input is channels_last) — a large one by a oneDNN reorder, counted as the seed's
// permute — and the others by the native row copy; invalid calls get the reference's messages.
TEST_F(NativeCat, FunctionalCatLaysOutMixedInputsAndNamesBadOnes) {
  const Tensor a = randn({1, 3, 4, 4});
  const Tensor b = randn({1, 5, 4, 4}).contiguous(MemoryFormat::ChannelsLast);
  DispatchLog log;
  const Tensor mixed = functional::cat({a, b}, 1);
  EXPECT_THAT(log.take(), Contains("cat: native"));
  EXPECT_TRUE(mixed.is_contiguous());
  EXPECT_TRUE(testing::all_close(mixed, reference::cat({a, b}, 1), testing::Tolerance::exact()));
  // A channel shuffle's halves, one NCHW and one NHWC, large enough for the reorder.
  const Tensor nchw = randn({1, 58, 28, 28});
  const Tensor nhwc = randn({1, 58, 28, 28}).contiguous(MemoryFormat::ChannelsLast);
  const auto reorders = onednn::reorder_stats().runs;
  reset_permute_count();
  const Tensor shuffled = functional::cat({nhwc, nchw}, 1);
  EXPECT_EQ(onednn::reorder_stats().runs, reorders + 1);
  EXPECT_EQ(permute_count(), 1u);
  EXPECT_TRUE(shuffled.is_contiguous());
  EXPECT_TRUE(
      testing::all_close(shuffled, reference::cat({nhwc, nchw}, 1), testing::Tolerance::exact()));
  try {
    functional::cat({a, randn({1, 3, 5, 4})}, 1);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cat: input 1 has shape [1, 3, 5, 4]"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(functional::cat({}, 0), Error);
}

TEST_F(NativeCat, TheDispatchRunsIt) {
  DispatchLog log;
  const Tensor x = zeros({1, 4, 5, 5}).contiguous(MemoryFormat::ChannelsLast);
  const Tensor y = functional::cat({x, x}, 1);
  EXPECT_TRUE(y.is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_THAT(log.take(), Contains("cat: native"));
}

}  // namespace
}  // namespace refold
