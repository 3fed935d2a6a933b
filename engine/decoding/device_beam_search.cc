#include "engine/decoding/device_beam_search.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "engine/ops/ops.h"

namespace xlate {
namespace {

Tensor on(Device device, Tensor host) { return device == Device::kCPU ? host : host.to(device); }

Tensor int_tensor(Device device, const std::vector<int32_t>& values) {
  return on(device, Tensor::from_vector(values, {static_cast<int64_t>(values.size())}));
}

class DeviceBeamSearchRun : public SearchRun {
 public:
  DeviceBeamSearchRun(DeviceIncrementalDecoder& decoder, const std::vector<int>& max_lengths,
                      const SearchOptions& options, int sync_interval)
      : decoder_(decoder), options_(options), device_(decoder.device()),
        beam_(options.beam_size), max_lengths_(max_lengths),
        sync_interval_(std::max(1, sync_interval)) {
    if (beam_ < 1 || beam_ > kMaxDeviceBeam) {
      throw std::logic_error("device beam search: beam_size must be in [1, 15]");
    }
    const int64_t sentences = static_cast<int64_t>(max_lengths.size());
    if (sentences == 0) {
      finished_ = true;
      return;
    }
    const int64_t finished_slots = 3 * beam_;
    const int longest = *std::max_element(max_lengths.begin(), max_lengths.end());
    for (int32_t s = 0; s < sentences; ++s) live_.push_back(s);
    t_.sentence_ids = int_tensor(device_, live_);
    t_.max_lengths = int_tensor(device_, max_lengths_);
    t_.done = Tensor::zeros({sentences}, DType::kInt32, device_);
    t_.finished_count = Tensor::zeros({sentences}, DType::kInt32, device_);
    t_.finished_scores = Tensor::empty({sentences, finished_slots}, DType::kFloat32, device_);
    t_.finished_log_probs = Tensor::empty({sentences, finished_slots}, DType::kFloat32, device_);
    t_.finished_last_steps = Tensor::empty({sentences, finished_slots}, DType::kInt32, device_);
    t_.finished_last_index = Tensor::empty({sentences, finished_slots}, DType::kInt32, device_);
    t_.history_tokens = Tensor::empty({longest, sentences * beam_}, DType::kInt32, device_);
    t_.history_parents = Tensor::empty({longest, sentences * beam_}, DType::kInt32, device_);

    // Every sentence gets its B rows at once; all but the first start at log P = -inf, so the
    // first step continues the first alone (as the host search's single start hypothesis).
    std::vector<int32_t> rows;
    std::vector<float> scores;
    for (int32_t s = 0; s < sentences; ++s) {
      for (int b = 0; b < beam_; ++b) {
        rows.push_back(s);
        scores.push_back(b == 0 ? 0.f : -INFINITY);
      }
    }
    decoder_.select_rows(rows);
    const auto row_count = static_cast<int64_t>(rows.size());
    t_.next_tokens = int_tensor(device_, std::vector<int32_t>(rows.size(), options.start_token));
    t_.next_scores = on(device_, Tensor::from_vector(scores, {row_count}));
    t_.source_rows = Tensor::empty({row_count}, DType::kInt32, device_);
    max_live_length_ = longest;
  }

  bool done() const override { return finished_; }
  int live_sentences() const override { return finished_ ? 0 : static_cast<int>(live_.size()); }

  void step() override {
    const TopK top = decoder_.step_on_device(t_.next_tokens, t_.next_scores, 2 * beam_ + 1);
    BeamStepParams params;
    params.beam = beam_;
    params.step = step_;
    params.n_best = options_.n_best;
    params.min_length = options_.min_length;
    params.end_token = options_.end_token;
    params.length_penalty = options_.length_penalty;
    beam_search_step(t_, top, params);
    decoder_.select_rows_on_device(t_.source_rows);
    ++step_;
    if (++since_sync_ >= sync_interval_ || step_ >= max_live_length_) sync();
  }

  std::vector<std::vector<Hypothesis>> take_results() override {
    if (max_lengths_.empty()) return {};
    const Tensor count = t_.finished_count.to(Device::kCPU);
    const Tensor scores = t_.finished_scores.to(Device::kCPU);
    const Tensor log_probs = t_.finished_log_probs.to(Device::kCPU);
    const Tensor last_steps = t_.finished_last_steps.to(Device::kCPU);
    const Tensor last_index = t_.finished_last_index.to(Device::kCPU);
    const Tensor tokens = t_.history_tokens.to(Device::kCPU);
    const Tensor parents = t_.history_parents.to(Device::kCPU);
    const int64_t slots = scores.dim(1), width = tokens.dim(1);
    std::vector<std::vector<Hypothesis>> results(max_lengths_.size());
    for (size_t s = 0; s < results.size(); ++s) {
      const int kept = std::min(count.data<int32_t>()[s], options_.n_best);
      for (int j = 0; j < kept; ++j) {
        const int64_t at = static_cast<int64_t>(s) * slots + j;
        Hypothesis hypothesis;
        hypothesis.score = scores.data<float>()[at];
        hypothesis.log_prob = log_probs.data<float>()[at];
        // Walk back through the history from the hypothesis's last token.
        int32_t index = last_index.data<int32_t>()[at];
        for (int32_t t = last_steps.data<int32_t>()[at]; t >= 0; --t) {
          const int64_t cell = t * width + static_cast<int64_t>(s) * beam_ + index;
          hypothesis.tokens.push_back(tokens.data<int32_t>()[cell]);
          index = parents.data<int32_t>()[cell];
        }
        std::reverse(hypothesis.tokens.begin(), hypothesis.tokens.end());
        results[s].push_back(std::move(hypothesis));
      }
    }
    return results;
  }

 private:
  // Reads the done flags (the one wait for the device) and drops finished sentences' rows.
  void sync() {
    since_sync_ = 0;
    const Tensor done = t_.done.to(Device::kCPU);
    std::vector<int32_t> kept_live, kept_rows;
    for (size_t i = 0; i < live_.size(); ++i) {
      if (done.data<int32_t>()[live_[i]]) continue;
      kept_live.push_back(live_[i]);
      for (int b = 0; b < beam_; ++b) kept_rows.push_back(static_cast<int32_t>(i) * beam_ + b);
    }
    if (kept_live.empty()) {
      finished_ = true;
      return;
    }
    if (kept_live.size() != live_.size()) {
      decoder_.select_rows(kept_rows);
      const Tensor rows = int_tensor(device_, kept_rows);
      const auto row_count = static_cast<int64_t>(kept_rows.size());
      Tensor tokens = Tensor::empty({row_count}, DType::kInt32, device_);
      Tensor scores = Tensor::empty({row_count}, DType::kFloat32, device_);
      gather_rows(tokens, t_.next_tokens, rows);
      gather_rows(scores, t_.next_scores, rows);
      t_.next_tokens = std::move(tokens);
      t_.next_scores = std::move(scores);
      t_.source_rows = Tensor::empty({row_count}, DType::kInt32, device_);
      t_.sentence_ids = int_tensor(device_, kept_live);
      live_ = std::move(kept_live);
    }
    max_live_length_ = 0;
    for (int32_t s : live_) max_live_length_ = std::max(max_live_length_, max_lengths_[s]);
    if (step_ >= max_live_length_) {
      throw std::logic_error("device beam search: a sentence outlived its maximum length");
    }
  }

  DeviceIncrementalDecoder& decoder_;
  const SearchOptions options_;
  const Device device_;
  const int beam_;
  const std::vector<int> max_lengths_;
  const int sync_interval_;
  BeamSearchTensors t_;
  std::vector<int32_t> live_;  // sentences with rows, in row order (as of the last sync)
  int step_ = 0;
  int since_sync_ = 0;
  int max_live_length_ = 0;
  bool finished_ = false;
};

}  // namespace

std::unique_ptr<SearchRun> start_device_beam_search(DeviceIncrementalDecoder& decoder,
                                                    const std::vector<int>& max_lengths,
                                                    const SearchOptions& options,
                                                    int sync_interval) {
  return std::make_unique<DeviceBeamSearchRun>(decoder, max_lengths, options, sync_interval);
}

}  // namespace xlate
