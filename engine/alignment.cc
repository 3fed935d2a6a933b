#include "engine/alignment.h"

#include <algorithm>
#include <tuple>

#include "absl/strings/str_cat.h"

namespace xlate {
namespace {

// Floats of weights one pass may hold ([R, h, T, S] per layer, all layers): a pass takes pairs
// until the next would pass this, and at least one pair (the largest, 6 layers x 8 heads x 306
// x 256, is 3.8 M floats).
constexpr int64_t kMaxPassWeights = int64_t{16} << 20;

// The maps of pairs [begin, end) in one encoder and one teacher-forced decoder pass.
void maps_of_pass(const TransformerModel& model,
                  const std::vector<const std::vector<int32_t>*>& sources,
                  const std::vector<const std::vector<int32_t>*>& targets,
                  const std::vector<const Tensor*>& encodings, size_t begin, size_t end,
                  std::vector<AttentionMaps>& maps) {
  const ModelConfig& config = model.config();
  const int64_t count = static_cast<int64_t>(end - begin);
  int64_t source_width = 0, target_width = 0;
  for (size_t i = begin; i < end; ++i) {
    source_width = std::max<int64_t>(source_width, sources[i]->size() + 1);
    target_width = std::max<int64_t>(target_width, targets[i]->size());
  }
  std::vector<int32_t> source_tokens(static_cast<size_t>(count * source_width), config.pad_id);
  std::vector<int32_t> source_lengths(static_cast<size_t>(count));
  // Row r is fed the start token and targets[r] but its last token: position t chooses
  // targets[r][t]. Shorter rows are padded after their end, where causal attention keeps the
  // padding from touching their positions.
  std::vector<int32_t> target_inputs(static_cast<size_t>(count * target_width), config.pad_id);
  for (int64_t r = 0; r < count; ++r) {
    const std::vector<int32_t>& source = *sources[begin + r];
    const std::vector<int32_t>& target = *targets[begin + r];
    std::copy(source.begin(), source.end(), source_tokens.begin() + r * source_width);
    source_tokens[r * source_width + source.size()] = config.eos_id;
    source_lengths[r] = static_cast<int32_t>(source.size() + 1);
    if (target.empty()) continue;
    target_inputs[r * target_width] = config.decoder_start_id;
    std::copy(target.begin(), target.end() - 1, target_inputs.begin() + r * target_width + 1);
  }
  const Tensor lengths = Tensor::from_vector(source_lengths, {count});
  Tensor encoded;
  if (encodings.empty()) {
    encoded = model.encode(Tensor::from_vector(source_tokens, {count, source_width}), lengths);
  } else {
    // The search's encodings, each in its row of the pass (the padding after a source is
    // masked by its length).
    const Tensor& first = *encodings[begin];
    const int64_t width = first.dim(1);
    encoded = Tensor::zeros({count, source_width, width}, first.dtype(), first.device());
    for (int64_t r = 0; r < count; ++r) {
      const Tensor& encoding = *encodings[begin + r];
      Tensor row = encoded.view(r * source_width * width, {encoding.dim(0), width});
      row.copy_from(encoding);
    }
  }
  DecoderState state = model.start_decoding(encoded, lengths, count, target_width);
  const std::vector<Tensor> layers =
      model.cross_attention(state, Tensor::from_vector(target_inputs, {count, target_width}));
  const int64_t heads = config.decoder_heads;
  for (int64_t r = 0; r < count; ++r) {
    AttentionMaps& pair = maps[begin + r];
    pair.layers = static_cast<int64_t>(layers.size());
    pair.heads = heads;
    pair.target_tokens = static_cast<int64_t>(targets[begin + r]->size());
    pair.source_tokens = source_lengths[r];
    pair.weights.resize(
        static_cast<size_t>(pair.layers * heads * pair.target_tokens * pair.source_tokens));
    for (int64_t layer = 0; layer < pair.layers; ++layer) {
      const float* pass = layers[layer].data<float>();  // [count, h, target_width, source_width]
      for (int64_t head = 0; head < heads; ++head) {
        for (int64_t t = 0; t < pair.target_tokens; ++t) {
          const float* from = pass + ((r * heads + head) * target_width + t) * source_width;
          std::copy(from, from + pair.source_tokens, pair.row(layer, head, t));
        }
      }
    }
  }
}

// Every field, in order; a field added to AlignmentOptions stops this from compiling until it is
// listed (see all_fields in engine/translator.cc).
auto all_fields(const AlignmentOptions& options) {
  const auto& [layer, head] = options;
  return std::tie(layer, head);
}

}  // namespace

bool operator==(const AlignmentOptions& a, const AlignmentOptions& b) {
  return all_fields(a) == all_fields(b);
}

absl::Status check_alignment_options(const AlignmentOptions& options, const ModelConfig& config,
                                     absl::string_view prefix) {
  const int layers = config.decoder_layers, heads = config.decoder_heads;
  if (options.layer < -layers || options.layer >= layers) {
    return absl::InvalidArgumentError(absl::StrCat(
        prefix, "layer = ", options.layer, " is out of range: the model has ", layers,
        " decoder layers, so it must be in [0, ", layers - 1, "] or, counted from the last, in [-",
        layers, ", -1]"));
  }
  if (options.head < -1 || options.head >= heads) {
    return absl::InvalidArgumentError(absl::StrCat(
        prefix, "head = ", options.head, " is out of range: the model's layers have ", heads,
        " heads, so it must be in [0, ", heads - 1, "], or -1 for their average"));
  }
  return absl::OkStatus();
}

std::vector<AttentionMaps> cross_attention_maps(
    const TransformerModel& model, const std::vector<const std::vector<int32_t>*>& sources,
    const std::vector<const std::vector<int32_t>*>& targets,
    const std::vector<const Tensor*>& encodings) {
  const ModelConfig& config = model.config();
  const int64_t per_position = int64_t{config.decoder_layers} * config.decoder_heads;
  std::vector<AttentionMaps> maps(sources.size());
  size_t begin = 0;
  while (begin < sources.size()) {
    // A pass's weights: pairs x the longest target x the longest source.
    size_t end = begin;
    int64_t source_width = 0, target_width = 0;
    while (end < sources.size()) {
      const int64_t wider_source = std::max<int64_t>(source_width, sources[end]->size() + 1);
      const int64_t wider_target = std::max<int64_t>(target_width, targets[end]->size());
      const int64_t floats =
          static_cast<int64_t>(end - begin + 1) * per_position * wider_source * wider_target;
      if (end > begin && floats > kMaxPassWeights) break;
      source_width = wider_source;
      target_width = wider_target;
      ++end;
    }
    if (target_width == 0) {
      // Only empty translations: no rows to compute.
      for (size_t i = begin; i < end; ++i) {
        maps[i].layers = config.decoder_layers;
        maps[i].heads = config.decoder_heads;
        maps[i].source_tokens = static_cast<int64_t>(sources[i]->size() + 1);
      }
    } else {
      maps_of_pass(model, sources, targets, encodings, begin, end, maps);
    }
    begin = end;
  }
  return maps;
}

std::vector<float> alignment_of(const AttentionMaps& maps, const AlignmentOptions& options) {
  const int64_t layer = options.resolved_layer(static_cast<int>(maps.layers));
  const int64_t first_head = options.head < 0 ? 0 : options.head;
  const int64_t last_head = options.head < 0 ? maps.heads : options.head + 1;
  const float share = 1.f / static_cast<float>(last_head - first_head);
  std::vector<float> alignment(static_cast<size_t>(maps.target_tokens * maps.source_tokens), 0.f);
  for (int64_t t = 0; t < maps.target_tokens; ++t) {
    float* out = alignment.data() + t * maps.source_tokens;
    for (int64_t head = first_head; head < last_head; ++head) {
      const float* row = maps.row(layer, head, t);
      for (int64_t s = 0; s < maps.source_tokens; ++s) out[s] += row[s] * share;
    }
  }
  return alignment;
}

void align(const TransformerModel& model, const std::vector<const std::vector<int32_t>*>& sources,
           const std::vector<Hypothesis*>& hypotheses,
           const std::vector<const AlignmentOptions*>& options,
           const std::vector<const Tensor*>& encodings) {
  std::vector<const std::vector<int32_t>*> targets;
  for (const Hypothesis* hypothesis : hypotheses) targets.push_back(&hypothesis->tokens);
  const std::vector<AttentionMaps> maps =
      cross_attention_maps(model, sources, targets, encodings);
  for (size_t i = 0; i < hypotheses.size(); ++i) {
    hypotheses[i]->alignment = alignment_of(maps[i], *options[i]);
  }
}

}  // namespace xlate
