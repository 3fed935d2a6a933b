// What the ranks of a data-parallel run (and a resumed run) must agree on, as 64-bit
// fingerprints: the run's model, batching and data (checked again on resume), and every option
// that decides the collectives or the update each rank makes.
#pragma once

#include <cstdint>

#include "engine/model_config.h"
#include "engine/tensor.h"
#include "trainer/data/batch_iterator.h"
#include "trainer/training/training_options.h"

namespace xlate::trainer {

// The model's config, the batching options, the seed, the batch order and the number of ranks.
uint64_t run_fingerprint(const ModelConfig& config, const TrainingOptions& options,
                         const BatchIterator& batches, int world_size);

// What every rank of a data-parallel run must share beyond run_fingerprint: the options that
// decide the model, the collectives each step makes (bucket plan, steps, validation,
// checkpoints) or the update each rank applies. A rank started with other values would hang the
// others or drift from them. Every field is listed, in declaration order (the structured
// bindings name exactly as many as the structs have, so a field added to the options stops this
// from compiling until it is placed), and only those a rank may choose for itself are left out:
// its paths (the data's content is in run_fingerprint), its device string (the device it
// resolved to is compared instead), how many checkpoints it keeps and how often it logs.
uint64_t rank_agreement_fingerprint(const TrainingOptions& options, uint64_t run_fingerprint,
                                    Device device);

}  // namespace xlate::trainer
