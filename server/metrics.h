// The server's Prometheus metrics (prometheus-cpp). Names follow Prometheus conventions: the
// xlate_ prefix, _total for counters, base units in the name (_seconds, _bytes).
#pragma once

#include <map>
#include <memory>
#include <string>

#include <grpcpp/support/status_code_enum.h>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/scheduler.h"

namespace xlate::server {

// What xlate_model_info says of a served model (its labels).
struct ModelInfo {
  std::string name, dir, device, precision, source_lang, target_lang;
};

// The metrics of one served model's scheduler, labelled model="<name>". They live as long as the
// ServerMetrics that made them, across reloads of the model.
class ModelMetrics : public SchedulerObserver {
 public:
  void on_batch(int sentences, int64_t padded_tokens) override;
  void on_generated(int64_t tokens) override;
  void on_queue_wait(absl::Duration waited) override;
  void on_queue_depth(int64_t sentences) override;
  void on_dropped(int64_t sentences) override;
  void on_kv_cache(int64_t blocks_in_use, int64_t blocks_in_pool, int64_t pool_bytes,
                   int64_t cap_bytes) override;
  void on_translation_cache_lookups(int64_t hits, int64_t misses) override;
  void on_translation_cache_stored(int64_t bytes, int64_t evicted) override;

 private:
  friend class ServerMetrics;
  prometheus::Counter* translation_cache_hits_;
  prometheus::Counter* translation_cache_misses_;
  prometheus::Counter* translation_cache_evictions_;
  prometheus::Gauge* translation_cache_bytes_;
  prometheus::Gauge* kv_cache_blocks_in_use_;
  prometheus::Gauge* kv_cache_blocks_;
  prometheus::Gauge* kv_cache_bytes_;
  prometheus::Gauge* kv_cache_limit_bytes_;
  prometheus::Histogram* queue_wait_;
  prometheus::Histogram* batch_sentences_;
  prometheus::Histogram* batch_tokens_;
  prometheus::Counter* generated_tokens_;
  prometheus::Counter* dropped_sentences_;
  prometheus::Gauge* queue_depth_;
};

// Thread-safe.
class ServerMetrics {
 public:
  ServerMetrics();

  // Everything to expose on /metrics: these metrics and the process's resident memory.
  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }
  std::shared_ptr<prometheus::Collectable> process_collectable() const { return process_; }

  // The scheduler metrics of the model served as `name` (made on the first call; the same
  // object afterwards), with its queue's capacity in sentences (xlate_queue_capacity).
  ModelMetrics* ForModel(const std::string& name, int64_t queue_capacity);
  // xlate_model_info of info.name is now `info` (the model was loaded, or loaded again), and
  // xlate_model_loaded_timestamp_seconds now.
  void SetModelInfo(const ModelInfo& info);
  // A reload of the model served as `name` (SIGHUP or ModelAdmin) succeeded or failed.
  void on_reload(const std::string& name, bool loaded);

  // A call finished with `code`; `model` is the model that served it, or empty for a call
  // refused before it was routed to one.
  void on_request_done(const std::string& model, grpc::StatusCode code, absl::Duration latency);
  void on_request_start() { in_flight_->Increment(); }
  void on_request_end() { in_flight_->Decrement(); }

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  std::shared_ptr<prometheus::Collectable> process_;
  prometheus::Family<prometheus::Counter>* requests_;
  prometheus::Family<prometheus::Histogram>* latency_;
  prometheus::Family<prometheus::Histogram>* queue_wait_;
  prometheus::Family<prometheus::Histogram>* batch_sentences_;
  prometheus::Family<prometheus::Histogram>* batch_tokens_;
  prometheus::Family<prometheus::Counter>* generated_tokens_;
  prometheus::Family<prometheus::Counter>* dropped_sentences_;
  prometheus::Family<prometheus::Gauge>* queue_depth_;
  prometheus::Family<prometheus::Gauge>* queue_capacity_;
  prometheus::Family<prometheus::Gauge>* kv_cache_blocks_in_use_;
  prometheus::Family<prometheus::Gauge>* kv_cache_blocks_;
  prometheus::Family<prometheus::Gauge>* kv_cache_bytes_;
  prometheus::Family<prometheus::Gauge>* kv_cache_limit_bytes_;
  prometheus::Family<prometheus::Counter>* translation_cache_hits_;
  prometheus::Family<prometheus::Counter>* translation_cache_misses_;
  prometheus::Family<prometheus::Counter>* translation_cache_evictions_;
  prometheus::Family<prometheus::Gauge>* translation_cache_bytes_;
  prometheus::Family<prometheus::Gauge>* model_info_;
  prometheus::Family<prometheus::Gauge>* loaded_at_;
  prometheus::Family<prometheus::Counter>* reloads_;
  prometheus::Gauge* in_flight_;

  // A model's (or, under "", the unrouted calls') request metrics, made on first use.
  struct RequestMetrics {
    std::map<grpc::StatusCode, prometheus::Counter*> by_code;
    prometheus::Histogram* latency;
  };
  RequestMetrics& RequestsLocked(const std::string& model) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);

  absl::Mutex mutex_;
  std::map<std::string, RequestMetrics> requests_by_model_ ABSL_GUARDED_BY(mutex_);
  std::map<std::string, std::unique_ptr<ModelMetrics>> models_ ABSL_GUARDED_BY(mutex_);
  std::map<std::string, prometheus::Gauge*> info_ ABSL_GUARDED_BY(mutex_);  // by model name
};

// The canonical name of a gRPC status code ("OK", "INVALID_ARGUMENT", ...).
std::string status_code_name(grpc::StatusCode code);

}  // namespace xlate::server
