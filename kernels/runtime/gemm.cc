#include "kernels/runtime/gemm.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

#include "kernels/convert.h"
#include "kernels/runtime/cublaslt_library.h"
#include "kernels/runtime/cuda_check.h"
#include "kernels/runtime/plan_cache.h"

namespace xlate::kernels {
namespace {

void check_cublas(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string(call) + ": " + cublaslt().status_string(status));
  }
}

#define XLATE_CUBLAS_CHECK(call) check_cublas((call), #call)

cudaDataType_t cuda_data_type(ElementType type) {
  switch (type) {
    case ElementType::kFloat32:
      return CUDA_R_32F;
    case ElementType::kFloat16:
      return CUDA_R_16F;
    case ElementType::kBFloat16:
      return CUDA_R_16BF;
  }
  throw std::logic_error("unknown element type");
}

cublasLtEpilogue_t cublas_epilogue(GemmEpilogue epilogue) {
  switch (epilogue) {
    case GemmEpilogue::kNone:
      return CUBLASLT_EPILOGUE_DEFAULT;
    case GemmEpilogue::kRelu:
      return CUBLASLT_EPILOGUE_RELU;
    case GemmEpilogue::kBias:
      return CUBLASLT_EPILOGUE_BIAS;
    case GemmEpilogue::kBiasRelu:
      return CUBLASLT_EPILOGUE_RELU_BIAS;
  }
  throw std::logic_error("unknown epilogue");
}

bool has_bias(GemmEpilogue epilogue) {
  return epilogue == GemmEpilogue::kBias || epilogue == GemmEpilogue::kBiasRelu;
}

}  // namespace

// cuBLASLt is column-major, and a row-major matrix is its column-major transpose: the row-major
// c[m, n] = op(a) · op(b) is the column-major cᵀ[n, m] = op(b)ᵀ · op(a)ᵀ, so cuBLASLt's first
// operand is our b and its second our a, each transposed when ours is. A linear layer's
// out[M, N] = inp · weightᵀ is then D[N, M] = weight (column-major K x N, transposed) · inp
// (column-major K x M), and the BIAS epilogue adds along D's rows, as it should.
struct GemmContext::Plan {
  cublasLtMatmulDesc_t operation = nullptr;
  cublasLtMatrixLayout_t first = nullptr, second = nullptr, out = nullptr;
  cublasLtMatmulAlgo_t algorithm{};

  ~Plan() {
    if (out) cublaslt().layout_destroy(out);
    if (second) cublaslt().layout_destroy(second);
    if (first) cublaslt().layout_destroy(first);
    if (operation) cublaslt().matmul_desc_destroy(operation);
  }
};

namespace {

// A column-major layout of `rows` x `columns` with leading dimension `ld`; `batch` of them
// `stride` elements apart.
cublasLtMatrixLayout_t make_layout(cudaDataType_t type, int64_t rows, int64_t columns,
                                   int64_t ld, int64_t batch, int64_t stride) {
  cublasLtMatrixLayout_t layout = nullptr;
  XLATE_CUBLAS_CHECK(cublaslt().layout_create(&layout, type, rows, columns, ld));
  if (batch > 1) {
    const int32_t count = static_cast<int32_t>(batch);
    XLATE_CUBLAS_CHECK(cublaslt().layout_set_attribute(
        layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)));
    XLATE_CUBLAS_CHECK(cublaslt().layout_set_attribute(
        layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
  }
  return layout;
}

void set_transposes(cublasLtMatmulDesc_t operation, bool transpose_first, bool transpose_second) {
  const cublasOperation_t first = transpose_first ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t second = transpose_second ? CUBLAS_OP_T : CUBLAS_OP_N;
  XLATE_CUBLAS_CHECK(cublaslt().matmul_desc_set_attribute(
      operation, CUBLASLT_MATMUL_DESC_TRANSA, &first, sizeof(first)));
  XLATE_CUBLAS_CHECK(cublaslt().matmul_desc_set_attribute(
      operation, CUBLASLT_MATMUL_DESC_TRANSB, &second, sizeof(second)));
}

std::string shape_text(int64_t m, int64_t n, int64_t k) {
  return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
}

// The alignment in bytes an operand guarantees, up to the 256 cuBLASLt assumes unless told
// otherwise: its address's largest power-of-two divisor and, for a strided batch, its stride's
// in bytes too (every matrix of the batch starts that far after the previous one). Training
// hands cuBLASLt views at any float offset (parameters packed in one flat buffer, one head's
// columns, one head's [T, S] block), which an algorithm assuming 256 bytes may read with vector
// loads that fault or return garbage.
uint32_t operand_alignment(const void* data, int64_t batch, int64_t stride, int element_bytes) {
  uint64_t bits = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(data)) | 256;
  if (batch > 1) bits |= static_cast<uint64_t>(stride) * static_cast<uint64_t>(element_bytes);
  return static_cast<uint32_t>(bits & (~bits + 1));  // the lowest set bit
}

// `buffer` (device memory of `capacity` bytes) made at least `bytes` large, its contents lost
// when it grows. cudaFree waits for the device, so a product still reading the old buffer
// finishes first.
void grow_device_buffer(void*& buffer, size_t& capacity, size_t bytes) {
  if (capacity >= bytes) return;
  if (buffer != nullptr) XLATE_CUDA_CHECK(cudaFree(buffer));
  buffer = nullptr;
  capacity = 0;
  XLATE_CUDA_CHECK(cudaMalloc(&buffer, bytes));
  capacity = bytes;
}

// The bias epilogue reads its vector with 16-byte loads (Marian and PyTorch found the same):
// a bias at a lesser alignment is first copied to an aligned buffer.
constexpr uintptr_t kBiasAlignment = 16;

}  // namespace

// cuBLASLt's operands in its order (its A is our b, its B our a: see Plan), with C = D.
struct OperandAlignments {
  uint32_t first = 256, second = 256, out = 256;
  auto tie() const { return std::make_tuple(first, second, out); }
};

struct GemmContext::State {
  using Key = std::tuple<int64_t, int64_t, int64_t, GemmEpilogue, ElementType, Float32Math,
                         std::tuple<uint32_t, uint32_t, uint32_t>>;
  // ... operands' type, result's type, compute type, alignments.
  using MatmulKey = std::tuple<bool, bool, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                               int64_t, int64_t, int64_t, int64_t, ElementType, ElementType,
                               cublasComputeType_t, std::tuple<uint32_t, uint32_t, uint32_t>>;
  Stream stream = nullptr;
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  void* aligned_bias = nullptr;  // a copy of a bias not kBiasAlignment-aligned (device memory)
  size_t aligned_bias_bytes = 0;
  explicit State(size_t plan_capacity) : plans(plan_capacity), matmul_plans(plan_capacity) {}
  PlanCache<Key, std::unique_ptr<Plan>> plans;
  PlanCache<MatmulKey, std::unique_ptr<Plan>> matmul_plans;
  Float32Math float32_math = Float32Math::kExact;

  // Float32 operands rounded to 16 bits for the product in flight (device memory, grown to the
  // largest product's two operands; rounded_operands).
  void* rounded = nullptr;
  size_t rounded_bytes = 0;

  // Under kFloat16Inputs: round by copies (no tensor cores for FAST_16F) or inside cuBLASLt.
  bool float16_by_copies = false;

  // The element type cuBLASLt reads a product's two operands in (the result keeps `type`):
  // the type a float32 product first rounds its operands into by copies, or `type`. bfloat16
  // always goes by copies: cuBLASLt's CUBLAS_COMPUTE_32F_FAST_16BF does not round to it (on an
  // H200 with cuBLASLt 13.1 it gave the products of float16-rounded inputs, bit for bit
  // FAST_16F's: CudaFloat32Math.ProductsRoundTheirInputsToTheModesType), which would train
  // "bf16" with float16's range and no loss scaling. FAST_16F rounds to float16 as asked.
  ElementType operand_type(ElementType type) const {
    if (type != ElementType::kFloat32) return type;
    if (float32_math == Float32Math::kBFloat16Inputs) return ElementType::kBFloat16;
    if (float32_math == Float32Math::kFloat16Inputs && float16_by_copies) {
      return ElementType::kFloat16;
    }
    return type;
  }
  bool rounds_by_copies(ElementType type) const { return operand_type(type) != type; }
  // The compute type of a product of `type` tensors under float32_math (which only changes
  // float32 products: half-precision storage computes as it always does).
  cublasComputeType_t compute_type(ElementType type) const {
    if (type == ElementType::kFloat32 && float32_math == Float32Math::kFloat16Inputs &&
        !float16_by_copies) {
      return CUBLAS_COMPUTE_32F_FAST_16F;
    }
    return CUBLAS_COMPUTE_32F;
  }
  // Room for two 16-bit operands of `first` and `second` elements, the second at a 256-byte
  // boundary. Products on the stream run in order, so the next product's rounding waits for
  // the last one's reads.
  std::pair<void*, void*> rounded_operands(int64_t first, int64_t second);
  Float32Math key_math(ElementType type) const {
    return type == ElementType::kFloat32 ? float32_math : Float32Math::kExact;
  }

  Plan& plan_for(int64_t m, int64_t n, int64_t k, GemmEpilogue epilogue, ElementType type,
                 OperandAlignments alignments);
  // c = alpha · op(a) · op(b) + beta · c, a and b stored as `operands` (already rounded where
  // the math mode rounds), c as `result`, computed as `compute`.
  void run_matmul(void* c, const void* a, const void* b, const MatmulShape& s, float alpha,
                  float beta, ElementType operands, ElementType result,
                  cublasComputeType_t compute);
  // A product of `operands` into `result` computed as `compute`.
  Plan& matmul_plan_for(const MatmulShape& shape, ElementType operands, ElementType result,
                        cublasComputeType_t compute, OperandAlignments alignments);
  // Fills plan.algorithm with the heuristic's first choice among the algorithms that work at
  // the operands' alignments; `what` names the product.
  void choose_algorithm(Plan& plan, OperandAlignments alignments, const std::string& what);
  // `bias` itself when aligned for the epilogue, else an aligned copy of its `bytes` (made on
  // the stream, so it is ready when the product that reads it runs).
  const void* epilogue_bias(const void* bias, size_t bytes);
};

void GemmContext::State::choose_algorithm(Plan& plan, OperandAlignments alignments,
                                          const std::string& what) {
  cublasLtMatmulPreference_t preference = nullptr;
  XLATE_CUBLAS_CHECK(cublaslt().preference_create(&preference));
  cublaslt().preference_set_attribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                      &workspace_bytes, sizeof(workspace_bytes));
  const std::pair<cublasLtMatmulPreferenceAttributes_t, uint32_t> minimum_alignments[] = {
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, alignments.first},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, alignments.second},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, alignments.out},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, alignments.out}};
  for (const auto& [attribute, bytes] : minimum_alignments) {
    cublaslt().preference_set_attribute(preference, attribute, &bytes, sizeof(bytes));
  }
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t status =
      cublaslt().algorithm_heuristic(handle, plan.operation, plan.first, plan.second, plan.out,
                                     plan.out, preference, 1, &result, &found);
  cublaslt().preference_destroy(preference);
  check_cublas(status, "cublasLtMatmulAlgoGetHeuristic");
  if (found == 0) {
    throw std::runtime_error("cuBLASLt has no algorithm for a " + what +
                             " gemm in this element type on this GPU");
  }
  plan.algorithm = result.algo;
}

GemmContext::Plan& GemmContext::State::plan_for(int64_t m, int64_t n, int64_t k,
                                                GemmEpilogue epilogue, ElementType type,
                                                OperandAlignments alignments) {
  const Key key{m, n, k, epilogue, type, key_math(type), alignments.tie()};
  return *plans.get_or_make(key, [&] {
    auto plan = std::make_unique<Plan>();
    const cudaDataType_t operands = cuda_data_type(operand_type(type));
    const cudaDataType_t result = cuda_data_type(type);
    XLATE_CUBLAS_CHECK(
        cublaslt().matmul_desc_create(&plan->operation, compute_type(type), CUDA_R_32F));
    set_transposes(plan->operation, /*transpose_first=*/true, /*transpose_second=*/false);
    const cublasLtEpilogue_t cublas_epilogue_value = cublas_epilogue(epilogue);
    XLATE_CUBLAS_CHECK(cublaslt().matmul_desc_set_attribute(
        plan->operation, CUBLASLT_MATMUL_DESC_EPILOGUE, &cublas_epilogue_value,
        sizeof(cublas_epilogue_value)));
    if (has_bias(epilogue)) {  // the bias is stored as the result is, whatever the operands
      XLATE_CUBLAS_CHECK(cublaslt().matmul_desc_set_attribute(
          plan->operation, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &result, sizeof(result)));
    }
    plan->first = make_layout(operands, k, n, k, 1, 0);   // weight
    plan->second = make_layout(operands, k, m, k, 1, 0);  // inp
    plan->out = make_layout(result, n, m, n, 1, 0);
    choose_algorithm(*plan, alignments, shape_text(m, n, k));
    return plan;
  });
}

GemmContext::Plan& GemmContext::State::matmul_plan_for(const MatmulShape& s,
                                                       ElementType operand_element,
                                                       ElementType result_element,
                                                       cublasComputeType_t compute,
                                                       OperandAlignments alignments) {
  const MatmulKey key{s.transpose_a,    s.transpose_b, s.m,           s.n,         s.k,
                      s.lda,            s.ldb,         s.ldc,         s.batch,     s.stride_a,
                      s.stride_b,       s.stride_c,    operand_element, result_element, compute,
                      alignments.tie()};
  return *matmul_plans.get_or_make(key, [&] {
    auto plan = std::make_unique<Plan>();
    const cudaDataType_t operands = cuda_data_type(operand_element);
    const cudaDataType_t result = cuda_data_type(result_element);
    XLATE_CUBLAS_CHECK(cublaslt().matmul_desc_create(&plan->operation, compute, CUDA_R_32F));
    set_transposes(plan->operation, s.transpose_b, s.transpose_a);
    // b as stored is row-major [k, n] ([n, k] when transposed): column-major n x k (k x n).
    plan->first = s.transpose_b ? make_layout(operands, s.k, s.n, s.ldb, s.batch, s.stride_b)
                                : make_layout(operands, s.n, s.k, s.ldb, s.batch, s.stride_b);
    plan->second = s.transpose_a ? make_layout(operands, s.m, s.k, s.lda, s.batch, s.stride_a)
                                 : make_layout(operands, s.k, s.m, s.lda, s.batch, s.stride_a);
    plan->out = make_layout(result, s.n, s.m, s.ldc, s.batch, s.stride_c);
    choose_algorithm(*plan, alignments, shape_text(s.m, s.n, s.k));
    return plan;
  });
}

const void* GemmContext::State::epilogue_bias(const void* bias, size_t bytes) {
  if (reinterpret_cast<uintptr_t>(bias) % kBiasAlignment == 0) return bias;
  grow_device_buffer(aligned_bias, aligned_bias_bytes, bytes);
  XLATE_CUDA_CHECK(cudaMemcpyAsync(aligned_bias, bias, bytes, cudaMemcpyDeviceToDevice,
                                   static_cast<cudaStream_t>(stream)));
  return aligned_bias;
}

std::pair<void*, void*> GemmContext::State::rounded_operands(int64_t first, int64_t second) {
  constexpr size_t kAlignment = 256;
  const size_t first_bytes =
      (static_cast<size_t>(first) * sizeof(uint16_t) + kAlignment - 1) / kAlignment * kAlignment;
  const size_t bytes = first_bytes + static_cast<size_t>(second) * sizeof(uint16_t);
  grow_device_buffer(rounded, rounded_bytes, bytes);
  return {rounded, static_cast<char*>(rounded) + first_bytes};
}

GemmContext::GemmContext(Stream stream, size_t workspace_bytes, size_t plan_capacity)
    : state_(new State(plan_capacity)) {
  state_->stream = stream;
  state_->workspace_bytes = workspace_bytes;
  XLATE_CUBLAS_CHECK(cublaslt().create(&state_->handle));
  XLATE_CUDA_CHECK(cudaMalloc(&state_->workspace, workspace_bytes));
  int device = 0, major = 0;
  XLATE_CUDA_CHECK(cudaGetDevice(&device));
  XLATE_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  state_->float16_by_copies = major < 7;  // tensor cores came with compute capability 7.0
}

void GemmContext::set_float32_math(Float32Math math) { state_->float32_math = math; }

void GemmContext::set_float16_inputs_by_copies(bool by_copies) {
  if (by_copies == state_->float16_by_copies) return;
  state_->float16_by_copies = by_copies;
  // The plans of kFloat16Inputs read operands of the other type now.
  state_->plans.clear();
  state_->matmul_plans.clear();
}

bool GemmContext::float16_inputs_by_copies() const { return state_->float16_by_copies; }

ElementType GemmContext::rounding_copy_type() const {
  return state_->operand_type(ElementType::kFloat32);
}

Float32Math GemmContext::float32_math() const { return state_->float32_math; }

PlanCacheCounts GemmContext::plan_counts() const {
  const PlanCacheCounts& linear = state_->plans.counts();
  const PlanCacheCounts& general = state_->matmul_plans.counts();
  return {linear.hits + general.hits, linear.misses + general.misses,
          linear.evictions + general.evictions, linear.making_seconds + general.making_seconds};
}

size_t GemmContext::cached_plans() const {
  return state_->plans.size() + state_->matmul_plans.size();
}

GemmContext::~GemmContext() {
  // Plans hold descriptors of the handle's library: destroy them before the handle.
  state_->plans.clear();
  state_->matmul_plans.clear();
  if (state_->aligned_bias) cudaFree(state_->aligned_bias);
  if (state_->rounded) cudaFree(state_->rounded);
  if (state_->workspace) cudaFree(state_->workspace);
  if (state_->handle) cublaslt().destroy(state_->handle);
}

void GemmContext::linear_forward(void* out, const void* inp, const void* weight, const void* bias,
                                 int64_t m, int64_t n, int64_t k, GemmEpilogue epilogue,
                                 ElementType type) {
  if (m == 0 || n == 0) return;
  if (has_bias(epilogue) && bias == nullptr) {
    throw std::logic_error("linear_forward: a bias epilogue needs a bias");
  }
  if (state_->rounds_by_copies(type)) {
    const ElementType copies = state_->operand_type(type);
    const auto [rounded_weight, rounded_inp] = state_->rounded_operands(n * k, m * k);
    convert(rounded_weight, copies, weight, type, n * k, state_->stream);
    convert(rounded_inp, copies, inp, type, m * k, state_->stream);
    weight = rounded_weight;
    inp = rounded_inp;
  }
  const int element_bytes = element_size(type);
  const int operand_bytes = element_size(state_->operand_type(type));
  const OperandAlignments alignments{operand_alignment(weight, 1, 0, operand_bytes),
                                     operand_alignment(inp, 1, 0, operand_bytes),
                                     operand_alignment(out, 1, 0, element_bytes)};
  Plan& plan = state_->plan_for(m, n, k, epilogue, type, alignments);
  if (has_bias(epilogue)) {
    const void* aligned = state_->epilogue_bias(bias, static_cast<size_t>(n) * element_bytes);
    XLATE_CUBLAS_CHECK(cublaslt().matmul_desc_set_attribute(
        plan.operation, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &aligned, sizeof(aligned)));
  }
  const float one = 1.f, zero = 0.f;
  XLATE_CUBLAS_CHECK(cublaslt().matmul(state_->handle, plan.operation, &one, weight, plan.first,
                                       inp, plan.second, &zero, out, plan.out, out, plan.out,
                                       &plan.algorithm, state_->workspace, state_->workspace_bytes,
                                       state_->stream));
}

void GemmContext::matmul(void* c, const void* a, const void* b, const MatmulShape& shape,
                         float alpha, float beta, ElementType type) {
  if (shape.m == 0 || shape.n == 0 || shape.batch == 0) return;
  MatmulShape s = shape;
  if (state_->rounds_by_copies(type)) {
    const ElementType copies = state_->operand_type(type);
    // Each operand as stored (row-major [rows, cols], rows ld apart) rounded into a packed
    // copy; a stride of 0 (one matrix for the whole batch) stays one matrix.
    const int64_t rows_a = s.transpose_a ? s.k : s.m, cols_a = s.transpose_a ? s.m : s.k;
    const int64_t rows_b = s.transpose_b ? s.n : s.k, cols_b = s.transpose_b ? s.k : s.n;
    const int64_t matrices_a = s.stride_a == 0 ? 1 : s.batch;
    const int64_t matrices_b = s.stride_b == 0 ? 1 : s.batch;
    const auto [rounded_b, rounded_a] =
        state_->rounded_operands(rows_b * cols_b * matrices_b, rows_a * cols_a * matrices_a);
    convert_matrices(rounded_a, copies, a, type, rows_a, cols_a, s.lda, matrices_a, s.stride_a,
                     state_->stream);
    convert_matrices(rounded_b, copies, b, type, rows_b, cols_b, s.ldb, matrices_b, s.stride_b,
                     state_->stream);
    s.lda = cols_a;
    s.ldb = cols_b;
    if (s.stride_a != 0) s.stride_a = rows_a * cols_a;
    if (s.stride_b != 0) s.stride_b = rows_b * cols_b;
    a = rounded_a;
    b = rounded_b;
  }
  state_->run_matmul(c, a, b, s, alpha, beta, state_->operand_type(type), type,
                     state_->compute_type(type));
}

void GemmContext::matmul_of_rounded_copies(void* c, const void* a, const void* b,
                                           const MatmulShape& shape, float alpha, float beta) {
  if (!state_->rounds_by_copies(ElementType::kFloat32)) {
    throw std::logic_error(
        "matmul_of_rounded_copies: the float32 math makes no rounded copies, so a float32 "
        "product would not read 16-bit operands");
  }
  matmul_to_float32(c, a, b, shape, alpha, beta, rounding_copy_type());
}

void GemmContext::matmul_to_float32(void* c, const void* a, const void* b,
                                    const MatmulShape& shape, float alpha, float beta,
                                    ElementType operands) {
  if (operands == ElementType::kFloat32) {
    throw std::logic_error("matmul_to_float32: the operands are float32: use matmul");
  }
  if (shape.m == 0 || shape.n == 0 || shape.batch == 0) return;
  state_->run_matmul(c, a, b, shape, alpha, beta, operands, ElementType::kFloat32,
                     CUBLAS_COMPUTE_32F);
}

void GemmContext::State::run_matmul(void* c, const void* a, const void* b, const MatmulShape& s,
                                    float alpha, float beta, ElementType operands,
                                    ElementType result, cublasComputeType_t compute) {
  const int result_bytes = element_size(result);
  const int operand_bytes = element_size(operands);
  const OperandAlignments alignments{operand_alignment(b, s.batch, s.stride_b, operand_bytes),
                                     operand_alignment(a, s.batch, s.stride_a, operand_bytes),
                                     operand_alignment(c, s.batch, s.stride_c, result_bytes)};
  Plan& plan = matmul_plan_for(s, operands, result, compute, alignments);
  XLATE_CUBLAS_CHECK(cublaslt().matmul(handle, plan.operation, &alpha, b, plan.first, a,
                                       plan.second, &beta, c, plan.out, c, plan.out,
                                       &plan.algorithm, workspace, workspace_bytes, stream));
}

}  // namespace xlate::kernels
