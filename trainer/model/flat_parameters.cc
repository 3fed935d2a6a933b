#include "trainer/model/flat_parameters.h"

#include <stdexcept>

namespace xlate::trainer {

FlatParameters::FlatParameters(const ModelConfig& config, Device device) : config_(config) {
  std::vector<NamedParameter> named = named_parameters(weights_, config);
  int64_t total = 0;
  for (const NamedParameter& parameter : named) {
    int64_t count = 1;
    for (int64_t extent : parameter.shape) count *= extent;
    const bool fixed = parameter.kind == ParameterKind::kPositions &&
                       config.positional == PositionalEncoding::kSinusoidal;
    slices_.push_back({parameter.name, total, count, !fixed});
    total += count;
  }
  flat_ = Tensor::zeros({total}, DType::kFloat32, device);
  weights_ = views_of(flat_);
}

TransformerWeights FlatParameters::views_of(const Tensor& flat) const {
  if (flat.numel() != flat_.numel() || flat.dtype() != DType::kFloat32) {
    throw std::logic_error("FlatParameters::views_of: a buffer of " + flat.shape_string() +
                           " for " + std::to_string(flat_.numel()) + " float32 parameters");
  }
  TransformerWeights views;
  std::vector<NamedParameter> named = named_parameters(views, config_);
  for (size_t i = 0; i < named.size(); ++i) {
    *named[i].tensor = flat.view(slices_[i].offset, named[i].shape);
  }
  return views;
}

void FlatParameters::copy_from(const TransformerWeights& source, const ModelConfig& config) {
  TransformerWeights source_copy = source;  // handles: named_parameters needs a mutable struct
  std::vector<NamedParameter> named = named_parameters(source_copy, config);
  if (named.size() != slices_.size()) {
    throw std::logic_error("FlatParameters::copy_from: parameter lists differ");
  }
  for (size_t i = 0; i < named.size(); ++i) {
    const Tensor values = named[i].tensor->to_float32();
    if (values.numel() != slices_[i].count) {
      throw std::logic_error("FlatParameters::copy_from: size of " + slices_[i].name);
    }
    flat_.view(slices_[i].offset, {slices_[i].count}).copy_from(values.reshape({slices_[i].count}));
  }
}

void FlatParameters::set_zero() { flat_.fill_zero(); }

}  // namespace xlate::trainer
