// Int8 matrix products (compute type int8) through oneDNN's s8·s8 -> s32 matmul: AVX-512 VNNI
// or AVX-VNNI dot products where the processor has them, AVX2's multiply-adds otherwise. Each
// weight is packed once, when it is quantised, into the layout oneDNN's matmul asks for, so no
// call repacks it (a plain [N, K] int8 weight made small-batch products 2-3x slower: repacked on
// every call; linear_cpu.cc does the same for float32). Activations are quantised per row on
// the fly; the int32 sums land in the output's own storage (4 bytes each, like the floats) and
// are scaled back, biased and rectified there in one pass: a separate int32 buffer doubled the
// memory that pass streams through.
#include <omp.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/ops/cpu/cpu_ops.h"
#include "engine/ops/cpu/dnnl_context.h"
#include "engine/ops/cpu/vector_math.h"

namespace xlate::cpu {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;
using Type = memory::data_type;

// The packed layout of an int8 weight [N, K] (oneDNN's [K, N] operand): the one its matmul
// chooses when asked for any layout. It depends on N, K and the processor, not on the number of
// rows M (the same for M from 1 to 4096 on AVX-512 VNNI); products pass it explicitly, so one of
// another M would still read it right.
memory::desc packed_weight_desc(int64_t outputs, int64_t inputs) {
  constexpr int64_t kRows = 64;
  const dnnl::matmul::desc description(memory::desc({kRows, inputs}, Type::s8, Tag::ab),
                                       memory::desc({inputs, outputs}, Type::s8, Tag::any),
                                       memory::desc({kRows, outputs}, Type::s32, Tag::ab));
  return dnnl::matmul::primitive_desc(description, scratchpad_attributes(), dnnl_engine())
      .weights_desc();
}

dnnl::primitive make_int8_matmul(int64_t rows, int64_t outputs, int64_t inputs) {
  const dnnl::matmul::desc description(memory::desc({rows, inputs}, Type::s8, Tag::ab),
                                       packed_weight_desc(outputs, inputs),
                                       memory::desc({rows, outputs}, Type::s32, Tag::ab));
  return dnnl::matmul(
      dnnl::matmul::primitive_desc(description, scratchpad_attributes(), dnnl_engine()));
}

// Per calling thread, grown to the largest product seen: the quantised rows and their scales.
struct Int8Scratch {
  std::vector<int8_t> rows;
  std::vector<float> row_scales;
};

Int8Scratch& scratch_of_this_thread() {
  thread_local Int8Scratch scratch;
  return scratch;
}

const char* isa_name(dnnl::cpu_isa isa) {
  switch (isa) {
    case dnnl::cpu_isa::sse41: return "SSE4.1";
    case dnnl::cpu_isa::avx: return "AVX";
    case dnnl::cpu_isa::avx2: return "AVX2";
    case dnnl::cpu_isa::avx2_vnni: return "AVX2 with AVX-VNNI";
    case dnnl::cpu_isa::avx512_core: return "AVX-512";
    case dnnl::cpu_isa::avx512_core_vnni: return "AVX-512 with VNNI";
    default: return "a newer instruction set";
  }
}

}  // namespace

// Without VNNI, oneDNN's s8 x s8 products make the activations unsigned (+128) and multiply-add
// them with the weights in pairs into 16 bits, saturating (vpmaddubsw): 255 x 127 x 2 overflows,
// and a saturated pair changes the sum (a random model's logits were off by 36 %). Weights of 7
// bits cannot overflow (255 x 63 x 2 = 32,130 <= 32,767), as other int8 runtimes do there.
float int8_weight_levels() {
  const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
  return isa == dnnl::cpu_isa::avx2 || isa == dnnl::cpu_isa::avx512_core ? 63.f : 127.f;
}

absl::Status int8_available() {
  // oneDNN's effective ISA: the processor's, lowered by ONEDNN_MAX_CPU_ISA when that is set.
  const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
  if (isa == dnnl::cpu_isa::sse41 || isa == dnnl::cpu_isa::avx) {
    return absl::FailedPreconditionError(absl::StrCat(
        "int8 matrix products need AVX2 at least (AVX-512 VNNI or AVX-VNNI for full speed); "
        "this processor offers ",
        isa_name(isa), " (oneDNN's effective ISA); use --compute_type float32"));
  }
  return absl::OkStatus();
}

PackedWeight quantize_linear_weight(const Tensor& weight) {
  const int64_t outputs = weight.dim(0), inputs = weight.dim(1);
  PackedWeight quantized;
  quantized.outputs = outputs;
  quantized.inputs = inputs;
  quantized.scales = Tensor::empty({outputs}, DType::kFloat32);
  std::vector<int8_t> plain(static_cast<size_t>(outputs * inputs));
  const float* values = weight.data<float>();
  float* scales = quantized.scales.data<float>();
  const float levels = int8_weight_levels();
#pragma omp parallel for
  for (int64_t n = 0; n < outputs; ++n) {
    const float largest = max_abs(values + n * inputs, inputs);
    scales[n] = largest / levels;
    quantize_row(plain.data() + n * inputs, values + n * inputs,
                 largest > 0.f ? levels / largest : 0.f, inputs);
  }
  quantized.packed = packed_copy(memory::desc({inputs, outputs}, Type::s8, Tag::ba), plain.data(),
                                 packed_weight_desc(outputs, inputs), DType::kInt8);
  return quantized;
}

void quantized_weight_rows(Tensor& out, const Tensor& tokens, const PackedWeight& weight) {
  const BlockedOffsets offset(packed_weight_desc(weight.outputs, weight.inputs));
  const int8_t* packed = weight.packed.data<int8_t>();
  const float* scales = weight.scales.data<float>();
  float* rows = out.data<float>();
  for_each_token_row(tokens, weight.outputs, [&](int64_t i, int64_t n) {
    for (int64_t k = 0; k < weight.inputs; ++k) {
      rows[i * weight.inputs + k] = static_cast<float>(packed[offset(n, k)]) * scales[n];
    }
  });
}

void quantized_linear_forward(Tensor& out, const Tensor& inp, const PackedWeight& weight,
                              const Tensor& bias, Activation activation) {
  const int64_t outputs = weight.outputs, inputs = weight.inputs;
  const int64_t rows = inp.numel() / inputs;
  if (rows == 0) return;
  Int8Scratch& scratch = scratch_of_this_thread();
  if (scratch.rows.size() < static_cast<size_t>(rows * inputs)) scratch.rows.resize(rows * inputs);
  if (scratch.row_scales.size() < static_cast<size_t>(rows)) scratch.row_scales.resize(rows);

  const float* x = inp.data<float>();
  for (int64_t m = 0; m < rows; ++m) {
    const float largest = max_abs(x + m * inputs, inputs);
    scratch.row_scales[m] = largest / 127.f;
    quantize_row(scratch.rows.data() + m * inputs, x + m * inputs,
                 largest > 0.f ? 127.f / largest : 0.f, inputs);
  }

  for_row_chunks(rows, [&](int64_t first, int64_t count) {
    const dnnl::primitive matmul =
        cached_primitive(absl::StrCat("matmul_s8:", count, ":", outputs, ":", inputs),
                         [&] { return make_int8_matmul(count, outputs, inputs); });
    execute(matmul,
            {{DNNL_ARG_SRC, memory(memory::desc({count, inputs}, Type::s8, Tag::ab),
                                   dnnl_engine(), scratch.rows.data() + first * inputs)},
             {DNNL_ARG_WEIGHTS,
              memory(memory::desc(*dnnl_primitive_desc_query_md(matmul.get_primitive_desc(),
                                                                dnnl_query_weights_md, 0)),
                     dnnl_engine(), const_cast<void*>(weight.packed.raw_data()))},
             {DNNL_ARG_DST, memory(memory::desc({count, outputs}, Type::s32, Tag::ab),
                                   dnnl_engine(), out.data<float>() + first * outputs)}});
  });

  float* y = out.data<float>();
  const float* column_scales = weight.scales.data<float>();
  const float* bias_values = bias.defined() ? bias.data<float>() : nullptr;
  const bool relu = activation == Activation::kRelu;
#pragma omp parallel for if (rows * outputs >= (1 << 16))
  for (int64_t m = 0; m < rows; ++m) {
    float* row = y + m * outputs;
    dequantize_row_in_place(row, scratch.row_scales[m], column_scales, bias_values, relu, outputs);
    if (activation == Activation::kSwish) swish_in_place(row, outputs);
    if (activation == Activation::kGelu) gelu_in_place(row, outputs);
  }
}

}  // namespace xlate::cpu
