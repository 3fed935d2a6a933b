// One model as the server serves it: its weights and tokenizer (a Translator), the continuous
// decoder that decodes its sentences, and the scheduler thread that batches them. Loading it
// also warms it up; destroying it finishes what its scheduler still holds. The server holds
// each served model through a ModelRegistry (server/model_registry.h), which swaps a reloaded
// one in while calls that started on the old one finish there.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/continuous_decoder.h"
#include "engine/translator.h"
#include "server/scheduler.h"

namespace xlate::server {

// How every model of a server decodes (from its flags).
struct ServingSettings {
  Placement placement;
  Scheduler::Options scheduler;
  // max_source_tokens is --max_input_tokens; each model caps it at its own positions.
  ContinuousDecoderOptions decoder;
  // CPU threads of a decoding step; 0 = as many as the cores this process gets
  // (engine/ops/cpu/thread_governor.h).
  int threads = 0;
  // Sentence slots of the express decoder (Scheduler::Create's `express`); 0 = none.
  int express_sentences = 0;
  // Bytes the model's KV cache may grow to (--kv_cache_mib); 0: default_kv_cache_bytes
  // (server/kv_cache_budget.h). Never more than its decoders can hold at once.
  int64_t kv_cache_bytes = 0;
};

class ServedModel {
 public:
  // Loads the model directory `dir`, makes its decoder and scheduler (which reports to
  // `observer`; may be null, else it must outlive the model) and translates a warm-up sentence
  // through them, so that primitive creation and first-touch allocation happen here and not on
  // a client's call. Its KV cache starts empty and grows with the work, up to its cap. Errors:
  // the directory's (missing or corrupt files, a wrong config), decoders that do not fit in
  // memory, a failed warm-up.
  static absl::StatusOr<std::unique_ptr<ServedModel>> Load(const std::string& name,
                                                           const std::string& dir,
                                                           const ServingSettings& settings,
                                                           SchedulerObserver* observer);
  // Translates what its scheduler still holds, then stops its thread.
  ~ServedModel();
  ServedModel(const ServedModel&) = delete;
  ServedModel& operator=(const ServedModel&) = delete;

  const std::string& name() const { return name_; }
  const std::string& dir() const { return dir_; }
  const Translator& translator() const { return *translator_; }
  const ModelConfig& config() const { return translator_->model().config(); }
  Scheduler& scheduler() const { return *scheduler_; }
  // Longest sentence a request may send, in tokens, end token included.
  int max_input_tokens() const { return max_input_tokens_; }
  // How long Load took, warm-up included.
  absl::Duration load_time() const { return load_time_; }
  // The KV cache's pool, shared by its decoders (main and express): its cap and what it holds.
  KvCachePool::Usage kv_cache_usage() const { return kv_cache_->usage(); }

 private:
  class Engine;
  ServedModel(std::string name, std::string dir, std::unique_ptr<Translator> translator,
              int max_input_tokens);

  const std::string name_, dir_;
  // Destroyed in reverse: the scheduler's thread stops before the decoder and the weights go.
  std::unique_ptr<Translator> translator_;
  std::shared_ptr<KvCachePool> kv_cache_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<Engine> express_;  // may be null
  std::unique_ptr<Scheduler> scheduler_;
  const int max_input_tokens_;
  absl::Duration load_time_;
};

}  // namespace xlate::server
