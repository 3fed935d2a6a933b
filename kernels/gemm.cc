#include "kernels/gemm.h"

#include <cuda_runtime_api.h>

#include <map>
#include <stdexcept>
#include <string>
#include <tuple>

#include "kernels/cublaslt_library.h"
#include "kernels/cuda_check.h"

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

// cuBLASLt is column-major: the row-major out[M, N] is the column-major Dᵀ [N, M], so we ask for
// D[N, M] = weight[N, K] (column-major K x N, transposed) · inp (column-major K x M). The bias
// then runs along D's rows, which is what the BIAS epilogue adds.
struct GemmContext::Plan {
  cublasLtMatmulDesc_t operation = nullptr;
  cublasLtMatrixLayout_t weight = nullptr, inp = nullptr, out = nullptr;
  cublasLtMatmulAlgo_t algorithm{};

  ~Plan() {
    if (out) cublaslt().layout_destroy(out);
    if (inp) cublaslt().layout_destroy(inp);
    if (weight) cublaslt().layout_destroy(weight);
    if (operation) cublaslt().matmul_desc_destroy(operation);
  }
};

struct GemmContext::State {
  using Key = std::tuple<int64_t, int64_t, int64_t, GemmEpilogue, ElementType>;
  Stream stream = nullptr;
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  std::map<Key, std::unique_ptr<Plan>> plans;

  Plan& plan_for(int64_t m, int64_t n, int64_t k, GemmEpilogue epilogue, ElementType type);
};

GemmContext::Plan& GemmContext::State::plan_for(int64_t m, int64_t n, int64_t k,
                                                GemmEpilogue epilogue, ElementType type) {
  auto& slot = plans[Key{m, n, k, epilogue, type}];
  if (slot) return *slot;
  auto plan = std::make_unique<Plan>();
  const cudaDataType_t data_type = cuda_data_type(type);
  XLATE_CUBLAS_CHECK(
      cublaslt().matmul_desc_create(&plan->operation, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t transpose = CUBLAS_OP_T, keep = CUBLAS_OP_N;
  XLATE_CUBLAS_CHECK(cublaslt().matmul_desc_set_attribute(
      plan->operation, CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof(transpose)));
  XLATE_CUBLAS_CHECK(cublaslt().matmul_desc_set_attribute(
      plan->operation, CUBLASLT_MATMUL_DESC_TRANSB, &keep, sizeof(keep)));
  const cublasLtEpilogue_t cublas_epilogue_value = cublas_epilogue(epilogue);
  XLATE_CUBLAS_CHECK(
      cublaslt().matmul_desc_set_attribute(plan->operation, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                           &cublas_epilogue_value, sizeof(cublas_epilogue_value)));
  XLATE_CUBLAS_CHECK(cublaslt().layout_create(&plan->weight, data_type, k, n, k));
  XLATE_CUBLAS_CHECK(cublaslt().layout_create(&plan->inp, data_type, k, m, k));
  XLATE_CUBLAS_CHECK(cublaslt().layout_create(&plan->out, data_type, n, m, n));

  cublasLtMatmulPreference_t preference = nullptr;
  XLATE_CUBLAS_CHECK(cublaslt().preference_create(&preference));
  cublaslt().preference_set_attribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                      &workspace_bytes, sizeof(workspace_bytes));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t status =
      cublaslt().algorithm_heuristic(handle, plan->operation, plan->weight, plan->inp, plan->out,
                                     plan->out, preference, 1, &result, &found);
  cublaslt().preference_destroy(preference);
  check_cublas(status, "cublasLtMatmulAlgoGetHeuristic");
  if (found == 0) {
    throw std::runtime_error("cuBLASLt has no algorithm for a " + std::to_string(m) + "x" +
                             std::to_string(n) + "x" + std::to_string(k) +
                             " gemm in this element type on this GPU");
  }
  plan->algorithm = result.algo;
  slot = std::move(plan);
  return *slot;
}

GemmContext::GemmContext(Stream stream, size_t workspace_bytes) : state_(new State) {
  state_->stream = stream;
  state_->workspace_bytes = workspace_bytes;
  XLATE_CUBLAS_CHECK(cublaslt().create(&state_->handle));
  XLATE_CUDA_CHECK(cudaMalloc(&state_->workspace, workspace_bytes));
}

GemmContext::~GemmContext() {
  state_->plans.clear();
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
  Plan& plan = state_->plan_for(m, n, k, epilogue, type);
  if (has_bias(epilogue)) {
    XLATE_CUBLAS_CHECK(cublaslt().matmul_desc_set_attribute(
        plan.operation, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
  }
  const float one = 1.f, zero = 0.f;
  XLATE_CUBLAS_CHECK(cublaslt().matmul(state_->handle, plan.operation, &one, weight, plan.weight,
                                       inp, plan.inp, &zero, out, plan.out, out, plan.out,
                                       &plan.algorithm, state_->workspace, state_->workspace_bytes,
                                       state_->stream));
}

}  // namespace xlate::kernels
