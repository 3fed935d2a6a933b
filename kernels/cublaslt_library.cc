#include "kernels/cublaslt_library.h"

#include <dlfcn.h>

#include <stdexcept>
#include <string>

namespace xlate::kernels {
namespace {

const std::string kLibraryName = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);

template <typename Function>
void resolve(void* library, const char* name, Function* function) {
  *function = reinterpret_cast<Function>(dlsym(library, name));
  if (*function == nullptr) {
    throw std::runtime_error(kLibraryName + " has no " + name + " (a different cuBLAS version?)");
  }
}

CublasLtLibrary load() {
  void* library = dlopen(kLibraryName.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* reason = dlerror();
    throw std::runtime_error("cannot load " + kLibraryName + " (cuBLASLt, part of the CUDA " +
                             "toolkit): " + (reason ? reason : "unknown reason"));
  }
  CublasLtLibrary api{};
  resolve(library, "cublasLtCreate", &api.create);
  resolve(library, "cublasLtDestroy", &api.destroy);
  resolve(library, "cublasLtGetStatusString", &api.status_string);
  resolve(library, "cublasLtMatmul", &api.matmul);
  resolve(library, "cublasLtMatmulAlgoGetHeuristic", &api.algorithm_heuristic);
  resolve(library, "cublasLtMatmulDescCreate", &api.matmul_desc_create);
  resolve(library, "cublasLtMatmulDescDestroy", &api.matmul_desc_destroy);
  resolve(library, "cublasLtMatmulDescSetAttribute", &api.matmul_desc_set_attribute);
  resolve(library, "cublasLtMatmulPreferenceCreate", &api.preference_create);
  resolve(library, "cublasLtMatmulPreferenceDestroy", &api.preference_destroy);
  resolve(library, "cublasLtMatmulPreferenceSetAttribute", &api.preference_set_attribute);
  resolve(library, "cublasLtMatrixLayoutCreate", &api.layout_create);
  resolve(library, "cublasLtMatrixLayoutDestroy", &api.layout_destroy);
  resolve(library, "cublasLtMatrixLayoutSetAttribute", &api.layout_set_attribute);
  return api;  // the library stays loaded for the life of the process
}

}  // namespace

const CublasLtLibrary& cublaslt() {
  static const CublasLtLibrary library = load();
  return library;
}

}  // namespace xlate::kernels
