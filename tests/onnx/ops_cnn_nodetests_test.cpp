// The ONNX backend node tests of the CNN ops (Debian's libonnx-testdata): each model is loaded
// with onnx::load, run on test_data_set_0's inputs and compared with every one of its outputs
// (BatchNormalization's training mode too). Skipped when the data is not installed.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "refold/error.h"
#include "refold/onnx/onnx.h"
#include "testing/compare.h"

namespace refold {
namespace {

namespace fs = std::filesystem;

const fs::path kNodeTests = "/usr/share/libonnx-testdata/data/node";

// Runs one node test; returns "" on success, else what went wrong.
std::string run_node_test(const std::string& name) {
  const fs::path dir = kNodeTests / name;
  auto graph = onnx::load(dir / "model.onnx");
  std::vector<Tensor> inputs, expected;
  for (std::size_t i = 0;; ++i) {
    const fs::path p = dir / "test_data_set_0" / ("input_" + std::to_string(i) + ".pb");
    if (!fs::exists(p)) break;
    inputs.push_back(onnx::load_tensor(p));
  }
  for (std::size_t i = 0;; ++i) {
    const fs::path p = dir / "test_data_set_0" / ("output_" + std::to_string(i) + ".pb");
    if (!fs::exists(p)) break;
    expected.push_back(onnx::load_tensor(p));
  }
  const std::vector<Tensor> outputs = graph->run(inputs);
  if (outputs.size() != expected.size()) return "output count differs";
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].dtype() != expected[i].dtype()) return "output dtype differs";
    auto close = testing::all_close(outputs[i], expected[i], testing::Tolerance::op_f32());
    if (!close) return close.message();
  }
  return "";
}

// Left out: the tests stored at opsets the loader refuses (< 11): test_convtranspose_with_kernel
// (8), test_globalaveragepool* (1), test_hardsigmoid* (6).
const std::vector<std::string> kPassing = {
    "test_basic_conv_with_padding",
    "test_basic_conv_without_padding",
    "test_conv_with_autopad_same",
    "test_conv_with_strides_and_asymmetric_padding",
    "test_conv_with_strides_no_padding",
    "test_conv_with_strides_padding",
    "test_convtranspose",
    "test_convtranspose_autopad_same",
    "test_convtranspose_dilations",
    "test_convtranspose_kernel_shape",
    "test_convtranspose_output_shape",
    "test_convtranspose_pad",
    "test_convtranspose_pads",
    "test_batchnorm_epsilon",
    "test_batchnorm_example",
    "test_averagepool_2d_ceil",
    "test_averagepool_2d_default",
    "test_averagepool_2d_pads",
    "test_averagepool_2d_pads_count_include_pad",
    "test_averagepool_2d_precomputed_pads",
    "test_averagepool_2d_precomputed_pads_count_include_pad",
    "test_averagepool_2d_precomputed_same_upper",
    "test_averagepool_2d_precomputed_strides",
    "test_averagepool_2d_same_lower",
    "test_averagepool_2d_same_upper",
    "test_averagepool_2d_strides",
    "test_maxpool_2d_ceil",
    "test_maxpool_2d_default",
    "test_maxpool_2d_dilations",
    "test_maxpool_2d_pads",
    "test_maxpool_2d_precomputed_pads",
    "test_maxpool_2d_precomputed_same_upper",
    "test_maxpool_2d_precomputed_strides",
    "test_maxpool_2d_same_lower",
    "test_maxpool_2d_same_upper",
    "test_maxpool_2d_strides",
    "test_relu",
    "test_leakyrelu",
    "test_leakyrelu_default",
    "test_leakyrelu_example",
    "test_sigmoid",
    "test_sigmoid_example",
    "test_hardswish",
    "test_clip",
    "test_clip_default_inbounds",
    "test_clip_default_max",
    "test_clip_default_min",
    "test_clip_example",
    "test_clip_inbounds",
    "test_clip_outbounds",
    "test_clip_splitbounds",
    "test_add",
    "test_add_bcast",
    "test_sub",
    "test_sub_bcast",
    "test_sub_example",
    "test_mul",
    "test_mul_bcast",
    "test_mul_example",
    "test_div",
    "test_div_bcast",
    "test_div_example",
    "test_gemm_all_attributes",
    "test_gemm_alpha",
    "test_gemm_beta",
    "test_gemm_default_matrix_bias",
    "test_gemm_default_no_bias",
    "test_gemm_default_scalar_bias",
    "test_gemm_default_single_elem_vector_bias",
    "test_gemm_default_vector_bias",
    "test_gemm_default_zero_bias",
    "test_gemm_transposeA",
    "test_gemm_transposeB",
    "test_matmul_2d",
    "test_matmul_3d",
    "test_matmul_4d",
    "test_constant_pad",
    "test_identity",
    "test_averagepool_1d_default",
    "test_averagepool_3d_default",
    "test_maxpool_1d_default",
    "test_maxpool_3d_default",
    "test_convtranspose_1d",
    "test_convtranspose_3d",
    "test_maxpool_with_argmax_2d_precomputed_pads",
    "test_maxpool_with_argmax_2d_precomputed_strides",
    "test_edge_pad",
    "test_reflect_pad",
    // training_mode=1: the batch's own statistics, and both running-statistics outputs.
    "test_batchnorm_example_training_mode",
    "test_batchnorm_epsilon_training_mode",
};

class OnnxNodeTests : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kNodeTests)) GTEST_SKIP() << kNodeTests << " is not installed";
  }
};

TEST_F(OnnxNodeTests, CnnOpsMatchTheExpectedOutputs) {
  for (const std::string& name : kPassing) {
    SCOPED_TRACE(name);
    std::string problem;
    try {
      problem = run_node_test(name);
    } catch (const Error& e) {
      problem = e.what();
    }
    EXPECT_EQ(problem, "");
  }
}

}  // namespace
}  // namespace refold
