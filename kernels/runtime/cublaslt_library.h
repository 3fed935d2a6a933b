// cuBLASLt, loaded with dlopen on first use instead of linked.
//
// Why: libcublasLt carries ~94 KiB of thread-local storage. A linked library's TLS is static TLS,
// carved out of every thread's stack, and threads created with small stacks then fail to start
// (civetweb's, behind the Prometheus exposer, use ~100 KiB stacks: the server could not serve
// /metrics). A dlopen'ed library's TLS is allocated per thread on demand instead, and processes
// that never run a CUDA gemm (every CPU run) never load it at all.
//
// Included only by kernels/ sources (it needs cublasLt.h).
#pragma once

#include <cublasLt.h>

namespace xlate::kernels {

struct CublasLtLibrary {
  decltype(&cublasLtCreate) create;
  decltype(&cublasLtDestroy) destroy;
  decltype(&cublasLtGetStatusString) status_string;
  decltype(&cublasLtMatmul) matmul;
  decltype(&cublasLtMatmulAlgoGetHeuristic) algorithm_heuristic;
  decltype(&cublasLtMatmulDescCreate) matmul_desc_create;
  decltype(&cublasLtMatmulDescDestroy) matmul_desc_destroy;
  decltype(&cublasLtMatmulDescSetAttribute) matmul_desc_set_attribute;
  decltype(&cublasLtMatmulPreferenceCreate) preference_create;
  decltype(&cublasLtMatmulPreferenceDestroy) preference_destroy;
  decltype(&cublasLtMatmulPreferenceSetAttribute) preference_set_attribute;
  decltype(&cublasLtMatrixLayoutCreate) layout_create;
  decltype(&cublasLtMatrixLayoutDestroy) layout_destroy;
  decltype(&cublasLtMatrixLayoutSetAttribute) layout_set_attribute;
};

// Loads libcublasLt.so.<the major version of the headers> once; throws std::runtime_error naming
// the library and the loader's message when it or one of its functions is missing.
const CublasLtLibrary& cublaslt();

}  // namespace xlate::kernels
