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

#include "absl/time/time.h"
#include "server/scheduler.h"

namespace xlate::server {

struct ModelInfo {
  std::string name, device, precision, source_lang, target_lang;
  int64_t queue_capacity = 0;  // --queue_capacity, sentences (xlate_queue_capacity)
};

class ServerMetrics : public SchedulerObserver {
 public:
  explicit ServerMetrics(const ModelInfo& model);

  // Everything to expose on /metrics: these metrics and the process's resident memory.
  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }
  std::shared_ptr<prometheus::Collectable> process_collectable() const { return process_; }

  void on_request_done(grpc::StatusCode code, absl::Duration latency);
  void on_request_start() { in_flight_->Increment(); }
  void on_request_end() { in_flight_->Decrement(); }

  // SchedulerObserver
  void on_batch(int sentences, int64_t padded_tokens) override;
  void on_generated(int64_t tokens) override;
  void on_queue_wait(absl::Duration waited) override;
  void on_queue_depth(int64_t sentences) override;
  void on_dropped(int64_t sentences) override;

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  std::shared_ptr<prometheus::Collectable> process_;
  prometheus::Family<prometheus::Counter>* requests_;
  std::map<grpc::StatusCode, prometheus::Counter*> requests_by_code_;
  prometheus::Histogram* latency_;
  prometheus::Histogram* queue_wait_;
  prometheus::Histogram* batch_sentences_;
  prometheus::Histogram* batch_tokens_;
  prometheus::Counter* generated_tokens_;
  prometheus::Counter* dropped_sentences_;
  prometheus::Gauge* in_flight_;
  prometheus::Gauge* queue_depth_;
};

// The canonical name of a gRPC status code ("OK", "INVALID_ARGUMENT", ...).
std::string status_code_name(grpc::StatusCode code);

}  // namespace xlate::server
