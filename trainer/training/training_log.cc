#include "trainer/training/training_log.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <iostream>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace xlate::trainer {
namespace {

std::string clock_text(double seconds) {
  const int64_t total = static_cast<int64_t>(std::max(0.0, seconds));
  return absl::StrFormat("%d:%02d:%02d", total / 3600, (total / 60) % 60, total % 60);
}

}  // namespace

absl::StatusOr<std::unique_ptr<TrainingLog>> TrainingLog::Open(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "a");
  if (file == nullptr) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot open the training log ", path, ": ", std::strerror(errno)));
  }
  return std::unique_ptr<TrainingLog>(new TrainingLog(file));
}

TrainingLog::~TrainingLog() { std::fclose(file_); }

void TrainingLog::write_line(const std::string& json) {
  std::fputs(json.c_str(), file_);
  std::fputc('\n', file_);
  std::fflush(file_);
}

void TrainingLog::step(const StepReport& r) {
  const double ppl = std::exp(r.nll);
  std::string extra =
      r.loss_scale ? absl::StrFormat(" | scale %g (%d skipped)", *r.loss_scale, r.skipped_steps)
                   : std::string();
  if (!r.update_ratios.empty()) {
    const auto [smallest, largest] = std::minmax_element(
        r.update_ratios.begin(), r.update_ratios.end(),
        [](const auto& a, const auto& b) { return a.second < b.second; });
    absl::StrAppend(&extra, absl::StrFormat(" | update %.1e (%s) to %.1e (%s)",
                                              smallest->second, smallest->first, largest->second,
                                              largest->first));
  }
  if (!r.activation_maxima.empty()) {
    const auto largest = std::max_element(
        r.activation_maxima.begin(), r.activation_maxima.end(),
        [](const auto& a, const auto& b) { return a.second < b.second; });
    absl::StrAppend(&extra, absl::StrFormat(" | act max %.3g (%s)", largest->second,
                                              largest->first));
  }
  std::cerr << absl::StrFormat(
                   "step %d/%d | epoch %d | loss %.4f | ppl %.2f | lr %.3e | gnorm %.3f%s | "
                   "%.0f tok/s | elapsed %s | eta %s",
                   r.step, r.max_steps, r.epoch + 1, r.loss, ppl, r.learning_rate,
                   r.gradient_norm, extra, r.tokens_per_second, clock_text(r.elapsed_seconds),
                   clock_text(r.eta_seconds))
            << std::endl;
  nlohmann::json json = {{"event", "train"},          {"step", r.step},
                         {"epoch", r.epoch},          {"loss", r.loss},
                         {"nll", r.nll},              {"ppl", ppl},
                         {"lr", r.learning_rate},     {"grad_norm", r.gradient_norm},
                         {"source_tokens", r.source_tokens},
                         {"target_tokens", r.target_tokens},
                         {"tokens_per_second", r.tokens_per_second},
                         {"elapsed_seconds", r.elapsed_seconds}, {"eta_seconds", r.eta_seconds}};
  if (r.reduce_seconds > 0) {
    json["reduce_seconds"] = r.reduce_seconds;
    json["exposed_reduce_seconds"] = r.exposed_reduce_seconds;
  }
  if (r.gpu_memory_bytes) json["gpu_memory_bytes"] = *r.gpu_memory_bytes;
  if (r.gpu_memory_peak_in_use_bytes) {
    json["gpu_memory_peak_in_use_bytes"] = *r.gpu_memory_peak_in_use_bytes;
  }
  if (r.device_wait_seconds) {
    json["device_wait_seconds"] = *r.device_wait_seconds;
    json["interval_seconds"] = r.interval_seconds.value_or(0);
  }
  json["plans_made"] = r.plans_made;
  json["plan_seconds"] = r.plan_seconds;
  if (r.peak_host_memory_bytes > 0) json["peak_host_memory_bytes"] = r.peak_host_memory_bytes;
  if (r.loss_scale) {
    json["loss_scale"] = *r.loss_scale;
    json["skipped_steps"] = r.skipped_steps;
  }
  for (const auto& [group, ratio] : r.update_ratios) json["update_ratio"][group] = ratio;
  for (const auto& [layer, largest] : r.activation_maxima) json["activation_max"][layer] = largest;
  write_line(json.dump());
}

void TrainingLog::validation(const ValidationReport& r) {
  const double ppl = std::exp(r.nll);
  std::string line = absl::StrFormat("valid step %d | loss %.4f | ppl %.2f", r.step, r.loss, ppl);
  nlohmann::json json = {{"event", "valid"}, {"step", r.step}, {"loss", r.loss},
                         {"nll", r.nll},     {"ppl", ppl},     {"target_tokens", r.target_tokens},
                         {"seconds", r.seconds}};
  if (r.bleu) {
    absl::StrAppend(&line, absl::StrFormat(" | BLEU %.2f (%d sentences)", *r.bleu,
                                           r.bleu_sentences));
    json["bleu"] = *r.bleu;
    json["bleu_sentences"] = r.bleu_sentences;
  }
  std::cerr << line << std::endl;
  write_line(json.dump());
}

void TrainingLog::message(const std::string& text) {
  std::cerr << text << std::endl;
  write_line(nlohmann::json{{"event", "message"}, {"text", text}}.dump());
}

}  // namespace xlate::trainer
