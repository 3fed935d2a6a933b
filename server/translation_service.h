// The xlate.v1.Translator gRPC service: checks each request, queues its sentences on the
// scheduler, waits for them within the call's deadline (or until the client cancels) and
// answers with one translation per input, in order.
#pragma once

#include <memory>
#include <string>

#include "engine/translator.h"
#include "proto/translator.grpc.pb.h"
#include "server/metrics.h"
#include "server/scheduler.h"

namespace xlate::server {

struct RequestLimits {
  int max_sentences_per_request = 64;
  int max_input_bytes = 2048;  // per sentence
  int max_beam_size = 16;
};

class TranslationService final : public xlate::v1::Translator::Service {
 public:
  // All pointers must outlive the service.
  TranslationService(const Translator* translator, Scheduler* scheduler, ServerMetrics* metrics,
                     std::string model_name, RequestLimits limits);

  grpc::Status Translate(grpc::ServerContext* context, const xlate::v1::TranslateRequest* request,
                         xlate::v1::TranslateResponse* response) override;

 private:
  grpc::Status Handle(grpc::ServerContext* context, const xlate::v1::TranslateRequest& request,
                      xlate::v1::TranslateResponse& response);
  // Checks the request and fills in `options` and `sources`; the message names the field and
  // the limit.
  grpc::Status Check(const xlate::v1::TranslateRequest& request, TranslationOptions& options,
                     std::vector<std::vector<int32_t>>& sources) const;

  const Translator* translator_;
  Scheduler* scheduler_;
  ServerMetrics* metrics_;
  const std::string model_name_;
  const RequestLimits limits_;
};

}  // namespace xlate::server
