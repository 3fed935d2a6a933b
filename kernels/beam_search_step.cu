#include "kernels/beam_search_step.h"
#include "kernels/cuda_runtime.h"

namespace xlate::kernels {
namespace {

// One thread per live sentence: a step ranks at most B·K <= 15·32 candidates per sentence, so
// the whole step is one small launch whose cost is its latency.
__global__ void beam_search_step_kernel(BeamStepRows rows, BeamStepState state,
                                        BeamStepShape shape) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x;
  BeamCandidate best[2 * kMaxStepBeam];
  if (n < shape.sentences) beam_search_step_sentence(n, rows, state, shape, best);
}

}  // namespace

void beam_search_step(const BeamStepRows& rows, const BeamStepState& state,
                      const BeamStepShape& shape, Stream stream) {
  if (shape.sentences == 0) return;
  constexpr int kThreads = 64;
  const unsigned blocks = static_cast<unsigned>((shape.sentences + kThreads - 1) / kThreads);
  beam_search_step_kernel<<<blocks, kThreads, 0, stream>>>(rows, state, shape);
  check_last_launch("beam_search_step_kernel");
}

}  // namespace xlate::kernels
