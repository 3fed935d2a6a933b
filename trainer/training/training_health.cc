#include "trainer/training/training_health.h"

#include <cmath>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace xlate::trainer {

double unigram_entropy(const TokenCorpus& corpus, int32_t eos_id) {
  std::vector<int64_t> counts(static_cast<size_t>(corpus.vocab_size()), 0);
  int64_t total = 0;
  for (int64_t i = 0; i < corpus.size(); ++i) {
    for (int32_t id : corpus.target(i)) ++counts[static_cast<size_t>(id)];
    ++counts[static_cast<size_t>(eos_id)];
    total += corpus.target_length(i) + 1;
  }
  double entropy = 0;
  for (int64_t count : counts) {
    if (count == 0) continue;
    const double p = static_cast<double>(count) / static_cast<double>(total);
    entropy -= p * std::log(p);
  }
  return entropy;
}

std::string parameter_group(const std::string& name) {
  std::vector<std::string> parts = absl::StrSplit(name, '.');
  if (!parts.empty() && parts.front() == "model") parts.erase(parts.begin());
  if (parts.size() > 1) parts.pop_back();  // weight, bias
  std::vector<std::string> kept;
  for (size_t i = 0; i < parts.size(); ++i) {
    const bool index = !parts[i].empty() && parts[i].find_first_not_of("0123456789") == std::string::npos;
    if (index || parts[i] == "layers") continue;
    kept.push_back(parts[i]);
  }
  return kept.empty() ? name : absl::StrJoin(kept, ".");
}

std::vector<std::pair<std::string, double>> update_ratios(
    const std::vector<ParameterSlice>& slices, const float* before, const float* after) {
  std::vector<std::string> order;
  std::map<std::string, std::pair<double, double>> sums;  // group -> (Σ Δ², Σ w²)
  for (const ParameterSlice& slice : slices) {
    if (!slice.trainable) continue;
    const std::string group = parameter_group(slice.name);
    auto [entry, inserted] = sums.try_emplace(group, 0.0, 0.0);
    if (inserted) order.push_back(group);
    for (int64_t i = slice.offset; i < slice.offset + slice.count; ++i) {
      const double change = static_cast<double>(after[i]) - before[i];
      entry->second.first += change * change;
      entry->second.second += static_cast<double>(before[i]) * before[i];
    }
  }
  std::vector<std::pair<std::string, double>> ratios;
  for (const std::string& group : order) {
    const auto& [changes, weights] = sums[group];
    ratios.emplace_back(group, weights > 0 ? std::sqrt(changes / weights) : std::sqrt(changes));
  }
  return ratios;
}

std::optional<std::string> PlateauWatch::observe(int64_t step, double nll) {
  if (steps_ <= 0) return std::nullopt;
  if (std::fabs(nll - entropy_) > kMargin) {
    plateau_since_.reset();
    warned_ = false;
    return std::nullopt;
  }
  if (!plateau_since_) plateau_since_ = step;
  if (warned_ || step - *plateau_since_ < steps_) return std::nullopt;
  warned_ = true;
  return absl::StrFormat(
      "warning: the training loss has stayed at the unigram entropy of the targets (%.3f nats, "
      "within %.1f) since step %d: the model predicts token frequencies only, ignoring the "
      "source and the prefix. Look at the update ratios and activation maxima of the log "
      "(train_log.jsonl); a lower --lr_scale, a longer --warmup_steps or --norm_position pre "
      "are what usually gets such a run learning",
      entropy_, kMargin, *plateau_since_);
}

}  // namespace xlate::trainer
