// Float32 matrix products through oneDNN's matmul primitive, and the op bodies of packed
// weights (their int8 half is quantized_linear_cpu.cc). linear_forward reads a weight in
// PyTorch's [N, K] layout, described to oneDNN as the transposed operand (format tag `ba`), so
// no copy is made: the trainer multiplies by weights that change every step. An inference
// model's weights are packed once instead (pack_linear_weight), into the blocked layout the
// matmul asks for: oneDNN's AVX-512 matmul otherwise copies a `ba` weight into that layout on
// every call, which took 8-25% of a decoding product's time at 85-128 rows and half of it at 8
// rows (AMD EPYC, oneDNN 2.6; a decoding step has 1-128 rows).
#include <functional>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "engine/ops/cpu/cpu_ops.h"
#include "engine/ops/cpu/bfloat16_matmul.h"
#include "engine/ops/cpu/dnnl_context.h"
#include "engine/ops/cpu/product_inputs.h"
#include "engine/ops/cpu/widened_op.h"

namespace xlate::cpu {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;
constexpr auto kF32 = memory::data_type::f32;

// A packed weight's elements as oneDNN names them: f32, or bf16 (compute type bfloat16).
memory::data_type element_type(DType element) {
  return element == DType::kBFloat16 ? memory::data_type::bf16 : kF32;
}

// out[rows, outputs] = inp[rows, inputs] · weight (+ bias)(, ReLU), the weight [inputs, outputs]
// as `weight` describes it: plain `ba` or packed; inp of `source` type (f32, or bf16 to multiply
// by bf16 weights), out float32.
dnnl::primitive make_matmul(int64_t rows, int64_t outputs, int64_t inputs,
                            const memory::desc& weight, bool bias, Activation activation,
                            memory::data_type source) {
  const memory::desc bias_desc = bias ? memory::desc({1, outputs}, kF32, Tag::ab) : memory::desc();
  dnnl::primitive_attr attributes = scratchpad_attributes();
  if (activation != Activation::kNone) {
    // oneDNN's swish is x·sigmoid(alpha·x): alpha 1. gelu_erf is the exact GELU.
    const dnnl::algorithm algorithm = activation == Activation::kRelu
                                          ? dnnl::algorithm::eltwise_relu
                                          : activation == Activation::kSwish
                                                ? dnnl::algorithm::eltwise_swish
                                                : dnnl::algorithm::eltwise_gelu_erf;
    dnnl::post_ops post;
    post.append_eltwise(1.f, algorithm, activation == Activation::kSwish ? 1.f : 0.f, 0.f);
    attributes.set_post_ops(post);
  }
  const dnnl::matmul::desc description(memory::desc({rows, inputs}, source, Tag::ab), weight,
                                       bias_desc, memory::desc({rows, outputs}, kF32, Tag::ab));
  return dnnl::matmul(dnnl::matmul::primitive_desc(description, attributes, dnnl_engine()));
}

// The packed layout of a float32 weight [N, K]: the one oneDNN's matmul chooses when asked for
// any. It depends on N, K and the processor, not on the rows M (checked for M from 1 to 8,192,
// with and without bias and ReLU); products name it explicitly, so one of another M would still
// read it right.
memory::desc packed_weight_desc(int64_t outputs, int64_t inputs, memory::data_type element) {
  constexpr int64_t kRows = 64;
  const dnnl::matmul::desc description(memory::desc({kRows, inputs}, element, Tag::ab),
                                       memory::desc({inputs, outputs}, element, Tag::any),
                                       memory::desc({kRows, outputs}, kF32, Tag::ab));
  return dnnl::matmul::primitive_desc(description, scratchpad_attributes(), dnnl_engine())
      .weights_desc();
}

// out[rows, outputs] = act(inp · weight (+ bias)) with the weight [inputs, outputs] laid out
// as weight_desc() says (asked only when this shape's primitive is made: finding the packed
// layout costs as much as making a primitive). A bfloat16 weight multiplies a bfloat16 copy of
// the float32 inp.
void multiply(Tensor& out, const Tensor& inp, const std::function<memory::desc()>& weight_desc,
              const void* weight, const char* weight_kind, int64_t outputs, int64_t inputs,
              const Tensor& bias, Activation activation,
              memory::data_type source = memory::data_type::f32) {
  const int64_t all_rows = inp.numel() / inputs;
  const Tensor rows_in = source == memory::data_type::bf16 ? inp.to_dtype(DType::kBFloat16) : inp;
  const char* x = static_cast<const char*>(rows_in.raw_data());
  const int64_t row_bytes = inputs * static_cast<int64_t>(dtype_size(rows_in.dtype()));
  float* y = out.data<float>();
  for_row_chunks(all_rows, [&](int64_t first, int64_t rows) {
    const dnnl::primitive matmul = cached_primitive(
        absl::StrCat(weight_kind, ":", rows, ":", outputs, ":", inputs, ":", bias.defined(), ":",
                     static_cast<int>(activation), ":", static_cast<int>(source)),
        [&] {
          return make_matmul(rows, outputs, inputs, weight_desc(), bias.defined(), activation,
                             source);
        });
    const memory::desc made_for(*dnnl_primitive_desc_query_md(matmul.get_primitive_desc(),
                                                              dnnl_query_weights_md, 0));
    std::unordered_map<int, memory> arguments{
        {DNNL_ARG_SRC, memory(memory::desc({rows, inputs}, source, Tag::ab), dnnl_engine(),
                              const_cast<char*>(x + first * row_bytes))},
        {DNNL_ARG_WEIGHTS, memory(made_for, dnnl_engine(), const_cast<void*>(weight))},
        {DNNL_ARG_DST, wrap_f32({rows, outputs}, Tag::ab, y + first * outputs)}};
    if (bias.defined()) {
      arguments.emplace(DNNL_ARG_BIAS, wrap_f32({1, outputs}, Tag::ab, bias.raw_data()));
    }
    execute(matmul, arguments);
  });
}

// linear_forward on float32 tensors, its operands read as the thread's products read them.
void linear_forward_float32(Tensor& out, const Tensor& inp, const Tensor& weight,
                            const Tensor& bias, Activation activation) {
  const int64_t outputs = weight.dim(0), inputs = weight.dim(1);
  const Tensor x = product_input(inp);
  const Tensor w = product_input(weight);
  multiply(
      out, x, [&] { return memory::desc({inputs, outputs}, kF32, Tag::ba); }, w.raw_data(),
      "matmul", outputs, inputs, bias, activation);
}

}  // namespace

void linear_forward(Tensor& out, const Tensor& inp, const Tensor& weight, const Tensor& bias,
                    Activation activation) {
  const bool sixteen_bit = inp.dtype() == DType::kBFloat16;
  if (!bfloat16_matmul_available() ||
      !(sixteen_bit || (inp.dtype() == DType::kFloat32 &&
                        float32_math() == kernels::Float32Math::kBFloat16Inputs))) {
    WidenedOp<&linear_forward_float32>::call(out, inp, weight, bias, activation);
    return;
  }
  // bfloat16 operands as stored, or float32 ones rounded to bfloat16 copies.
  const Tensor x = sixteen_bit ? inp : inp.to_dtype(DType::kBFloat16);
  const Tensor w = sixteen_bit ? weight : weight.to_dtype(DType::kBFloat16);
  BFloat16Matmul product;
  product.m = inp.numel() / weight.dim(1);
  product.n = weight.dim(0);
  product.k = weight.dim(1);
  product.a = {x.raw_data(), Transpose::kNo};
  product.b = {w.raw_data(), Transpose::kYes};
  product.c = out.raw_data();
  product.c_type = out.dtype();
  product.bias = bias.defined() ? bias.raw_data() : nullptr;
  product.bias_type = bias.defined() ? bias.dtype() : DType::kFloat32;
  product.activation = activation;
  bfloat16_matmul(product);
}

PackedWeight pack_linear_weight(const Tensor& weight, DType element) {
  if (element == DType::kInt8) return quantize_linear_weight(weight);
  const int64_t outputs = weight.dim(0), inputs = weight.dim(1);
  PackedWeight packed;
  packed.outputs = outputs;
  packed.inputs = inputs;
  // oneDNN's reorder rounds float32 to bfloat16 to nearest even as it packs.
  packed.packed = packed_copy(memory::desc({inputs, outputs}, kF32, Tag::ba), weight.raw_data(),
                              packed_weight_desc(outputs, inputs, element_type(element)),
                              element);
  return packed;
}

void packed_weight_rows(Tensor& out, const Tensor& tokens, const PackedWeight& weight) {
  if (weight.quantized()) {
    quantized_weight_rows(out, tokens, weight);
    return;
  }
  const BlockedOffsets offset(packed_weight_desc(weight.outputs, weight.inputs, kF32));
  const float* packed = weight.packed.data<float>();
  float* rows = out.data<float>();
  for_each_token_row(tokens, weight.outputs, [&](int64_t i, int64_t n) {
    for (int64_t k = 0; k < weight.inputs; ++k) rows[i * weight.inputs + k] = packed[offset(n, k)];
  });
}

absl::Status bfloat16_weights_available() {
  if (bfloat16_matmul_available()) return absl::OkStatus();
  return absl::FailedPreconditionError(
      "this processor has no bfloat16 matrix products in oneDNN (they need AVX-512): use "
      "--compute_type float32 or int8");
}

void packed_linear_forward(Tensor& out, const Tensor& inp, const PackedWeight& weight,
                           const Tensor& bias, Activation activation) {
  if (weight.quantized()) {
    quantized_linear_forward(out, inp, weight, bias, activation);
    return;
  }
  const memory::data_type element = element_type(weight.packed.dtype());
  multiply(
      out, inp, [&] { return packed_weight_desc(weight.outputs, weight.inputs, element); },
      weight.packed.raw_data(), "matmul_packed", weight.outputs, weight.inputs, bias, activation,
      element);
}

}  // namespace xlate::cpu
