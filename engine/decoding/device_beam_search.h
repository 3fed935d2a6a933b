// Beam search whose state lives on the decoder's device (the op beam_search_step), for GPU
// decoding: a step launches the decoder, the top-k and the search step and returns without
// waiting for the device. The host looks at the sentences' done flags every `sync_interval`
// steps (one small copy), drops the rows of finished sentences then, and reads the finished
// hypotheses back once, at the end. Same results as make_beam_search() (the host search, which
// is its reference in the tests); beams of 1 to 15 (kernels/beam_search_step.h).
#pragma once

#include <memory>
#include <vector>

#include "engine/decoding/search.h"

namespace xlate {

// An incremental decoder that takes and returns device tensors as well.
class DeviceIncrementalDecoder : public IncrementalDecoder {
 public:
  virtual Device device() const = 0;
  // step() on device(): tokens int32 [R], row_scores float32 [R]; TopK [R, min(k, V)] stays
  // there. k <= kMaxDeviceTopK.
  virtual TopK step_on_device(const Tensor& tokens, const Tensor& row_scores, int k) = 0;
  // select_rows() with source_rows int32 [R] on device(), each a row of the same sentence.
  virtual void select_rows_on_device(const Tensor& source_rows) = 0;
};

constexpr int kMaxDeviceBeam = 15;

// `decoder` holds one row per sentence and must outlive the run; 1 <= beam_size <= 15.
std::unique_ptr<SearchRun> start_device_beam_search(DeviceIncrementalDecoder& decoder,
                                                    const std::vector<int>& max_lengths,
                                                    const SearchOptions& options,
                                                    int sync_interval = 4);

}  // namespace xlate
