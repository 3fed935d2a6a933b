#include "engine/ops/cpu/bfloat16_matmul.h"

#include <algorithm>
#include <stdexcept>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "engine/ops/cpu/dnnl_context.h"

namespace xlate::cpu {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

memory::data_type dnnl_type(DType type) {
  return type == DType::kBFloat16 ? memory::data_type::bf16 : memory::data_type::f32;
}

// op(x) [rows, columns], a block of a bfloat16 matrix stored row-major with `stride` elements
// from one stored row to the next (transposed: stored [columns, rows]).
memory::desc operand_desc(int64_t rows, int64_t columns, Transpose transpose, int64_t stride) {
  return memory::desc({rows, columns}, memory::data_type::bf16,
                      transpose == Transpose::kYes ? memory::dims{1, stride}
                                                   : memory::dims{stride, 1});
}

// The stored row stride of the whole op(a) [m, k] and op(b) [k, n].
int64_t a_stride(const BFloat16Matmul& product) {
  return product.a.transpose == Transpose::kYes ? product.m : product.k;
}
int64_t b_stride(const BFloat16Matmul& product) {
  return product.b.transpose == Transpose::kYes ? product.k : product.n;
}

dnnl::primitive make_matmul(int64_t m, int64_t k, const BFloat16Matmul& product) {
  const int64_t n = product.n;
  dnnl::primitive_attr attributes = scratchpad_attributes();
  dnnl::post_ops post;
  if (product.accumulate) post.append_sum(1.f);
  if (product.activation != Activation::kNone) {
    const dnnl::algorithm algorithm = product.activation == Activation::kRelu
                                          ? dnnl::algorithm::eltwise_relu
                                          : product.activation == Activation::kSwish
                                                ? dnnl::algorithm::eltwise_swish
                                                : dnnl::algorithm::eltwise_gelu_erf;
    post.append_eltwise(1.f, algorithm, product.activation == Activation::kSwish ? 1.f : 0.f,
                        0.f);
  }
  attributes.set_post_ops(post);
  const memory::desc bias = product.bias != nullptr
                                ? memory::desc({1, n}, dnnl_type(product.bias_type), Tag::ab)
                                : memory::desc();
  const dnnl::matmul::desc description(
      operand_desc(m, k, product.a.transpose, a_stride(product)),
      operand_desc(k, n, product.b.transpose, b_stride(product)), bias,
      memory::desc({m, n}, dnnl_type(product.c_type), Tag::ab));
  return dnnl::matmul(dnnl::matmul::primitive_desc(description, attributes, dnnl_engine()));
}

// One chunk: rows [first_m, first_m + m) of c, from columns [first_k, first_k + k) of op(a)
// and rows of op(b); `accumulate` as the chunk needs it.
void run_chunk(const BFloat16Matmul& product, int64_t first_m, int64_t m, int64_t first_k,
               int64_t k, bool accumulate) {
  BFloat16Matmul chunk = product;
  chunk.accumulate = accumulate;
  const dnnl::primitive matmul = cached_primitive(
      absl::StrCat("bf16:", m, ":", product.n, ":", k, ":", product.a.transpose == Transpose::kYes,
                   ":", product.b.transpose == Transpose::kYes, ":", a_stride(product), ":",
                   b_stride(product), ":",
                   static_cast<int>(product.c_type), ":", accumulate, ":",
                   product.bias != nullptr, ":", static_cast<int>(product.bias_type), ":",
                   static_cast<int>(product.activation)),
      [&] { return make_matmul(m, k, chunk); });
  // Element offsets of the chunk's first element in each operand as stored.
  const auto* a = static_cast<const uint16_t*>(product.a.data);
  const auto* b = static_cast<const uint16_t*>(product.b.data);
  const int64_t a_offset = product.a.transpose == Transpose::kYes
                               ? first_k * product.m + first_m
                               : first_m * product.k + first_k;
  const int64_t b_offset =
      product.b.transpose == Transpose::kYes ? first_k : first_k * product.n;
  auto* c = static_cast<char*>(product.c) +
            first_m * product.n * static_cast<int64_t>(dtype_size(product.c_type));
  const memory::desc a_desc = operand_desc(m, k, product.a.transpose, a_stride(product));
  const memory::desc b_desc = operand_desc(k, product.n, product.b.transpose, b_stride(product));
  std::unordered_map<int, memory> arguments{
      {DNNL_ARG_SRC, memory(a_desc, dnnl_engine(), const_cast<uint16_t*>(a + a_offset))},
      {DNNL_ARG_WEIGHTS, memory(b_desc, dnnl_engine(), const_cast<uint16_t*>(b + b_offset))},
      {DNNL_ARG_DST, memory(memory::desc({m, product.n}, dnnl_type(product.c_type), Tag::ab),
                            dnnl_engine(), c)}};
  if (product.bias != nullptr) {
    arguments.emplace(DNNL_ARG_BIAS,
                      memory(memory::desc({1, product.n}, dnnl_type(product.bias_type), Tag::ab),
                             dnnl_engine(), const_cast<void*>(product.bias)));
  }
  execute(matmul, arguments);
}

}  // namespace

bool bfloat16_matmul_available() {
  static const bool available = [] {
    try {
      BFloat16Matmul probe;
      probe.m = probe.n = probe.k = 16;
      make_matmul(16, 16, probe);
      return true;
    } catch (const dnnl::error&) {
      return false;  // oneDNN has no bf16 matmul for this processor
    }
  }();
  return available;
}

const char* bfloat16_matmul_note() {
  if (!bfloat16_matmul_available()) return "widened to float32";
  return dnnl::get_effective_cpu_isa() >= dnnl::cpu_isa::avx512_core_bf16
             ? "AVX512_BF16 instructions"
             : "emulated on AVX-512";
}

void bfloat16_matmul(const BFloat16Matmul& product) {
  if (product.m == 0 || product.n == 0) return;
  if (product.a.transpose == Transpose::kYes) {
    // A weight's gradient: m and n are the weight's, k the batch's rows.
    for (int64_t first = 0; first < product.k; first += kMaxPlanRows) {
      const int64_t k = std::min(kMaxPlanRows, product.k - first);
      run_chunk(product, 0, product.m, first, k, product.accumulate || first > 0);
    }
    if (product.k == 0 && !product.accumulate) {
      throw std::logic_error("bfloat16_matmul: an empty sum overwriting its output");
    }
    return;
  }
  for_row_chunks(product.m, [&](int64_t first, int64_t rows) {
    run_chunk(product, first, rows, 0, product.k, product.accumulate);
  });
}

}  // namespace xlate::cpu
