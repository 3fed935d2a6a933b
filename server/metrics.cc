#include "server/metrics.h"

#include <unistd.h>

#include <fstream>

#include <prometheus/metric_family.h>

namespace xlate::server {
namespace {

// Resident set size of this process, read from /proc at scrape time.
class ProcessMemoryCollectable : public prometheus::Collectable {
 public:
  std::vector<prometheus::MetricFamily> Collect() const override {
    std::ifstream statm("/proc/self/statm");
    long pages_total = 0, pages_resident = 0;
    statm >> pages_total >> pages_resident;
    prometheus::MetricFamily family;
    family.name = "xlate_process_resident_memory_bytes";
    family.help = "Resident memory of the server process in bytes";
    family.type = prometheus::MetricType::Gauge;
    prometheus::ClientMetric metric;
    metric.gauge.value = static_cast<double>(pages_resident) * ::sysconf(_SC_PAGESIZE);
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

ServerMetrics::ServerMetrics(const ModelInfo& model)
    : registry_(std::make_shared<prometheus::Registry>()),
      process_(std::make_shared<ProcessMemoryCollectable>()) {
  using prometheus::BuildCounter;
  using prometheus::BuildGauge;
  using prometheus::BuildHistogram;
  requests_ = &BuildCounter()
                   .Name("xlate_requests_total")
                   .Help("Translate calls finished, by gRPC status code")
                   .Register(*registry_);
  for (int code = grpc::OK; code <= grpc::UNAUTHENTICATED; ++code) {
    const auto status = static_cast<grpc::StatusCode>(code);
    requests_by_code_[status] = &requests_->Add({{"code", status_code_name(status)}});
  }
  latency_ = &BuildHistogram()
                  .Name("xlate_request_duration_seconds")
                  .Help("Time from receiving a Translate call to answering it")
                  .Register(*registry_)
                  .Add({}, exponential(0.005, 2, 14));
  queue_wait_ = &BuildHistogram()
                     .Name("xlate_queue_wait_seconds")
                     .Help("Time a sentence waited in the queue before its batch started")
                     .Register(*registry_)
                     .Add({}, exponential(0.0005, 2, 16));
  batch_sentences_ = &BuildHistogram()
                          .Name("xlate_batch_sentences")
                          .Help("Sentences per engine batch")
                          .Register(*registry_)
                          .Add({}, exponential(1, 2, 10));
  batch_tokens_ = &BuildHistogram()
                       .Name("xlate_batch_tokens")
                       .Help("Padded source tokens per engine batch")
                       .Register(*registry_)
                       .Add({}, exponential(16, 2, 12));
  generated_tokens_ = &BuildCounter()
                           .Name("xlate_generated_tokens_total")
                           .Help("Target tokens generated (best hypotheses)")
                           .Register(*registry_)
                           .Add({});
  dropped_sentences_ = &BuildCounter()
                            .Name("xlate_dropped_sentences_total")
                            .Help("Sentences that left the running decode unfinished because "
                                  "their request was cancelled or timed out")
                            .Register(*registry_)
                            .Add({});
  in_flight_ = &BuildGauge()
                    .Name("xlate_in_flight_requests")
                    .Help("Translate calls being handled now")
                    .Register(*registry_)
                    .Add({});
  queue_depth_ = &BuildGauge()
                      .Name("xlate_queue_depth")
                      .Help("Sentences waiting in the scheduler queue")
                      .Register(*registry_)
                      .Add({});
  BuildGauge()
      .Name("xlate_queue_capacity")
      .Help("Sentences the scheduler queue holds at most (--queue_capacity); with "
            "xlate_queue_depth, how saturated the queue is")
      .Register(*registry_)
      .Add({})
      .Set(static_cast<double>(model.queue_capacity));
  BuildGauge()
      .Name("xlate_model_info")
      .Help("The served model; the value is always 1")
      .Register(*registry_)
      .Add({{"name", model.name},
            {"device", model.device},
            {"precision", model.precision},
            {"source_lang", model.source_lang},
            {"target_lang", model.target_lang}})
      .Set(1);
}

void ServerMetrics::on_request_done(grpc::StatusCode code, absl::Duration latency) {
  auto found = requests_by_code_.find(code);
  (found == requests_by_code_.end() ? requests_by_code_[grpc::UNKNOWN] : found->second)
      ->Increment();
  latency_->Observe(absl::ToDoubleSeconds(latency));
}

void ServerMetrics::on_batch(int sentences, int64_t padded_tokens) {
  batch_sentences_->Observe(sentences);
  batch_tokens_->Observe(static_cast<double>(padded_tokens));
}

void ServerMetrics::on_generated(int64_t tokens) {
  generated_tokens_->Increment(static_cast<double>(tokens));
}

void ServerMetrics::on_dropped(int64_t sentences) {
  dropped_sentences_->Increment(static_cast<double>(sentences));
}

void ServerMetrics::on_queue_wait(absl::Duration waited) {
  queue_wait_->Observe(absl::ToDoubleSeconds(waited));
}

void ServerMetrics::on_queue_depth(int64_t sentences) {
  queue_depth_->Set(static_cast<double>(sentences));
}

}  // namespace xlate::server
