// The CUDA ops in a CPU-only build: no CUDA tensor can exist there, so these are unreachable.
#include <stdexcept>

#include "engine/ops/cuda/cuda_ops.h"

namespace xlate::cuda {
namespace {

[[noreturn]] void unavailable() {
  throw std::logic_error("this build of xlate has no CUDA backend (nvcc was not found)");
}

}  // namespace

void embedding_forward(Tensor&, const Tensor&, const Tensor&, const Tensor&, float, int64_t,
                       const Tensor&) {
  unavailable();
}
void linear_forward(Tensor&, const Tensor&, const Tensor&, const Tensor&, Activation) {
  unavailable();
}
void add_layer_norm_forward(Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                            float) {
  unavailable();
}
void attention_forward(Tensor&, const Columns&, const Columns&, const Columns&, const Tensor&,
                       const Tensor&, int, bool) {
  unavailable();
}
void log_softmax_forward(Tensor&, const Tensor&) { unavailable(); }
void log_softmax_top_k(Tensor&, Tensor&, const Tensor&, const Tensor&, int) { unavailable(); }
void gather_rows(Tensor&, const Tensor&, const Tensor&) { unavailable(); }
void scatter_rows(Tensor&, const Columns&, const Tensor&) { unavailable(); }

void decode_positions(Tensor&, Tensor&, Tensor&, const Tensor&, const Tensor&, int64_t, int64_t) {
  unavailable();
}
void beam_search_step(BeamSearchTensors&, const TopK&, int) { unavailable(); }

}  // namespace xlate::cuda
