#include "kernels/runtime/cublaslt_library.h"

#include <string>

#include "kernels/runtime/loaded_library.h"

namespace xlate::kernels {
namespace {

CublasLtLibrary load() {
  const LoadedLibrary library("libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR),
                              "cuBLASLt, part of the CUDA toolkit");
  CublasLtLibrary api{};
  library.resolve("cublasLtCreate", &api.create);
  library.resolve("cublasLtDestroy", &api.destroy);
  library.resolve("cublasLtGetStatusString", &api.status_string);
  library.resolve("cublasLtMatmul", &api.matmul);
  library.resolve("cublasLtMatmulAlgoGetHeuristic", &api.algorithm_heuristic);
  library.resolve("cublasLtMatmulDescCreate", &api.matmul_desc_create);
  library.resolve("cublasLtMatmulDescDestroy", &api.matmul_desc_destroy);
  library.resolve("cublasLtMatmulDescSetAttribute", &api.matmul_desc_set_attribute);
  library.resolve("cublasLtMatmulPreferenceCreate", &api.preference_create);
  library.resolve("cublasLtMatmulPreferenceDestroy", &api.preference_destroy);
  library.resolve("cublasLtMatmulPreferenceSetAttribute", &api.preference_set_attribute);
  library.resolve("cublasLtMatrixLayoutCreate", &api.layout_create);
  library.resolve("cublasLtMatrixLayoutDestroy", &api.layout_destroy);
  library.resolve("cublasLtMatrixLayoutSetAttribute", &api.layout_set_attribute);
  return api;  // the library stays loaded for the life of the process
}

}  // namespace

const CublasLtLibrary& cublaslt() {
  static const CublasLtLibrary library = load();
  return library;
}

}  // namespace xlate::kernels
