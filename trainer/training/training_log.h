// What training reports: a progress line on stderr and the same figures as JSON lines
// (RUN/train_log.jsonl, appended across resumes) for plots and scripts.
//   {"event":"train","step":100,"loss":5.21,"nll":4.9,"ppl":134.3,"lr":1.2e-4,...}
//   {"event":"valid","step":1000,"loss":3.9,"nll":3.5,"ppl":33.1,"bleu":12.3,...}
// Losses are per target token in nats; ppl = exp(nll per token).
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace xlate::trainer {

struct StepReport {
  int64_t step = 0, max_steps = 0, epoch = 0;
  double loss = 0, nll = 0;  // per target token
  double learning_rate = 0, gradient_norm = 0;
  // With --loss_scale dynamic: the scale after the last step, and the steps skipped (gradient
  // not finite) since the last report.
  std::optional<double> loss_scale;
  int64_t skipped_steps = 0;
  int64_t source_tokens = 0, target_tokens = 0;  // this step, all ranks
  double tokens_per_second = 0;                  // source + target, since the last report
  // Since the last report, this rank (data parallel only): seconds in gradient all-reduces, and
  // the part of them the backward pass did not hide (the step waited for it).
  double reduce_seconds = 0, exposed_reduce_seconds = 0;
  double elapsed_seconds = 0, eta_seconds = 0;
  // On a GPU: the most device memory this rank's allocator has held (its high-water mark), and
  // the most its tensors used at once (the first less what the cache held idle).
  std::optional<int64_t> gpu_memory_bytes, gpu_memory_peak_in_use_bytes;
  // On a GPU, since the last report: the seconds the host waited for the device
  // (OpBackend::wait_seconds), and the seconds the interval took. Their difference is the
  // host's own work; an interval that hardly waits is bound by the host.
  std::optional<double> device_wait_seconds, interval_seconds;
  // Since the last report (validation's translations included): the per-shape plans the
  // device's backend made (cuBLASLt's, oneDNN's: OpBackend::plan_counts) and the host seconds
  // they took. Batches of new shapes make new plans every step.
  int64_t plans_made = 0;
  double plan_seconds = 0;
  int64_t peak_host_memory_bytes = 0;  // the logging rank's peak resident set so far
  // The reported step's ‖Δw‖ / ‖w‖ per parameter group, and the largest |activation| of each
  // layer's output in its last micro-batch (training_health.h).
  std::vector<std::pair<std::string, double>> update_ratios;
  std::vector<std::pair<std::string, double>> activation_maxima;
};

struct ValidationReport {
  int64_t step = 0;
  double loss = 0, nll = 0;  // per target token
  int64_t target_tokens = 0;
  std::optional<double> bleu;  // sacreBLEU-compatible, on the first bleu_sentences sentences
  int bleu_sentences = 0;
  double seconds = 0;
};

class TrainingLog {
 public:
  static absl::StatusOr<std::unique_ptr<TrainingLog>> Open(const std::string& path);
  ~TrainingLog();

  void step(const StepReport& report);
  void validation(const ValidationReport& report);
  void message(const std::string& text);  // stderr and {"event":"message",...}

 private:
  explicit TrainingLog(std::FILE* file) : file_(file) {}
  void write_line(const std::string& json);
  std::FILE* file_;
};

}  // namespace xlate::trainer
