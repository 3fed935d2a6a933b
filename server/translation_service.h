// The xlate.v1.Translator gRPC service (callback API): checks each request, queues its
// sentences on the scheduler and answers, with one translation per input in order, when the
// scheduler completes the job. No thread blocks or polls while a call waits; a client that
// cancels (or whose deadline passes) has its queued sentences removed. The method takes the
// request's bytes (server/request_parsing.h), so that one that does not parse gets an error
// that says why; reflection still describes xlate.v1 as proto/translator.proto has it.
#pragma once

#include <memory>
#include <string>

#include "engine/translator.h"
#include "proto/translator.grpc.pb.h"
#include "server/metrics.h"
#include "server/scheduler.h"

namespace xlate::server {

// --max_beam_size's default: each decoding sentence reserves this many KV-cache rows.
constexpr int kDefaultMaxBeamSize = 8;

struct RequestLimits {
  int max_sentences_per_request = 64;
  int max_input_bytes = 2048;  // per sentence
  int max_input_tokens = 256;  // per sentence, end token included
  // <= kMaxDeviceBeam: the server's continuous decoder searches with the device beam step.
  int max_beam_size = kDefaultMaxBeamSize;
};

class TranslationService final
    : public xlate::v1::Translator::WithRawCallbackMethod_Translate<
          xlate::v1::Translator::Service> {
 public:
  // All pointers must outlive the service.
  TranslationService(const Translator* translator, Scheduler* scheduler, ServerMetrics* metrics,
                     std::string model_name, RequestLimits limits);

  grpc::ServerUnaryReactor* Translate(grpc::CallbackServerContext* context,
                                      const grpc::ByteBuffer* request,
                                      grpc::ByteBuffer* response) override;

 private:
  class Reactor;
  // Fills `response` from a finished job.
  grpc::Status Respond(const xlate::v1::TranslateRequest& request, int n_best,
                       std::vector<std::vector<Hypothesis>> results,
                       xlate::v1::TranslateResponse& response) const;
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
