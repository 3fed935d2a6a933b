// The CUDA bodies of the training ops (engine/ops/training_ops.h): shapes from the tensors, then
// kernels (kernels/*_backward.h, dropout.h, cross_entropy.h, adam.h) and cuBLASLt products
// (kernels/runtime/gemm.h) on the worker's stream. Workspaces come from the worker's caching allocator
// and go back to it when the body returns: later work on the same stream reuses them in order.
// Only the squared norm waits for the device when the op returns; the loss sums wait when read.
#include <cmath>
#include <vector>

#include "engine/backend/cuda_backend.h"
#include "engine/ops/cuda/cuda_ops.h"
#include "kernels/adam.h"
#include "kernels/attention_backward.h"
#include "kernels/convert.h"
#include "kernels/cross_entropy.h"
#include "kernels/dropout.h"
#include "kernels/embedding_backward.h"
#include "kernels/runtime/gemm.h"
#include "kernels/layer_norm_backward.h"
#include "kernels/linear_backward.h"

namespace xlate::cuda {
namespace {

constexpr kernels::ElementType kFloat32 = kernels::ElementType::kFloat32;

Tensor float_workspace(int64_t floats) {
  return Tensor::empty({floats > 0 ? floats : 1}, DType::kFloat32, Device::kCUDA);
}

// The sums of the row losses a cross-entropy kernel queued, read when asked: in row order, as
// the CPU body adds them. Holding row_losses and targets keeps their memory from later work on
// the stream until then.
PendingCrossEntropySums pending_sums(std::shared_ptr<void> row_losses, const Tensor& targets,
                                     int64_t rows, int ignore_id) {
  return PendingCrossEntropySums([row_losses = std::move(row_losses), targets, rows, ignore_id] {
    std::vector<double> host(static_cast<size_t>(2 * rows));
    std::vector<int32_t> host_targets(static_cast<size_t>(rows));
    cuda_backend::copy_device_to_host(host.data(), row_losses.get(),
                                      host.size() * sizeof(double));
    cuda_backend::copy_device_to_host(host_targets.data(), targets.raw_data(),
                                      host_targets.size() * sizeof(int32_t));
    CrossEntropySums sums;
    for (int64_t m = 0; m < rows; ++m) {
      if (host_targets[m] == ignore_id) continue;
      sums.loss += host[2 * m];
      sums.nll += host[2 * m + 1];
      ++sums.tokens;
    }
    return sums;
  });
}

}  // namespace

void linear_backward(Tensor& dinp, Tensor& dweight, Tensor& dbias, const Tensor& dout,
                     const Tensor& inp, const Tensor& weight, GradientWrite write) {
  const int64_t outputs = weight.dim(0), inputs = weight.dim(1);
  const int64_t rows = dout.numel() / outputs;
  if (rows == 0) {
    if (dinp.defined() && write == GradientWrite::kOverwrite) {
      cuda_backend::fill_zero(dinp.raw_data(), dinp.nbytes());
    }
    return;
  }
  kernels::GemmContext& gemm = cuda_backend::gemm();
  // dinp[M, K] = dout[M, N] · weight[N, K]
  kernels::MatmulShape input_shape;
  input_shape.m = rows, input_shape.n = inputs, input_shape.k = outputs;
  input_shape.lda = outputs, input_shape.ldb = inputs, input_shape.ldc = inputs;
  const float input_beta = write == GradientWrite::kAccumulate ? 1.f : 0.f;
  // dweight[N, K] += dout[M, N]ᵀ · inp[M, K]
  kernels::MatmulShape weight_shape;
  weight_shape.transpose_a = true;
  weight_shape.m = outputs, weight_shape.n = inputs, weight_shape.k = rows;
  weight_shape.lda = outputs, weight_shape.ldb = inputs, weight_shape.ldc = inputs;
  const kernels::ElementType type = cuda_backend::element_type(dout.dtype());
  if (type != kFloat32) {
    // 16-bit activations and weights: dinp in their type, dweight float32 (the master
    // gradient), both summed in float32.
    if (dinp.defined()) {
      gemm.matmul(dinp.raw_data(), dout.raw_data(), weight.raw_data(), input_shape, 1.f,
                  input_beta, type);
    }
    gemm.matmul_to_float32(dweight.raw_data(), dout.raw_data(), inp.raw_data(), weight_shape,
                           1.f, 1.f, type);
  } else if (const kernels::ElementType copies = gemm.rounding_copy_type(); copies != kFloat32) {
    // Both products read dout: round it to 16 bits once, not once per product (with weight and
    // inp, each read once; packed, so the shapes' leading dimensions hold). Each copy is a block
    // of the caching allocator, 512-byte multiples into cudaMalloc'ed segments (256-byte
    // aligned).
    const auto rounded = [copies](const Tensor& x) {
      std::shared_ptr<void> copy = cuda_backend::allocate(x.numel() * sizeof(uint16_t));
      kernels::convert(copy.get(), copies, x.raw_data(), kFloat32, x.numel(),
                       cuda_backend::stream());
      return copy;
    };
    const std::shared_ptr<void> dout_copy = rounded(dout);
    if (dinp.defined()) {
      gemm.matmul_of_rounded_copies(dinp.raw_data(), dout_copy.get(), rounded(weight).get(),
                                    input_shape, 1.f, input_beta);
    }
    gemm.matmul_of_rounded_copies(dweight.raw_data(), dout_copy.get(), rounded(inp).get(),
                                  weight_shape, 1.f, 1.f);
  } else {
    if (dinp.defined()) {
      gemm.matmul(dinp.raw_data(), dout.raw_data(), weight.raw_data(), input_shape, 1.f,
                  input_beta, kFloat32);
    }
    gemm.matmul(dweight.raw_data(), dout.raw_data(), inp.raw_data(), weight_shape, 1.f, 1.f,
                kFloat32);
  }
  if (dbias.defined()) {
    Tensor workspace = float_workspace(kernels::column_sums_workspace_floats(rows, outputs));
    kernels::add_column_sums(dbias.data<float>(), dout.raw_data(), rows, outputs,
                             workspace.data<float>(), type, cuda_backend::stream());
  }
}

void relu_backward(Tensor& dinp, const Tensor& dout, const Tensor& out) {
  kernels::relu_backward(dinp.raw_data(), dout.raw_data(), out.raw_data(), out.numel(),
                         cuda_backend::element_type(out.dtype()), cuda_backend::stream());
}

void layer_norm_backward(Tensor& dresidual, Tensor& dinp, Tensor& dgamma, Tensor& dbeta,
                         const Tensor& dout, const LayerNormTraining& saved, const Tensor& gamma,
                         GradientWrite residual_write) {
  const int64_t channels = saved.sum.dim(-1), rows = saved.sum.numel() / channels;
  Tensor workspace = float_workspace(kernels::layer_norm_backward_workspace_floats(rows, channels));
  kernels::layer_norm_backward(
      dresidual.raw_data(), dinp.raw_data(), dgamma.data<float>(), dbeta.data<float>(),
      dout.raw_data(), saved.sum.raw_data(), saved.mean.data<float>(), saved.rstd.data<float>(),
      gamma.raw_data(), rules::DropoutMask::of(saved.dropout, saved.dropout_key), rows,
      channels, residual_write == GradientWrite::kAccumulate, workspace.data<float>(),
      cuda_backend::element_type(saved.sum.dtype()), cuda_backend::stream());
}

// One operand of a per-head product: the head's first element, its row stride and the distance
// from one sentence's block to the next (all in floats).
struct HeadOperand {
  const float* data;
  int64_t row_stride;
  int64_t sentence_stride;
  bool transposed;
};

// c[n] (m x n_cols, rows ldc apart, sentence_stride_c apart) = op(a[n]) · op(b[n]) for every
// sentence n, one strided-batched cuBLASLt call.
void per_sentence_product(float* c, int64_t ldc, int64_t sentence_stride_c, HeadOperand a,
                          HeadOperand b, int64_t m, int64_t n_cols, int64_t k,
                          int64_t sentences) {
  kernels::MatmulShape shape;
  shape.transpose_a = a.transposed, shape.transpose_b = b.transposed;
  shape.m = m, shape.n = n_cols, shape.k = k;
  shape.lda = a.row_stride, shape.ldb = b.row_stride, shape.ldc = ldc;
  shape.batch = sentences;
  shape.stride_a = a.sentence_stride, shape.stride_b = b.sentence_stride;
  shape.stride_c = sentence_stride_c;
  cuda_backend::gemm().matmul(c, a.data, b.data, shape, 1.f, 0.f, kFloat32);
}

// Sentences whose head fits in shared memory: kernels::attention_backward. Longer ones:
// per head h, over the N sentences as one strided batch (sentence n's head h starts
// n·T·width + h·d into q/dout/dq and n·S·width + h·d into k/v/dk/dv; its probabilities
// (n·h_count + h)·T·S into probs):
//   dP = dO Vᵀ  ->  dS = P ⊙ (dP - rowsum(dP ⊙ P)) / sqrt(d_k)  ->  dQ = dS K, dK = dSᵀ Q;
//   dV = Pᵀ dO.
void attention_backward(Tensor& dq, Tensor& dk, Tensor& dv, const Tensor& dout,
                        const Tensor& probs, const Tensor& q, const Tensor& k, const Tensor& v,
                        int heads) {
  const int64_t sentences = q.dim(0), queries = q.dim(1), keys = k.dim(1);
  const int64_t head_k = q.dim(2) / heads, head_v = v.dim(2) / heads;
  const int64_t width_k = q.dim(2), width_v = v.dim(2);
  const int64_t scores = queries * keys;  // one head's [T, S]
  if (sentences == 0 || queries == 0 || keys == 0) {
    // No products to run, but the gradients are overwritten all the same (the contract's =).
    for (Tensor* gradient : {&dq, &dk, &dv}) {
      cuda_backend::fill_zero(gradient->raw_data(), gradient->nbytes());
    }
    return;
  }
  const float scale = 1.f / std::sqrt(static_cast<float>(head_k));
  kernels::AttentionBackwardShape shape;
  shape.sentences = sentences, shape.queries = queries, shape.keys = keys;
  shape.heads = heads, shape.key_dim = static_cast<int>(head_k);
  shape.value_dim = static_cast<int>(head_v);
  if (kernels::attention_backward_fits(shape)) {  // short sentences: one kernel, no products
    kernels::attention_backward(dq.raw_data(), dk.raw_data(), dv.raw_data(), dout.raw_data(),
                                probs.data<float>(), q.raw_data(), k.raw_data(), v.raw_data(),
                                shape, scale, cuda_backend::element_type(q.dtype()),
                                cuda_backend::stream());
    return;
  }
  if (q.dtype() != DType::kFloat32) {
    // Sentences too long for the fused kernel in 16-bit storage (rare): the float32 products
    // below on float32 copies, the gradients rounded back once.
    Tensor dq32 = Tensor::empty(dq.shape(), DType::kFloat32, Device::kCUDA);
    Tensor dk32 = Tensor::empty(dk.shape(), DType::kFloat32, Device::kCUDA);
    Tensor dv32 = Tensor::empty(dv.shape(), DType::kFloat32, Device::kCUDA);
    cuda::attention_backward(dq32, dk32, dv32, dout.to_float32(), probs, q.to_float32(),
                       k.to_float32(), v.to_float32(), heads);
    for (const auto& [gradient, copy] : {std::pair<Tensor*, const Tensor*>{&dq, &dq32},
                                         {&dk, &dk32}, {&dv, &dv32}}) {
      cuda_backend::convert(gradient->raw_data(), gradient->dtype(), copy->raw_data(),
                            DType::kFloat32, gradient->numel());
    }
    return;
  }
  Tensor dscores = Tensor::empty(probs.shape(), DType::kFloat32, Device::kCUDA);  // [N, h, T, S]
  float* ds = dscores.data<float>();
  const auto head = [&](const float* data, int64_t offset, int64_t row_stride,
                        int64_t sentence_stride, bool transposed) {
    return HeadOperand{data + offset, row_stride, sentence_stride, transposed};
  };
  for (int64_t h = 0; h < heads; ++h) {
    const HeadOperand d_out = head(dout.data<float>(), h * head_v, width_v, queries * width_v,
                                   false);
    const HeadOperand p = head(probs.data<float>(), h * scores, keys, heads * scores, true);
    per_sentence_product(ds + h * scores, keys, heads * scores, d_out,
                         head(v.data<float>(), h * head_v, width_v, keys * width_v, true),
                         queries, keys, head_v, sentences);
    per_sentence_product(dv.data<float>() + h * head_v, width_v, keys * width_v, p, d_out, keys,
                         head_v, queries, sentences);
  }
  kernels::softmax_backward(ds, probs.data<float>(), sentences * heads * queries, keys, scale,
                            cuda_backend::stream());
  for (int64_t h = 0; h < heads; ++h) {
    const HeadOperand d_scores = head(ds, h * scores, keys, heads * scores, false);
    const HeadOperand d_scores_t = head(ds, h * scores, keys, heads * scores, true);
    per_sentence_product(dq.data<float>() + h * head_k, width_k, queries * width_k, d_scores,
                         head(k.data<float>(), h * head_k, width_k, keys * width_k, false),
                         queries, head_k, keys, sentences);
    per_sentence_product(dk.data<float>() + h * head_k, width_k, keys * width_k, d_scores_t,
                         head(q.data<float>(), h * head_k, width_k, queries * width_k, false),
                         keys, head_k, queries, sentences);
  }
}

void dropout_forward(Tensor& out, const Tensor& inp, float p, uint64_t key) {
  kernels::dropout_forward(out.raw_data(), inp.raw_data(), inp.numel(), p, key,
                           cuda_backend::element_type(inp.dtype()), cuda_backend::stream());
}

void dropout_backward(Tensor& dinp, const Tensor& dout, float p, uint64_t key) {
  kernels::dropout_forward(dinp.raw_data(), dout.raw_data(), dout.numel(), p, key,
                           cuda_backend::element_type(dout.dtype()), cuda_backend::stream());
}

void dropout_relu_backward(Tensor& dinp, const Tensor& dout, const Tensor& relu_out, float p,
                           uint64_t key) {
  kernels::dropout_relu_backward(dinp.raw_data(), dout.raw_data(), relu_out.raw_data(),
                                 dout.numel(), p, key, cuda_backend::element_type(dout.dtype()),
                                 cuda_backend::stream());
}

PendingCrossEntropySums cross_entropy_forward(Tensor& log_probs, const Tensor& logits,
                                              const Tensor& targets, float smoothing,
                                              int ignore_id) {
  const int64_t classes = logits.dim(-1), rows = logits.numel() / classes;
  if (rows == 0) return PendingCrossEntropySums();
  std::shared_ptr<void> row_losses = cuda_backend::allocate(2 * rows * sizeof(double));
  kernels::cross_entropy_forward(log_probs.raw_data(), static_cast<double*>(row_losses.get()),
                                 logits.raw_data(), targets.data<int32_t>(), rows, classes,
                                 smoothing, ignore_id, cuda_backend::element_type(logits.dtype()),
                                 cuda_backend::stream());
  return pending_sums(std::move(row_losses), targets, rows, ignore_id);
}

PendingCrossEntropySums cross_entropy_forward_backward(Tensor& dlogits, const Tensor& logits,
                                                       const Tensor& targets, float smoothing,
                                                       int ignore_id, float dloss) {
  const int64_t classes = logits.dim(-1), rows = logits.numel() / classes;
  if (rows == 0) return PendingCrossEntropySums();
  std::shared_ptr<void> row_losses = cuda_backend::allocate(2 * rows * sizeof(double));
  kernels::cross_entropy_forward_backward(
      dlogits.raw_data(), static_cast<double*>(row_losses.get()), logits.raw_data(),
      targets.data<int32_t>(), rows, classes, smoothing, ignore_id, dloss,
      cuda_backend::element_type(logits.dtype()), cuda_backend::stream());
  return pending_sums(std::move(row_losses), targets, rows, ignore_id);
}

void cross_entropy_backward(Tensor& dlogits, const Tensor& log_probs, const Tensor& targets,
                            float smoothing, int ignore_id, float dloss) {
  const int64_t classes = log_probs.dim(-1), rows = log_probs.numel() / classes;
  kernels::cross_entropy_backward(dlogits.raw_data(), log_probs.raw_data(),
                                  targets.data<int32_t>(), rows, classes, smoothing, ignore_id,
                                  dloss, cuda_backend::element_type(log_probs.dtype()),
                                  cuda_backend::stream());
}

void embedding_backward(Tensor& dtable, Tensor& dpositions, const Tensor& dout,
                        const Tensor& tokens, float scale) {
  const int64_t rows = tokens.dim(0), steps = tokens.dim(1);
  const int64_t vocabulary = dtable.dim(0), channels = dtable.dim(1);
  if (rows * steps == 0) return;
  const std::shared_ptr<void> workspace = cuda_backend::allocate(
      kernels::embedding_backward_workspace_bytes(rows * steps, vocabulary));
  kernels::embedding_backward(dtable.data<float>(),
                              dpositions.defined() ? dpositions.data<float>() : nullptr,
                              dout.raw_data(), tokens.data<int32_t>(), rows, steps, channels,
                              vocabulary, scale, workspace.get(),
                              cuda_backend::element_type(dout.dtype()), cuda_backend::stream());
}

double sum_of_squares(const Tensor& x) {
  const int64_t count = x.numel();
  if (count == 0) return 0.0;
  const int64_t blocks = (count + kernels::kSquaresBlock - 1) / kernels::kSquaresBlock;
  const std::shared_ptr<void> partials = cuda_backend::allocate(blocks * sizeof(double));
  kernels::block_sums_of_squares(static_cast<double*>(partials.get()), x.data<float>(), count,
                                 cuda_backend::stream());
  std::vector<double> host(static_cast<size_t>(blocks));
  cuda_backend::copy_device_to_host(host.data(), partials.get(), host.size() * sizeof(double));
  double total = 0;
  for (double value : host) total += value;
  return total;
}

void adam_update(Tensor& weights, Tensor& first_moment, Tensor& second_moment,
                 const Tensor& gradients, const AdamStep& step) {
  const kernels::AdamConstants constants{step.beta1,    step.beta2,
                                         step.step_size, step.inverse_sqrt_correction2,
                                         step.epsilon,  step.gradient_scale};
  kernels::adam_update(weights.data<float>(), first_moment.data<float>(),
                       second_moment.data<float>(), gradients.data<float>(), weights.numel(),
                       constants, cuda_backend::stream());
}

}  // namespace xlate::cuda
