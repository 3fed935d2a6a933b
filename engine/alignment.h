// Alignments: how much each target token attended to each source token. They are read from the
// decoder's cross-attention in one teacher-forced pass over the finished translation, which
// recomputes exactly the attention the decoder paid when it chose each token (the decoder is
// causal), so the search never carries attention along its beams and a request that does not
// ask costs nothing. The paper's Figures 3-5 are pictures of such weights.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "engine/decoding/search.h"
#include "engine/transformer.h"

namespace xlate {

struct AlignmentOptions {
  int layer = -1;  // decoder layer, 0-based; negative counts from the last (-1: the last one)
  int head = -1;   // one head, 0-based; -1: the average over the layer's heads
  // The 0-based layer of a model of `layers` decoder layers.
  int resolved_layer(int layers) const { return layer < 0 ? layers + layer : layer; }
};

// Whole-struct comparison, every field (see TranslationOptions' in engine/translator.h).
bool operator==(const AlignmentOptions& a, const AlignmentOptions& b);

// OK, or InvalidArgument naming the option (after `prefix`, e.g. "alignment.") and the model's
// range of layers or heads.
absl::Status check_alignment_options(const AlignmentOptions& options, const ModelConfig& config,
                                     absl::string_view prefix);

// One sentence pair's cross-attention weights, every decoder layer and head.
struct AttentionMaps {
  int64_t layers = 0, heads = 0;
  int64_t target_tokens = 0;  // the translation's tokens, without the end token
  int64_t source_tokens = 0;  // the source's tokens and its end token
  std::vector<float> weights;  // [layers, heads, target_tokens, source_tokens], rows sum to 1
  const float* row(int64_t layer, int64_t head, int64_t target) const {
    return weights.data() + ((layer * heads + head) * target_tokens + target) * source_tokens;
  }
  float* row(int64_t layer, int64_t head, int64_t target) {
    return weights.data() + ((layer * heads + head) * target_tokens + target) * source_tokens;
  }
};

// For each pair (token ids without end tokens): row t of every layer and head is the attention
// of the decoder position that chose targets[i][t] (the one fed the start token and the targets
// before t) over the source tokens and the source's end token. Pairs are batched, a few
// megabytes of weights at a time. `encodings`: empty, or per pair the encoder's output for its
// source ([source tokens + 1, d_model], on the model's device), which the search computed
// already; the pass then runs the decoder alone. Throws std::bad_alloc when the model's device
// runs out of memory.
std::vector<AttentionMaps> cross_attention_maps(
    const TransformerModel& model, const std::vector<const std::vector<int32_t>*>& sources,
    const std::vector<const std::vector<int32_t>*>& targets,
    const std::vector<const Tensor*>& encodings = {});

// One layer's weights [target_tokens, source_tokens]: one head's, or the heads' average.
// `options` must be valid for the maps' model (check_alignment_options).
std::vector<float> alignment_of(const AttentionMaps& maps, const AlignmentOptions& options);

// Sets hypotheses[i]->alignment to alignment_of(the maps of (sources[i], hypotheses[i]->tokens),
// *options[i]), all pairs in as few passes as cross_attention_maps takes (`encodings` as there).
void align(const TransformerModel& model, const std::vector<const std::vector<int32_t>*>& sources,
           const std::vector<Hypothesis*>& hypotheses,
           const std::vector<const AlignmentOptions*>& options,
           const std::vector<const Tensor*>& encodings = {});

}  // namespace xlate
