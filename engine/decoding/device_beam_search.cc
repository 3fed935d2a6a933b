#include "engine/decoding/device_beam_search.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <string>

#include "engine/ops/backend.h"

namespace xlate {
namespace {

// What the host reads of device state: the tensor itself on the CPU, a copy otherwise.
Tensor on_host(const Tensor& t) { return t.on(Device::kCPU); }

template <typename T>
Tensor tensor_on(Device device, const std::vector<T>& values) {
  return Tensor::from_vector(values, {static_cast<int64_t>(values.size())}).on(device);
}

// array[slots[i]] = values[i] for a per-slot array [S] on the device; slots int32 [n] there.
template <typename T>
void set_entries(Tensor& array, const Tensor& slots, const std::vector<T>& values) {
  Tensor entries = array.reshape({array.numel(), 1});
  scatter_rows(entries, tensor_on(array.device(), values).reshape({slots.numel(), 1}), slots);
}

}  // namespace

DeviceBeamSearch::DeviceBeamSearch(DeviceIncrementalDecoder& decoder, int slots, int max_beam,
                                   int max_length, int sync_interval)
    : decoder_(decoder), device_(decoder.device()), max_beam_(max_beam),
      sync_interval_(sync_interval > 0 ? sync_interval : device_ == Device::kCPU ? 1 : 4) {
  if (slots < 1 || max_beam < 1 || max_beam > op_backend(device_).max_beam || max_length < 1) {
    throw std::logic_error("DeviceBeamSearch: needs slots >= 1, max_beam in [1, " +
                           std::to_string(op_backend(device_).max_beam) +
                           "], max_length >= 1");
  }
  const int64_t count = slots, finished = 3 * max_beam;
  for (Tensor* t : {&t_.beams, &t_.n_bests, &t_.min_lengths, &t_.max_lengths}) {
    *t = Tensor::zeros({count}, DType::kInt32, device_);
  }
  t_.length_penalties = Tensor::zeros({count}, DType::kFloat32, device_);
  for (Tensor* t : {&t_.steps, &t_.done, &t_.finished_count}) {
    *t = Tensor::zeros({count}, DType::kInt32, device_);
  }
  t_.finished_scores = Tensor::empty({count, finished}, DType::kFloat32, device_);
  t_.finished_log_probs = Tensor::empty({count, finished}, DType::kFloat32, device_);
  t_.finished_last_steps = Tensor::empty({count, finished}, DType::kInt32, device_);
  t_.finished_last_index = Tensor::empty({count, finished}, DType::kInt32, device_);
  t_.history_tokens = Tensor::empty({max_length, count * max_beam}, DType::kInt32, device_);
  t_.history_parents = Tensor::empty({max_length, count * max_beam}, DType::kInt32, device_);
  done_on_host_ = device_ == Device::kCPU ? t_.done
                                          : Tensor::staging({count}, DType::kInt32, device_);
  place({});
}

void DeviceBeamSearch::add(const std::vector<int>& slots, const std::vector<int>& max_lengths,
                           const SearchOptions& options,
                           const std::vector<Constraints>& constraints) {
  add(slots, max_lengths, std::vector<SearchOptions>(slots.size(), options), constraints);
}

void DeviceBeamSearch::add(const std::vector<int>& slots, const std::vector<int>& max_lengths,
                           const std::vector<SearchOptions>& options,
                           const std::vector<Constraints>& constraints) {
  if (slots.empty()) return;
  const int64_t capacity = t_.beams.numel(), longest = t_.history_tokens.dim(0);
  if (slots.size() != max_lengths.size() || slots.size() != options.size()) {
    throw std::logic_error("DeviceBeamSearch::add: one max length and options per slot");
  }
  const int end_token = end_token_ >= 0 ? end_token_ : options.front().end_token;
  for (size_t i = 0; i < slots.size(); ++i) {
    const bool taken = std::any_of(live_.begin(), live_.end(),
                                   [&](const Sentence& s) { return s.slot == slots[i]; });
    if (slots[i] < 0 || slots[i] >= capacity || taken || max_lengths[i] < 1 ||
        max_lengths[i] > longest) {
      throw std::logic_error("DeviceBeamSearch::add: a slot taken or out of range, or a max "
                             "length outside [1, max_length]");
    }
    if (options[i].beam_size < 1 || options[i].beam_size > max_beam_ ||
        options[i].end_token != end_token ||
        options[i].start_token != options.front().start_token) {
      throw std::logic_error("DeviceBeamSearch::add: beam beyond max_beam or another end token");
    }
  }
  start_token_ = options.front().start_token;
  end_token_ = end_token;
  if (!constraints.empty()) {
    if (constraints.size() != slots.size()) {
      throw std::logic_error("DeviceBeamSearch::add: constraints for some sentences only");
    }
    set_constraints(slots, constraints);
  } else if (t_.constrained()) {
    set_constraints(slots, std::vector<Constraints>(slots.size()));
  }
  const auto count = slots.size();
  const Tensor slot_ids = tensor_on(device_, std::vector<int32_t>(slots.begin(), slots.end()));
  std::vector<int32_t> beams, n_bests, min_lengths;
  std::vector<float> length_penalties;
  for (const SearchOptions& sentence : options) {
    beams.push_back(sentence.beam_size);
    n_bests.push_back(sentence.n_best);
    min_lengths.push_back(sentence.min_length);
    length_penalties.push_back(sentence.length_penalty);
  }
  set_entries(t_.beams, slot_ids, beams);
  set_entries(t_.n_bests, slot_ids, n_bests);
  set_entries(t_.min_lengths, slot_ids, min_lengths);
  set_entries(t_.max_lengths, slot_ids, std::vector<int32_t>(max_lengths.begin(), max_lengths.end()));
  set_entries(t_.length_penalties, slot_ids, length_penalties);
  for (Tensor* state : {&t_.steps, &t_.done, &t_.finished_count}) {
    set_entries(*state, slot_ids, std::vector<int32_t>(count, 0));
  }
  std::vector<int32_t> kept_rows(static_cast<size_t>(rows_));
  for (int r = 0; r < rows_; ++r) kept_rows[r] = r;
  for (size_t i = 0; i < count; ++i) {
    live_.push_back({slots[i], options[i].beam_size, options[i].n_best, max_lengths[i],
                     options[i].length_penalty, 0, options[i].report_stable_prefix});
    if (!constraints.empty()) live_.back().constraints = static_cast<int>(constraints[i].size());
  }
  place(kept_rows);
}

void DeviceBeamSearch::set_constraints(const std::vector<int>& slots,
                                       const std::vector<Constraints>& constraints) {
  constexpr int kCount = rules::kMaxConstraints, kTokens = rules::kMaxConstraintTokens;
  bool any = false;
  for (const Constraints& sentence : constraints) {
    int tokens = 0;
    for (const std::vector<int32_t>& constraint : sentence) {
      tokens += static_cast<int>(constraint.size());
      for (int32_t token : constraint) {
        if (token < 0 || token == end_token_) {
          throw std::logic_error("DeviceBeamSearch::add: a constraint token < 0 or the end");
        }
      }
      if (constraint.empty()) throw std::logic_error("DeviceBeamSearch::add: an empty constraint");
    }
    if (static_cast<int>(sentence.size()) > kCount || tokens > kTokens) {
      throw std::logic_error("DeviceBeamSearch::add: more constraints or tokens than it holds");
    }
    any = any || !sentence.empty();
  }
  if (!any && !t_.constrained()) return;
  if (!op_backend(device_).lexical_constraints) {
    throw std::logic_error(std::string("DeviceBeamSearch::add: lexical constraints on the ") +
                           op_backend(device_).name + " backend");
  }
  const int64_t capacity = t_.beams.numel();
  if (!t_.constrained()) {
    // The slots' constraints are written on the host and uploaded whole (a few KB); the rows'
    // state starts as "nothing met, none under way".
    host_constraints_.counts = Tensor::zeros({capacity}, DType::kInt32);
    host_constraints_.starts = Tensor::zeros({capacity, kCount + 1}, DType::kInt32);
    host_constraints_.tokens = Tensor::zeros({capacity, kTokens}, DType::kInt32);
    Tensor none_under_way = Tensor::empty({rows_}, DType::kInt32);
    std::fill_n(none_under_way.data<int32_t>(), rows_, -1);
    t_.row_progress = none_under_way.to(device_);
    for (Tensor* t : {&t_.row_met, &t_.next_met, &t_.next_progress}) {
      *t = Tensor::zeros({rows_}, DType::kInt32, device_);
    }
  }
  for (size_t i = 0; i < slots.size(); ++i) {
    const int64_t slot = slots[i];
    int32_t* starts = host_constraints_.starts.data<int32_t>() + slot * (kCount + 1);
    int32_t* tokens = host_constraints_.tokens.data<int32_t>() + slot * kTokens;
    host_constraints_.counts.data<int32_t>()[slot] = static_cast<int32_t>(constraints[i].size());
    int32_t at = 0;
    starts[0] = 0;
    for (size_t j = 0; j < constraints[i].size(); ++j) {
      for (int32_t token : constraints[i][j]) tokens[at++] = token;
      starts[j + 1] = at;
    }
  }
  t_.constraint_counts = host_constraints_.counts.on(device_);
  t_.constraint_starts = host_constraints_.starts.on(device_);
  t_.constraint_tokens = host_constraints_.tokens.on(device_);
}

std::vector<DeviceBeamSearch::Finished> DeviceBeamSearch::step() {
  if (live_.empty()) return {};
  const TopK top = decoder_.step_on_device(t_.next_tokens, t_.next_scores, candidates_,
                                          t_.wanted_width() > 0 ? t_.row_wanted : Tensor());
  beam_search_step(t_, top, end_token_);
  if (t_.constrained()) {
    std::swap(t_.row_met, t_.next_met);
    std::swap(t_.row_progress, t_.next_progress);
    std::swap(t_.row_wanted, t_.next_wanted);
  }
  decoder_.select_rows_on_device(t_.source_rows);
  for (Sentence& sentence : live_) ++sentence.decoded;
  --steps_to_max_length_;
  if (++since_sync_ >= sync_interval_ || steps_to_max_length_ <= 0) return sync();
  return {};
}

std::vector<int> DeviceBeamSearch::abandon() {
  std::vector<int> slots;
  for (const Sentence& sentence : live_) slots.push_back(sentence.slot);
  live_.clear();
  progress_.clear();
  since_sync_ = 0;
  place({});
  return slots;
}

std::vector<int> DeviceBeamSearch::drop(const std::vector<int>& slots) {
  std::vector<Sentence> kept;
  std::vector<int32_t> kept_rows;
  std::vector<int> dropped;
  int first_row = 0;
  for (const Sentence& sentence : live_) {
    if (std::find(slots.begin(), slots.end(), sentence.slot) != slots.end()) {
      dropped.push_back(sentence.slot);
    } else {
      kept.push_back(sentence);
      for (int b = 0; b < sentence.beam; ++b) kept_rows.push_back(first_row + b);
    }
    first_row += sentence.beam;
  }
  if (dropped.empty()) return dropped;
  forget_progress(dropped);
  live_ = std::move(kept);
  place(kept_rows);
  return dropped;
}

// Reads the done flags (the one wait for the device), returns the finished sentences' results,
// reports the others' stable prefixes where asked, and drops the finished sentences' rows.
std::vector<DeviceBeamSearch::Finished> DeviceBeamSearch::sync() {
  since_sync_ = 0;
  if (device_ != Device::kCPU) done_on_host_.copy_from(t_.done);
  const Tensor& done = done_on_host_;
  std::vector<Sentence> finished, kept;
  std::vector<int32_t> kept_rows;
  std::vector<size_t> reporting;  // indices into kept
  std::vector<int> reporting_rows;
  int first_row = 0;
  for (const Sentence& sentence : live_) {
    if (done.data<int32_t>()[sentence.slot]) {
      finished.push_back(sentence);
    } else {
      if (sentence.reports_prefix && sentence.decoded > 0) {
        reporting.push_back(kept.size());
        reporting_rows.push_back(first_row);
      }
      kept.push_back(sentence);
      for (int b = 0; b < sentence.beam; ++b) kept_rows.push_back(first_row + b);
    }
    first_row += sentence.beam;
  }
  if (!reporting.empty()) {
    std::vector<Sentence*> sentences;
    for (size_t i : reporting) sentences.push_back(&kept[i]);
    report_prefixes(sentences, reporting_rows);  // reads rows before place() renumbers them
  }
  live_ = std::move(kept);
  if (finished.empty()) {
    if (steps_to_max_length_ <= 0) {
      throw std::logic_error("DeviceBeamSearch: a sentence outlived its maximum length");
    }
    return {};
  }
  place(kept_rows);
  std::vector<int> finished_slots;
  for (const Sentence& sentence : finished) finished_slots.push_back(sentence.slot);
  forget_progress(finished_slots);  // their slots may take new sentences before it is taken
  return collect(finished);
}

void DeviceBeamSearch::forget_progress(const std::vector<int>& slots) {
  progress_.erase(std::remove_if(progress_.begin(), progress_.end(),
                                 [&](const Progress& progress) {
                                   return std::find(slots.begin(), slots.end(), progress.slot) !=
                                          slots.end();
                                 }),
                  progress_.end());
}

HypothesisHistory DeviceBeamSearch::HostState::history(int slot, int max_beam) const {
  return {history_tokens.data<int32_t>(), history_parents.data<int32_t>(),
          history_tokens.dim(1), static_cast<int64_t>(slot) * max_beam};
}

DeviceBeamSearch::HostState DeviceBeamSearch::read_state(int steps) const {
  const int64_t width = t_.history_tokens.dim(1);
  return {on_host(t_.finished_count),
          on_host(t_.finished_scores),
          on_host(t_.finished_log_probs),
          on_host(t_.finished_last_steps),
          on_host(t_.finished_last_index),
          on_host(t_.history_tokens.view(0, {steps, width})),
          on_host(t_.history_parents.view(0, {steps, width}))};
}

void DeviceBeamSearch::report_prefixes(const std::vector<Sentence*>& sentences,
                                       const std::vector<int>& first_rows) {
  int steps = 0;
  for (const Sentence* sentence : sentences) steps = std::max(steps, sentence->decoded);
  const HostState state = read_state(steps);
  const Tensor scores = on_host(t_.next_scores);
  const int64_t finished_slots = state.finished_scores.dim(1);
  for (size_t i = 0; i < sentences.size(); ++i) {
    Sentence& sentence = *sentences[i];
    StablePrefixQuery query;
    query.steps = sentence.decoded;
    query.length_penalty = sentence.length_penalty;
    query.max_length = sentence.max_length;
    for (int b = 0; b < sentence.beam; ++b) {
      const float log_prob = scores.data<float>()[first_rows[i] + b];
      if (log_prob != -INFINITY) query.live.push_back({b, log_prob});  // else an idle row
    }
    if (state.finished_count.data<int32_t>()[sentence.slot] > 0) {
      const int64_t best = static_cast<int64_t>(sentence.slot) * finished_slots;
      query.best_finished = FinishedHypothesis{state.finished_scores.data<float>()[best],
                                               state.finished_last_steps.data<int32_t>()[best],
                                               state.finished_last_index.data<int32_t>()[best]};
    }
    std::vector<int32_t> prefix = stable_prefix(state.history(sentence.slot, max_beam_), query);
    if (prefix.size() > sentence.stable_length) {
      sentence.stable_length = prefix.size();
      progress_.push_back({sentence.slot, std::move(prefix)});
    }
  }
}

std::vector<DeviceBeamSearch::Finished> DeviceBeamSearch::collect(
    const std::vector<Sentence>& sentences) const {
  // The history up to the longest of these sentences' steps, no further.
  int steps = 0;
  for (const Sentence& sentence : sentences) steps = std::max(steps, sentence.decoded);
  const HostState state = read_state(steps);
  const int64_t slots = state.finished_scores.dim(1);
  std::vector<Finished> results;
  for (const Sentence& sentence : sentences) {
    Finished finished{sentence.slot, {}};
    const HypothesisHistory history = state.history(sentence.slot, max_beam_);
    const int kept = std::min(state.finished_count.data<int32_t>()[sentence.slot], sentence.n_best);
    for (int j = 0; j < kept; ++j) {
      const int64_t at = static_cast<int64_t>(sentence.slot) * slots + j;
      Hypothesis hypothesis;
      hypothesis.score = state.finished_scores.data<float>()[at];
      hypothesis.log_prob = state.finished_log_probs.data<float>()[at];
      hypothesis.tokens = history.trace(state.finished_last_steps.data<int32_t>()[at],
                                        state.finished_last_index.data<int32_t>()[at]);
      finished.hypotheses.push_back(std::move(hypothesis));
    }
    results.push_back(std::move(finished));
  }
  return results;
}

void DeviceBeamSearch::place(const std::vector<int32_t>& kept_rows) {
  std::vector<RowPlacement> placements;
  std::vector<int32_t> sentence_ids, first_rows, new_tokens;
  std::vector<float> new_scores;
  candidates_ = 1;
  steps_to_max_length_ = t_.history_tokens.dim(0);
  for (const Sentence& sentence : live_) {
    sentence_ids.push_back(sentence.slot);
    first_rows.push_back(static_cast<int32_t>(placements.size()));
    const bool starts = placements.size() >= kept_rows.size();
    for (int b = 0; b < sentence.beam; ++b) {
      const int32_t source = starts ? -1 : kept_rows[placements.size()];
      placements.push_back({source, sentence.slot, b, sentence.decoded});
      if (starts) {
        // All but the first row start at log P = -inf, so the first step continues the first
        // alone (as the host search's single start hypothesis).
        new_tokens.push_back(start_token_);
        new_scores.push_back(b == 0 ? 0.f : -INFINITY);
      }
    }
    candidates_ = std::max(candidates_, 2 * sentence.beam + 1);
    steps_to_max_length_ = std::min(steps_to_max_length_, sentence.max_length - sentence.decoded);
  }
  decoder_.place_rows(placements);
  rows_ = static_cast<int>(placements.size());
  const int64_t kept = static_cast<int64_t>(kept_rows.size()), rows = rows_;
  Tensor tokens = Tensor::empty({rows}, DType::kInt32, device_);
  Tensor scores = Tensor::empty({rows}, DType::kFloat32, device_);
  if (kept > 0) {
    const Tensor sources = tensor_on(device_, kept_rows);
    Tensor kept_tokens = tokens.view(0, {kept}), kept_scores = scores.view(0, {kept});
    gather_rows(kept_tokens, t_.next_tokens, sources);
    gather_rows(kept_scores, t_.next_scores, sources);
  }
  if (rows > kept) {
    tokens.view(kept, {rows - kept}).copy_from(Tensor::from_vector(new_tokens, {rows - kept}));
    scores.view(kept, {rows - kept}).copy_from(Tensor::from_vector(new_scores, {rows - kept}));
  }
  t_.next_tokens = std::move(tokens);
  t_.next_scores = std::move(scores);
  t_.source_rows = Tensor::empty({rows}, DType::kInt32, device_);
  t_.sentence_ids = tensor_on(device_, sentence_ids);
  t_.first_rows = tensor_on(device_, first_rows);
  if (t_.constrained()) place_constraint_rows(kept_rows);
}

// On the host, whatever the device: the kept rows' state is read back (a GPU's: at a sync, where
// the search waits for the device anyway), the placed rows' is computed from the slots'
// constraints (host_constraints_) and uploaded.
void DeviceBeamSearch::place_constraint_rows(const std::vector<int32_t>& kept_rows) {
  int width = 0;  // W: the most wanted tokens a row can have
  for (const Sentence& sentence : live_) width = std::max(width, sentence.constraints);
  const int64_t rows = rows_;
  Tensor met = Tensor::zeros({rows}, DType::kInt32);
  Tensor progress = Tensor::empty({rows}, DType::kInt32);
  Tensor wanted = Tensor::empty({rows, width}, DType::kInt32);
  rules::BeamConstraints view{host_constraints_.counts.data<int32_t>(),
                                host_constraints_.starts.data<int32_t>(),
                                host_constraints_.tokens.data<int32_t>(),
                                nullptr, nullptr, nullptr,
                                met.data<int32_t>(), progress.data<int32_t>(),
                                wanted.data<int32_t>(), width};
  const Tensor old_met = t_.row_met.on(Device::kCPU);
  const Tensor old_progress = t_.row_progress.on(Device::kCPU);
  int64_t row = 0;
  for (const Sentence& sentence : live_) {
    for (int b = 0; b < sentence.beam; ++b, ++row) {
      const bool kept = row < static_cast<int64_t>(kept_rows.size());
      const int32_t row_met = kept ? old_met.data<int32_t>()[kept_rows[row]] : 0;
      const int32_t row_progress = kept ? old_progress.data<int32_t>()[kept_rows[row]] : -1;
      rules::constraint_detail::set_row(view, sentence.constraints > 0 ? sentence.slot : -1,
                                          row, row_met, row_progress);
    }
  }
  t_.row_met = met.on(device_);
  t_.row_progress = progress.on(device_);
  t_.row_wanted = wanted.on(device_);
  t_.next_met = Tensor::empty({rows}, DType::kInt32, device_);
  t_.next_progress = Tensor::empty({rows}, DType::kInt32, device_);
  t_.next_wanted = Tensor::empty({rows, width}, DType::kInt32, device_);
}

}  // namespace xlate
