// Matrix products through oneDNN's matmul primitive. Weights stay in PyTorch's [N, K] layout and
// are described to oneDNN as the transposed operand (format tag `ba`), so no copy is made.
#include "absl/strings/str_cat.h"
#include "engine/ops/cpu/cpu_ops.h"
#include "engine/ops/cpu/dnnl_context.h"

namespace xlate::cpu {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

dnnl::primitive make_matmul(int64_t rows, int64_t outputs, int64_t inputs, bool bias, bool relu) {
  const auto f32 = memory::data_type::f32;
  const memory::desc bias_desc = bias ? memory::desc({1, outputs}, f32, Tag::ab) : memory::desc();
  dnnl::primitive_attr attributes = scratchpad_attributes();
  if (relu) {
    dnnl::post_ops post;
    post.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
    attributes.set_post_ops(post);
  }
  const dnnl::matmul::desc description(memory::desc({rows, inputs}, f32, Tag::ab),
                                       memory::desc({inputs, outputs}, f32, Tag::ba), bias_desc,
                                       memory::desc({rows, outputs}, f32, Tag::ab));
  return dnnl::matmul(dnnl::matmul::primitive_desc(description, attributes, dnnl_engine()));
}

}  // namespace

void linear_forward(Tensor& out, const Tensor& inp, const Tensor& weight, const Tensor& bias,
                    Activation activation) {
  const int64_t outputs = weight.dim(0), inputs = weight.dim(1);
  const int64_t rows = inp.numel() / inputs;
  if (rows == 0) return;
  const bool relu = activation == Activation::kRelu;
  const dnnl::primitive matmul =
      cached_primitive(absl::StrCat("matmul:", rows, ":", outputs, ":", inputs, ":",
                                    bias.defined(), ":", relu),
                       [&] { return make_matmul(rows, outputs, inputs, bias.defined(), relu); });
  std::unordered_map<int, memory> arguments{
      {DNNL_ARG_SRC, wrap_f32({rows, inputs}, Tag::ab, inp.raw_data())},
      {DNNL_ARG_WEIGHTS, wrap_f32({inputs, outputs}, Tag::ba, weight.raw_data())},
      {DNNL_ARG_DST, wrap_f32({rows, outputs}, Tag::ab, out.raw_data())}};
  if (bias.defined()) arguments.emplace(DNNL_ARG_BIAS, wrap_f32({1, outputs}, Tag::ab, bias.raw_data()));
  execute(matmul, arguments);
}

}  // namespace xlate::cpu
