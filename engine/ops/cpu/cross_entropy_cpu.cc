#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/ops/cpu/cpu_ops.h"

namespace xlate::cpu {
namespace {

// out[v] = in[v] - max - log Σ exp(in - max); out may alias in. The sum is kept in double: over
// a 37k vocabulary a float running sum drifts by ~1e-5, more than the CUDA body's tree does.
void log_softmax_row(float* out, const float* in, int64_t classes) {
  float maximum = in[0];
  for (int64_t v = 1; v < classes; ++v) maximum = std::max(maximum, in[v]);
  double total = 0.0;
  for (int64_t v = 0; v < classes; ++v) total += std::exp(in[v] - maximum);
  const float shift = maximum + static_cast<float>(std::log(total));
  for (int64_t v = 0; v < classes; ++v) out[v] = in[v] - shift;
}

// A counted row's label-smoothed loss and -log p(target), from its log-probabilities.
void row_losses(const float* logp, int64_t classes, int32_t target, float smoothing,
                double off_target, double* loss, double* nll) {
  double sum = 0;
  for (int64_t v = 0; v < classes; ++v) sum += logp[v];
  *nll = -static_cast<double>(logp[target]);
  *loss = (1.0 - smoothing) * *nll - off_target * (sum - logp[target]);
}

// The rows' sums in row order (ignored rows count nothing).
CrossEntropySums summed(const std::vector<double>& row_loss, const std::vector<double>& row_nll,
                        const Tensor& targets, int ignore_id) {
  CrossEntropySums sums;
  for (size_t m = 0; m < row_loss.size(); ++m) {
    if (targets.data<int32_t>()[m] == ignore_id) continue;
    sums.loss += row_loss[m];
    sums.nll += row_nll[m];
    ++sums.tokens;
  }
  return sums;
}

}  // namespace

PendingCrossEntropySums cross_entropy_forward(Tensor& log_probs, const Tensor& logits,
                                              const Tensor& targets, float smoothing,
                                              int ignore_id) {
  const int64_t classes = logits.dim(-1), rows = logits.numel() / classes;
  const double off_target = classes > 1 ? smoothing / static_cast<double>(classes - 1) : 0.0;
  std::vector<double> row_loss(static_cast<size_t>(rows), 0.0), row_nll(row_loss);
#pragma omp parallel for schedule(static)
  for (int64_t m = 0; m < rows; ++m) {
    const int32_t target = targets.data<int32_t>()[m];
    if (target == ignore_id) continue;
    float* logp = log_probs.data<float>() + m * classes;
    log_softmax_row(logp, logits.data<float>() + m * classes, classes);
    row_losses(logp, classes, target, smoothing, off_target, &row_loss[m], &row_nll[m]);
  }
  return PendingCrossEntropySums(summed(row_loss, row_nll, targets, ignore_id));
}

void cross_entropy_backward(Tensor& dlogits, const Tensor& log_probs, const Tensor& targets,
                            float smoothing, int ignore_id, float dloss) {
  const int64_t classes = log_probs.dim(-1), rows = log_probs.numel() / classes;
  const float off_target = classes > 1 ? smoothing / static_cast<float>(classes - 1) : 0.f;
#pragma omp parallel for schedule(static)
  for (int64_t m = 0; m < rows; ++m) {
    const int32_t target = targets.data<int32_t>()[m];
    const float* logp = log_probs.data<float>() + m * classes;
    float* gradient = dlogits.data<float>() + m * classes;
    if (target == ignore_id) {
      for (int64_t v = 0; v < classes; ++v) gradient[v] = 0.f;
      continue;
    }
    for (int64_t v = 0; v < classes; ++v) gradient[v] = dloss * (std::exp(logp[v]) - off_target);
    gradient[target] -= dloss * (1.f - smoothing - off_target);
  }
}

// The two ops in turn, row by row: the reference the fused CUDA kernel is held to. Each row
// is worked on in a float32 buffer of its own, so that 16-bit logits are widened and the
// gradient rounded a row at a time (the log-probabilities are never stored, as on CUDA).
PendingCrossEntropySums cross_entropy_forward_backward(Tensor& dlogits, const Tensor& logits,
                                                       const Tensor& targets, float smoothing,
                                                       int ignore_id, float dloss) {
  const int64_t classes = logits.dim(-1), rows = logits.numel() / classes;
  const double off_target = classes > 1 ? smoothing / static_cast<double>(classes - 1) : 0.0;
  const float off_target_gradient =
      classes > 1 ? smoothing / static_cast<float>(classes - 1) : 0.f;
  std::vector<double> row_loss(static_cast<size_t>(rows), 0.0), row_nll(row_loss);
#pragma omp parallel
  {
    std::vector<float> buffer(static_cast<size_t>(classes));
    float* logp = buffer.data();
#pragma omp for schedule(static)
    for (int64_t m = 0; m < rows; ++m) {
      const int32_t target = targets.data<int32_t>()[m];
      if (target == ignore_id) {
        std::fill(buffer.begin(), buffer.end(), 0.f);
      } else {
        convert(logp, DType::kFloat32, static_cast<const char*>(logits.raw_data()) +
                    m * classes * static_cast<int64_t>(dtype_size(logits.dtype())),
                logits.dtype(), classes);
        log_softmax_row(logp, logp, classes);
        row_losses(logp, classes, target, smoothing, off_target, &row_loss[m], &row_nll[m]);
        for (int64_t v = 0; v < classes; ++v) {
          logp[v] = dloss * (std::exp(logp[v]) - off_target_gradient);
        }
        logp[target] -= dloss * (1.f - smoothing - off_target_gradient);
      }
      convert(static_cast<char*>(dlogits.raw_data()) +
                  m * classes * static_cast<int64_t>(dtype_size(dlogits.dtype())),
              dlogits.dtype(), logp, DType::kFloat32, classes);
    }
  }
  return PendingCrossEntropySums(summed(row_loss, row_nll, targets, ignore_id));
}

}  // namespace xlate::cpu
