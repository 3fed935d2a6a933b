#include "server/metrics.h"

#include <prometheus/metric_family.h>

#include "server/kv_cache_budget.h"

namespace xlate::server {
namespace {

// Resident set size of this process, read from /proc at scrape time.
class ProcessMemoryCollectable : public prometheus::Collectable {
 public:
  std::vector<prometheus::MetricFamily> Collect() const override {
    prometheus::MetricFamily family;
    family.name = "xlate_process_resident_memory_bytes";
    family.help = "Resident memory of the server process in bytes";
    family.type = prometheus::MetricType::Gauge;
    prometheus::ClientMetric metric;
    metric.gauge.value = static_cast<double>(resident_memory_bytes());
    family.metric.push_back(metric);
    return {family};
  }
};

prometheus::Histogram::BucketBoundaries exponential(double start, double factor, int count) {
  prometheus::Histogram::BucketBoundaries bounds;
  for (double value = start; count-- > 0; value *= factor) bounds.push_back(value);
  return bounds;
}

}  // namespace

std::string status_code_name(grpc::StatusCode code) {
  static const std::map<grpc::StatusCode, std::string> names = {
      {grpc::OK, "OK"},
      {grpc::CANCELLED, "CANCELLED"},
      {grpc::UNKNOWN, "UNKNOWN"},
      {grpc::INVALID_ARGUMENT, "INVALID_ARGUMENT"},
      {grpc::DEADLINE_EXCEEDED, "DEADLINE_EXCEEDED"},
      {grpc::NOT_FOUND, "NOT_FOUND"},
      {grpc::ALREADY_EXISTS, "ALREADY_EXISTS"},
      {grpc::PERMISSION_DENIED, "PERMISSION_DENIED"},
      {grpc::RESOURCE_EXHAUSTED, "RESOURCE_EXHAUSTED"},
      {grpc::FAILED_PRECONDITION, "FAILED_PRECONDITION"},
      {grpc::ABORTED, "ABORTED"},
      {grpc::OUT_OF_RANGE, "OUT_OF_RANGE"},
      {grpc::UNIMPLEMENTED, "UNIMPLEMENTED"},
      {grpc::INTERNAL, "INTERNAL"},
      {grpc::UNAVAILABLE, "UNAVAILABLE"},
      {grpc::DATA_LOSS, "DATA_LOSS"},
      {grpc::UNAUTHENTICATED, "UNAUTHENTICATED"}};
  auto found = names.find(code);
  return found == names.end() ? "UNKNOWN" : found->second;
}

ServerMetrics::ServerMetrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      process_(std::make_shared<ProcessMemoryCollectable>()) {
  using prometheus::BuildCounter;
  using prometheus::BuildGauge;
  using prometheus::BuildHistogram;
  requests_ = &BuildCounter()
                   .Name("xlate_requests_total")
                   .Help("Translate and TranslateStream calls finished, by gRPC status code and "
                         "model (empty for calls refused before they reached a model)")
                   .Register(*registry_);
  latency_ = &BuildHistogram()
                  .Name("xlate_request_duration_seconds")
                  .Help("Time from receiving a call to answering it, by model")
                  .Register(*registry_);
  queue_wait_ = &BuildHistogram()
                     .Name("xlate_queue_wait_seconds")
                     .Help("Time a sentence waited in the queue before its batch started")
                     .Register(*registry_);
  batch_sentences_ = &BuildHistogram()
                          .Name("xlate_batch_sentences")
                          .Help("Sentences per engine batch")
                          .Register(*registry_);
  batch_tokens_ = &BuildHistogram()
                       .Name("xlate_batch_tokens")
                       .Help("Padded source tokens per engine batch")
                       .Register(*registry_);
  generated_tokens_ = &BuildCounter()
                           .Name("xlate_generated_tokens_total")
                           .Help("Target tokens generated (best hypotheses)")
                           .Register(*registry_);
  dropped_sentences_ = &BuildCounter()
                            .Name("xlate_dropped_sentences_total")
                            .Help("Sentences that left the running decode unfinished because "
                                  "their request was cancelled or timed out")
                            .Register(*registry_);
  queue_depth_ = &BuildGauge()
                      .Name("xlate_queue_depth")
                      .Help("Sentences waiting in the model's scheduler queue")
                      .Register(*registry_);
  kv_cache_blocks_in_use_ = &BuildGauge()
                                 .Name("xlate_kv_cache_blocks_in_use")
                                 .Help("KV-cache blocks (16 positions each) that hold keys and "
                                       "values of sentences decoding")
                                 .Register(*registry_);
  kv_cache_blocks_ = &BuildGauge()
                          .Name("xlate_kv_cache_blocks")
                          .Help("KV-cache blocks the model's pool holds (in use or free): it "
                                "grows on demand up to the cap and keeps what it took")
                          .Register(*registry_);
  kv_cache_bytes_ = &BuildGauge()
                         .Name("xlate_kv_cache_bytes")
                         .Help("Bytes of the model's KV-cache pool")
                         .Register(*registry_);
  kv_cache_limit_bytes_ = &BuildGauge()
                               .Name("xlate_kv_cache_limit_bytes")
                               .Help("Bytes the model's KV-cache pool may grow to "
                                     "(--kv_cache_mib)")
                               .Register(*registry_);
  translation_cache_hits_ = &BuildCounter()
                                 .Name("xlate_translation_cache_hits_total")
                                 .Help("Sentences answered without decoding: found in the "
                                       "translation cache, or repeating a sentence of their "
                                       "request")
                                 .Register(*registry_);
  translation_cache_misses_ = &BuildCounter()
                                   .Name("xlate_translation_cache_misses_total")
                                   .Help("Sentences the translation cache did not hold (queued "
                                         "to decode)")
                                   .Register(*registry_);
  translation_cache_evictions_ = &BuildCounter()
                                      .Name("xlate_translation_cache_evictions_total")
                                      .Help("Translations dropped from the cache (least "
                                            "recently used first) to keep it within its bytes")
                                      .Register(*registry_);
  translation_cache_bytes_ = &BuildGauge()
                                  .Name("xlate_translation_cache_bytes")
                                  .Help("Bytes the model's translation cache holds "
                                        "(--translation_cache_mib bounds it)")
                                  .Register(*registry_);
  queue_capacity_ = &BuildGauge()
                         .Name("xlate_queue_capacity")
                         .Help("Sentences the model's scheduler queue holds at most "
                               "(--queue_capacity); with xlate_queue_depth, how saturated the "
                               "queue is")
                         .Register(*registry_);
  model_info_ = &BuildGauge()
                     .Name("xlate_model_info")
                     .Help("A served model as it serves now; the value is always 1")
                     .Register(*registry_);
  loaded_at_ = &BuildGauge()
                    .Name("xlate_model_loaded_timestamp_seconds")
                    .Help("When the served model was last loaded (at start or by a reload), in "
                          "seconds since the Unix epoch")
                    .Register(*registry_);
  reloads_ = &BuildCounter()
                  .Name("xlate_model_reloads_total")
                  .Help("Reloads of a served model (SIGHUP or ModelAdmin/ReloadModel), by result: "
                        "loaded, or failed (the old model kept serving)")
                  .Register(*registry_);
  in_flight_ = &BuildGauge()
                    .Name("xlate_in_flight_requests")
                    .Help("Translate and TranslateStream calls being handled now")
                    .Register(*registry_)
                    .Add({});
}

ModelMetrics* ServerMetrics::ForModel(const std::string& name, int64_t queue_capacity) {
  absl::MutexLock lock(&mutex_);
  std::unique_ptr<ModelMetrics>& model = models_[name];
  if (model) return model.get();
  model = std::make_unique<ModelMetrics>();
  const prometheus::Labels labels = {{"model", name}};
  model->queue_wait_ = &queue_wait_->Add(labels, exponential(0.0005, 2, 16));
  model->batch_sentences_ = &batch_sentences_->Add(labels, exponential(1, 2, 10));
  model->batch_tokens_ = &batch_tokens_->Add(labels, exponential(16, 2, 12));
  model->generated_tokens_ = &generated_tokens_->Add(labels);
  model->dropped_sentences_ = &dropped_sentences_->Add(labels);
  model->queue_depth_ = &queue_depth_->Add(labels);
  model->kv_cache_blocks_in_use_ = &kv_cache_blocks_in_use_->Add(labels);
  model->kv_cache_blocks_ = &kv_cache_blocks_->Add(labels);
  model->kv_cache_bytes_ = &kv_cache_bytes_->Add(labels);
  model->kv_cache_limit_bytes_ = &kv_cache_limit_bytes_->Add(labels);
  model->translation_cache_hits_ = &translation_cache_hits_->Add(labels);
  model->translation_cache_misses_ = &translation_cache_misses_->Add(labels);
  model->translation_cache_evictions_ = &translation_cache_evictions_->Add(labels);
  model->translation_cache_bytes_ = &translation_cache_bytes_->Add(labels);
  queue_capacity_->Add(labels).Set(static_cast<double>(queue_capacity));
  RequestsLocked(name);
  reloads_->Add({{"model", name}, {"result", "loaded"}});
  reloads_->Add({{"model", name}, {"result", "failed"}});
  return model.get();
}

void ServerMetrics::SetModelInfo(const ModelInfo& info) {
  absl::MutexLock lock(&mutex_);
  prometheus::Gauge*& shown = info_[info.name];
  if (shown) model_info_->Remove(shown);
  shown = &model_info_->Add({{"name", info.name},
                             {"dir", info.dir},
                             {"device", info.device},
                             {"precision", info.precision},
                             {"source_lang", info.source_lang},
                             {"target_lang", info.target_lang}});
  shown->Set(1);
  loaded_at_->Add({{"model", info.name}}).SetToCurrentTime();
}

void ServerMetrics::on_reload(const std::string& name, bool loaded) {
  reloads_->Add({{"model", name}, {"result", loaded ? "loaded" : "failed"}}).Increment();
}

ServerMetrics::RequestMetrics& ServerMetrics::RequestsLocked(const std::string& model) {
  auto [found, added] = requests_by_model_.try_emplace(model);
  RequestMetrics& metrics = found->second;
  if (!added) return metrics;
  // Every code from the start, so that rates over them exist before the first failure.
  for (int code = grpc::OK; code <= grpc::UNAUTHENTICATED; ++code) {
    const auto status = static_cast<grpc::StatusCode>(code);
    metrics.by_code[status] =
        &requests_->Add({{"code", status_code_name(status)}, {"model", model}});
  }
  metrics.latency = &latency_->Add({{"model", model}}, exponential(0.005, 2, 14));
  return metrics;
}

void ServerMetrics::on_request_done(const std::string& model, grpc::StatusCode code,
                                    absl::Duration latency) {
  prometheus::Counter* counter;
  prometheus::Histogram* histogram;
  {
    absl::MutexLock lock(&mutex_);
    RequestMetrics& metrics = RequestsLocked(model);
    auto found = metrics.by_code.find(code);
    counter = found == metrics.by_code.end() ? metrics.by_code[grpc::UNKNOWN] : found->second;
    histogram = metrics.latency;
  }
  counter->Increment();
  histogram->Observe(absl::ToDoubleSeconds(latency));
}

void ModelMetrics::on_batch(int sentences, int64_t padded_tokens) {
  batch_sentences_->Observe(sentences);
  batch_tokens_->Observe(static_cast<double>(padded_tokens));
}

void ModelMetrics::on_generated(int64_t tokens) {
  generated_tokens_->Increment(static_cast<double>(tokens));
}

void ModelMetrics::on_dropped(int64_t sentences) {
  dropped_sentences_->Increment(static_cast<double>(sentences));
}

void ModelMetrics::on_queue_wait(absl::Duration waited) {
  queue_wait_->Observe(absl::ToDoubleSeconds(waited));
}

void ModelMetrics::on_kv_cache(int64_t blocks_in_use, int64_t blocks_in_pool, int64_t pool_bytes,
                               int64_t cap_bytes) {
  kv_cache_blocks_in_use_->Set(static_cast<double>(blocks_in_use));
  kv_cache_blocks_->Set(static_cast<double>(blocks_in_pool));
  kv_cache_bytes_->Set(static_cast<double>(pool_bytes));
  kv_cache_limit_bytes_->Set(static_cast<double>(cap_bytes));
}

void ModelMetrics::on_translation_cache_lookups(int64_t hits, int64_t misses) {
  translation_cache_hits_->Increment(static_cast<double>(hits));
  translation_cache_misses_->Increment(static_cast<double>(misses));
}

void ModelMetrics::on_translation_cache_stored(int64_t bytes, int64_t evicted) {
  translation_cache_bytes_->Set(static_cast<double>(bytes));
  translation_cache_evictions_->Increment(static_cast<double>(evicted));
}

void ModelMetrics::on_queue_depth(int64_t sentences) {
  queue_depth_->Set(static_cast<double>(sentences));
}

}  // namespace xlate::server
