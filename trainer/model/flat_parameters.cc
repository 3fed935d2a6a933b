#include "trainer/model/flat_parameters.h"

#include <stdexcept>

#include "engine/ops/backend.h"

namespace xlate::trainer {

FlatParameters::FlatParameters(const ModelConfig& config, Device device) : config_(config) {
  std::vector<NamedParameter> named = named_parameters(weights_, config);
  int64_t total = 0;
  for (const NamedParameter& parameter : named) {
    int64_t count = 1;
    for (int64_t extent : parameter.shape) count *= extent;
    const bool fixed = parameter.kind == ParameterKind::kPositions &&
                       config.positional != PositionalEncoding::kLearned;
    total = (total + kParameterAlignment - 1) / kParameterAlignment * kParameterAlignment;
    slices_.push_back({parameter.name, total, count, !fixed});
    total += count;
  }
  flat_ = Tensor::zeros({total}, DType::kFloat32, device);
  weights_ = views_of(flat_);
}

TransformerWeights FlatParameters::views_of(const Tensor& flat) const {
  if (flat.numel() != flat_.numel() || !is_float(flat.dtype())) {
    throw std::logic_error("FlatParameters::views_of: a buffer of " + flat.shape_string() + " " +
                           dtype_name(flat.dtype()) + " for " + std::to_string(flat_.numel()) +
                           " parameters");
  }
  TransformerWeights views;
  std::vector<NamedParameter> named = named_parameters(views, config_);
  for (size_t i = 0; i < named.size(); ++i) {
    *named[i].tensor = flat.view(slices_[i].offset, named[i].shape);
  }
  return views;
}

std::vector<FlatRange> FlatParameters::trainable_ranges() const {
  std::vector<FlatRange> ranges;
  for (size_t i = 0; i < slices_.size(); ++i) {
    if (!slices_[i].trainable) continue;
    const int64_t end = i + 1 < slices_.size() ? slices_[i + 1].offset : flat_.numel();
    ranges.push_back({slices_[i].offset, end - slices_[i].offset});
  }
  return ranges;
}

int64_t FlatParameters::size_without_gaps() const {
  int64_t total = 0;
  for (const ParameterSlice& slice : slices_) total += slice.count;
  return total;
}

Tensor FlatParameters::without_gaps(const Tensor& flat) const {
  if (flat.numel() != flat_.numel() || flat.dtype() != DType::kFloat32) {
    throw std::logic_error("FlatParameters::without_gaps: a buffer of " + flat.shape_string() +
                           " " + dtype_name(flat.dtype()) + " for " +
                           std::to_string(flat_.numel()) + " float32 values");
  }
  const Tensor host = flat.on(Device::kCPU);
  Tensor unpadded = Tensor::empty({size_without_gaps()}, DType::kFloat32);
  int64_t at = 0;
  for (const ParameterSlice& slice : slices_) {
    unpadded.view(at, {slice.count}).copy_from(host.view(slice.offset, {slice.count}));
    at += slice.count;
  }
  return unpadded;
}

void FlatParameters::fill_from_without_gaps(Tensor& flat, const Tensor& unpadded) const {
  if (flat.numel() != flat_.numel() || unpadded.numel() != size_without_gaps() ||
      flat.dtype() != DType::kFloat32 || unpadded.dtype() != DType::kFloat32 ||
      flat.device() != Device::kCPU) {
    throw std::logic_error("FlatParameters::fill_from_without_gaps: sizes, dtypes or device");
  }
  flat.fill_zero();
  int64_t at = 0;
  for (const ParameterSlice& slice : slices_) {
    flat.view(slice.offset, {slice.count}).copy_from(unpadded.view(at, {slice.count}));
    at += slice.count;
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
    flat_.view(slices_[i].offset, {slices_[i].count}).copy_from(values.reshape({slices_[i].count}));
  }
}

void FlatParameters::set_zero() { flat_.fill_zero(); }

ParameterCopy::ParameterCopy(const FlatParameters& master, DType dtype)
    : flat_(Tensor::empty({master.size()}, dtype, master.device())),
      weights_(master.views_of(flat_)) {
  refresh(master);
}

void ParameterCopy::refresh(const FlatParameters& master) { flat_.convert_from(master.flat()); }

}  // namespace xlate::trainer
