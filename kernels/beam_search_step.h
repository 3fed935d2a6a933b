// One step of beam search for every live sentence on the GPU, one thread each: the launcher of
// the rule of rules/beam_search.h (whose header says the layout). CUDA-free.
#pragma once

#include <cstdint>

#include "kernels/element_type.h"
#include "kernels/log_softmax_top_k.h"
#include "rules/beam_search.h"

namespace xlate::kernels {

// Largest beam of the device step: it ranks 2·B candidates in registers, and the top-k kernel
// that feeds it must give each row 2·B + 1 candidates (log_softmax_top_k.h).
constexpr int kMaxStepBeam = 15;
static_assert(2 * kMaxStepBeam + 1 <= kMaxTopK, "the top-k kernel must feed the widest beam");

// The step of every live sentence, one device thread each. With constraints (counts set: the
// batch has a constrained slot), a sentence whose slot has constraints takes
// constrained_step_sentence with `scratch` + n·beam_stride·(candidates + wanted_width) as its
// candidate array (device memory, that many ConstrainedCandidates per live sentence), the
// others beam_search_step_sentence and clear_constraint_rows, as the CPU's loop does.
void beam_search_step(const rules::BeamStepRows& rows, const rules::BeamStepState& state,
                      const rules::BeamStepShape& shape,
                      const rules::BeamConstraints& constraints,
                      rules::ConstrainedCandidate* scratch, Stream stream);

}  // namespace xlate::kernels
