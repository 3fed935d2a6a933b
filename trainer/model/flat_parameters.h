// A model's parameters (or their gradients, or an optimizer moment) in one contiguous float32
// buffer on one device, with the typed TransformerWeights as views into it. One buffer means one
// all-reduce, one optimizer loop and one file tensor per state, while every layer keeps its named
// tensors.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/model_config.h"
#include "engine/model_weights.h"
#include "trainer/distributed/flat_range.h"

namespace xlate::trainer {

// Every parameter starts at a multiple of this many elements of the flat buffer (32 bytes in
// float32, 16 in a 16-bit ParameterCopy): cuBLASLt's vectorised kernels and bias epilogue load 16
// bytes at a time, and a weight after a vocabulary-sized vector of odd length would otherwise sit
// at 2-byte alignment in 16 bits. The gaps hold zeros and belong to no parameter: no gradient,
// no optimizer moment, nothing in a checkpoint.
inline constexpr int64_t kParameterAlignment = 8;

// A parameter's place in the flat buffer.
struct ParameterSlice {
  std::string name;
  int64_t offset = 0;  // elements
  int64_t count = 0;
  bool trainable = true;  // false for the fixed sinusoidal position tables
};

// The parameters in the storage type of 16-bit activations (float16 / bfloat16): a copy of the
// float32 master weights, made again by refresh() after each optimizer step (one conversion over
// the flat buffer), that the forward and backward passes read instead of the master.
class ParameterCopy;

class FlatParameters {
 public:
  // Zero-initialised storage for every parameter of `config` on `device`.
  explicit FlatParameters(const ModelConfig& config, Device device = Device::kCPU);
  FlatParameters(const FlatParameters&) = delete;
  FlatParameters& operator=(const FlatParameters&) = delete;

  TransformerWeights& weights() { return weights_; }
  const TransformerWeights& weights() const { return weights_; }
  Tensor& flat() { return flat_; }  // [P]: the parameters, each aligned (kParameterAlignment)
  const Tensor& flat() const { return flat_; }
  int64_t size() const { return flat_.numel(); }
  const std::vector<ParameterSlice>& slices() const { return slices_; }
  // The trainable parameters as ranges of the flat buffer, in layout order, each with the
  // alignment gap after it (zeros on every rank: reducing or updating them changes nothing), so
  // that neighbours meet and join into one all-reduce bucket or one optimizer call.
  std::vector<FlatRange> trainable_ranges() const;

  Device device() const { return flat_.device(); }

  // Copies every parameter of `source` (same config, any device and float dtype) into this
  // buffer.
  void copy_from(const TransformerWeights& source, const ModelConfig& config);
  void set_zero();
  // The typed views of this layout into another flat buffer [P] of any float dtype (a host copy
  // of flat(), for checkpoints; a 16-bit copy, for 16-bit activations).
  TransformerWeights views_of(const Tensor& flat) const;

  // A float32 buffer of this layout [P] (any device) with the alignment gaps taken out: the
  // parameters back to back, as checkpoints store the optimizer's moments (and as this layout
  // was before the gaps, so older checkpoints read the same). On the host.
  Tensor without_gaps(const Tensor& flat) const;
  // The inverse: `unpadded` [sum of the counts] into `flat` [P] (host), the gaps zero.
  void fill_from_without_gaps(Tensor& flat, const Tensor& unpadded) const;
  int64_t size_without_gaps() const;

 private:
  ModelConfig config_;
  Tensor flat_;
  TransformerWeights weights_;
  std::vector<ParameterSlice> slices_;
};

class ParameterCopy {
 public:
  ParameterCopy(const FlatParameters& master, DType dtype);
  ParameterCopy(const ParameterCopy&) = delete;
  ParameterCopy& operator=(const ParameterCopy&) = delete;

  // Converts the master's current values into this copy.
  void refresh(const FlatParameters& master);
  const TransformerWeights& weights() const { return weights_; }
  const Tensor& flat() const { return flat_; }

 private:
  Tensor flat_;
  TransformerWeights weights_;
};

}  // namespace xlate::trainer
