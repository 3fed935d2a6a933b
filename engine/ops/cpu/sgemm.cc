#include "engine/ops/cpu/sgemm.h"

#include <stdexcept>
#include <string>

#include <oneapi/dnnl/dnnl.h>

namespace xlate::cpu {

void sgemm(Transpose transpose_a, Transpose transpose_b, int64_t m, int64_t n, int64_t k,
           float alpha, const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
           float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  const dnnl_status_t status =
      dnnl_sgemm(transpose_a == Transpose::kYes ? 'T' : 'N',
                 transpose_b == Transpose::kYes ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta,
                 c, ldc);
  if (status != dnnl_success) {
    // Only reachable through inconsistent shapes computed by our own code.
    throw std::logic_error("sgemm: oneDNN sgemm failed with status " +
                           std::to_string(static_cast<int>(status)));
  }
}

}  // namespace xlate::cpu
