#include "kernels/beam_search_step.h"
#include "kernels/runtime/cuda_runtime.h"

namespace xlate::kernels {
namespace {

// One thread per live sentence: a step ranks at most B·K <= 15·32 candidates per sentence, so
// the whole step is one small launch whose cost is its latency. A constrained sentence ranks
// B·(K + W) candidates in its part of `scratch` (global memory: up to 15·47 of them).
__global__ void beam_search_step_kernel(rules::BeamStepRows rows, rules::BeamStepState state,
                                        rules::BeamStepShape shape,
                                        rules::BeamConstraints constraints,
                                        rules::ConstrainedCandidate* scratch) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x;
  if (n >= shape.sentences) return;
  rules::BeamCandidate best[2 * kMaxStepBeam];
  if (constraints.counts == nullptr) {
    rules::beam_search_step_sentence(n, rows, state, shape, best);
  } else if (constraints.counts[rows.sentence_ids[n]] > 0) {
    const int64_t per_sentence = static_cast<int64_t>(shape.beam_stride) *
                                 (shape.candidates + constraints.wanted_width);
    rules::constrained_step_sentence(n, rows, state, shape, constraints,
                                     scratch + n * per_sentence);
  } else {
    rules::beam_search_step_sentence(n, rows, state, shape, best);
    rules::clear_constraint_rows(n, rows, state, constraints);
  }
}

}  // namespace

void beam_search_step(const rules::BeamStepRows& rows, const rules::BeamStepState& state,
                      const rules::BeamStepShape& shape,
                      const rules::BeamConstraints& constraints,
                      rules::ConstrainedCandidate* scratch, Stream stream) {
  if (shape.sentences == 0) return;
  constexpr int kThreads = 64;
  const unsigned blocks = static_cast<unsigned>((shape.sentences + kThreads - 1) / kThreads);
  beam_search_step_kernel<<<blocks, kThreads, 0, stream>>>(rows, state, shape, constraints,
                                                          scratch);
  check_last_launch("beam_search_step_kernel");
}

}  // namespace xlate::kernels
