#include "kernels/cross_entropy.h"
#include "kernels/runtime/cuda_runtime.h"
#include "kernels/device_math.cuh"

namespace xlate::kernels {
namespace {

constexpr int kThreads = 256;

__device__ double block_sum_double(double value, double* scratch) {
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    value += __shfl_xor_sync(0xffffffffu, value, offset);
  }
  __syncthreads();
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  value = lane < static_cast<int>(blockDim.x / kWarpSize) ? scratch[lane] : 0.0;
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    value += __shfl_xor_sync(0xffffffffu, value, offset);
  }
  return value;
}

// ∂(dloss · label-smoothed loss)/∂logit v of a counted row: dloss · (softmax − target share).
// The target's term is a rounded product, then a rounded difference (never one FMA), so every
// kernel that inlines this gives the same bits, and the CPU's.
__device__ float smoothed_gradient(float log_prob, int64_t v, int32_t target, float off_target,
                                   float smoothing, float dloss) {
  float gradient = dloss * (expf(log_prob) - off_target);
  if (v == target) gradient = __fsub_rn(gradient, __fmul_rn(dloss, 1.f - smoothing - off_target));
  return gradient;
}

// One block per row. Reads the row's logits twice (max, then Σ exp) and writes once: the
// log-probabilities, or with kGradient the loss's gradient (dloss given). The reference's logit
// is read before any thread writes (the output may alias logits).
template <bool kGradient, typename T>
__global__ void cross_entropy_forward_kernel(T* out, double* row_losses, const T* logits,
                                             const int32_t* targets, int64_t classes,
                                             float smoothing, int ignore_id, float dloss) {
  __shared__ float scratch[32];
  __shared__ double scratch_double[32];
  const int64_t row = blockIdx.x;
  const int32_t target = targets[row];
  T* out_row = out + row * classes;
  if (target == ignore_id) {
    if (threadIdx.x == 0) row_losses[2 * row] = row_losses[2 * row + 1] = 0.0;
    if (kGradient) {
      for (int64_t v = threadIdx.x; v < classes; v += blockDim.x) out_row[v] = from_float<T>(0.f);
    }
    return;
  }
  const T* x = logits + row * classes;
  const float target_logit = to_float(x[target]);
  float maximum = -FLT_MAX;
  for (int64_t v = threadIdx.x; v < classes; v += blockDim.x) {
    maximum = fmaxf(maximum, to_float(x[v]));
  }
  maximum = block_max(maximum, scratch);
  double total = 0.0;  // as the CPU body: a float sum over 37k terms drifts by ~1e-5
  for (int64_t v = threadIdx.x; v < classes; v += blockDim.x) {
    total += expf(to_float(x[v]) - maximum);
  }
  const float shift =
      maximum + static_cast<float>(log(block_sum_double(total, scratch_double)));
  const float off_target = classes > 1 ? smoothing / static_cast<float>(classes - 1) : 0.f;
  double sum = 0.0;
  for (int64_t v = threadIdx.x; v < classes; v += blockDim.x) {
    const float log_prob = to_float(x[v]) - shift;
    out_row[v] = from_float<T>(
        kGradient ? smoothed_gradient(log_prob, v, target, off_target, smoothing, dloss)
                  : log_prob);
    sum += log_prob;
  }
  sum = block_sum_double(sum, scratch_double);
  if (threadIdx.x == 0) {
    const double target_log_prob = static_cast<double>(target_logit - shift);
    const double off_target_share =
        classes > 1 ? smoothing / static_cast<double>(classes - 1) : 0.0;
    row_losses[2 * row] =
        -(1.0 - smoothing) * target_log_prob - off_target_share * (sum - target_log_prob);
    row_losses[2 * row + 1] = -target_log_prob;
  }
}

template <typename T>
__global__ void cross_entropy_backward_kernel(T* dlogits, const T* log_probs,
                                              const int32_t* targets, int64_t rows,
                                              int64_t classes, float smoothing, int ignore_id,
                                              float dloss) {
  const float off_target = classes > 1 ? smoothing / static_cast<float>(classes - 1) : 0.f;
  const int64_t count = rows * classes;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = i / classes, v = i - row * classes;
    const int32_t target = targets[row];
    dlogits[i] = from_float<T>(
        target == ignore_id
            ? 0.f
            : smoothed_gradient(to_float(log_probs[i]), v, target, off_target, smoothing, dloss));
  }
}

}  // namespace

void cross_entropy_forward(void* log_probs, double* row_losses, const void* logits,
                           const int32_t* targets, int64_t rows, int64_t classes, float smoothing,
                           int ignore_id, ElementType type, Stream stream) {
  if (rows == 0) return;
  dispatch_float_type(type, [&](auto tag) {
    using T = decltype(tag);
    cross_entropy_forward_kernel<false, T><<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
        static_cast<T*>(log_probs), row_losses, static_cast<const T*>(logits), targets, classes,
        smoothing, ignore_id, 0.f);
  });
  check_last_launch("cross_entropy_forward_kernel");
}

void cross_entropy_forward_backward(void* dlogits, double* row_losses, const void* logits,
                                    const int32_t* targets, int64_t rows, int64_t classes,
                                    float smoothing, int ignore_id, float dloss, ElementType type,
                                    Stream stream) {
  if (rows == 0) return;
  dispatch_float_type(type, [&](auto tag) {
    using T = decltype(tag);
    cross_entropy_forward_kernel<true, T><<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
        static_cast<T*>(dlogits), row_losses, static_cast<const T*>(logits), targets, classes,
        smoothing, ignore_id, dloss);
  });
  check_last_launch("cross_entropy_forward_kernel<gradient>");
}

void cross_entropy_backward(void* dlogits, const void* log_probs, const int32_t* targets,
                            int64_t rows, int64_t classes, float smoothing, int ignore_id,
                            float dloss, ElementType type, Stream stream) {
  const int64_t count = rows * classes;
  if (count == 0) return;
  const unsigned blocks = grid_size(count, kThreads) < 65535u ? grid_size(count, kThreads) : 65535u;
  dispatch_float_type(type, [&](auto tag) {
    using T = decltype(tag);
    cross_entropy_backward_kernel<T><<<blocks, kThreads, 0, stream>>>(
        static_cast<T*>(dlogits), static_cast<const T*>(log_probs), targets, rows, classes,
        smoothing, ignore_id, dloss);
  });
  check_last_launch("cross_entropy_backward_kernel");
}

}  // namespace xlate::kernels
