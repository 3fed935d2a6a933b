#include "trainer/model/flat_parameters.h"

#include <cstring>
#include <stdexcept>

namespace xlate::trainer {

FlatParameters::FlatParameters(const ModelConfig& config) {
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
  flat_ = Tensor::zeros({total}, DType::kFloat32);
  for (size_t i = 0; i < named.size(); ++i) {
    *named[i].tensor = flat_.view(slices_[i].offset, named[i].shape);
  }
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
    std::memcpy(flat_.data<float>() + slices_[i].offset, values.raw_data(), values.nbytes());
  }
}

void FlatParameters::set_zero() { std::memset(flat_.raw_data(), 0, flat_.nbytes()); }

}  // namespace xlate::trainer
