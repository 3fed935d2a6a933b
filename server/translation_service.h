// The xlate.v1.Translator gRPC service (callback API): checks each request, cuts its entries
// into sentences, queues them on the scheduler and answers, with one translation per entry in
// order, when the scheduler completes the job (an all-blank request at once). TranslateStream
// does the same and, while the job runs, writes each entry's settled translation as it grows
// (from the stable prefixes the scheduler reports). No thread blocks or polls while a call
// waits; a client that cancels (or whose deadline passes) has its sentences removed from the
// queue and from the running decode. The methods take the request's bytes
// (server/request_parsing.h), so that one that does not parse gets an error that says why;
// reflection still describes xlate.v1 as proto/translator.proto has it.
//
// Drain (SIGTERM): StartDrain() answers every later call UNAVAILABLE while the calls already
// accepted finish; WaitUntilIdle() tells when they have, so that the server can stop then and
// not at the end of its grace period.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "engine/text_segments.h"
#include "engine/translator.h"
#include "proto/translator.grpc.pb.h"
#include "server/api_keys.h"
#include "server/glossaries.h"
#include "engine/glossary_terms.h"
#include "server/metrics.h"
#include "server/model_registry.h"
#include "server/scheduler.h"

namespace xlate::server {

// --max_beam_size's default: each decoding sentence reserves this many KV-cache rows.
constexpr int kDefaultMaxBeamSize = 8;
// The service name that health checks may name (besides "", the whole server).
constexpr char kTranslatorServiceName[] = "xlate.v1.Translator";
// The metadata under which the HTTP gateway (server/http_gateway.h) names the HTTP client its
// in-process call is for: the client whose share of the queue the call's sentences count
// against. Taken from in-process calls only, so a remote gRPC client cannot claim another's.
constexpr char kHttpClientMetadata[] = "x-xlate-http-client";

struct RequestLimits {
  // A request's serialized size (gRPC's own receive limit is lifted, so that a larger request
  // reaches the service and is refused, and counted, with this limit named).
  int64_t max_request_bytes = 4 << 20;
  // Each entry of contents is text, cut into sentences (engine/text_segments.h); text is
  // limited in Unicode code points (as Cloud Translation), sentences after the cut.
  int64_t max_entry_code_points = 10000;
  int64_t max_request_code_points = 30000;
  int max_sentences_per_request = 256;
  // Entries of contents, blank or not: counted on the wire before the request is parsed.
  int64_t max_entries_per_request = 256;
  // <= kMaxDeviceBeam: the server's continuous decoder searches with the device beam step.
  int max_beam_size = kDefaultMaxBeamSize;
};

// The checks of a request that need no tokenizer, each limit once, in order: the language codes
// (against `config`, the model the request was routed to), mime_type, code points per entry
// and per request, the decoding and alignment options, the cut into sentences (filling
// `texts`) and the sentence count. The message names the field, the measure and the limit.
// TranslationService::Check adds the per-sentence token limit.
grpc::Status check_request_text(const xlate::v1::TranslateRequest& request,
                                const ModelConfig& config, const RequestLimits& limits,
                                TranslationOptions& options, std::optional<SegmentedTexts>& texts);

// The request's alignment options (unset fields at their defaults), if it asks for alignments.
std::optional<AlignmentOptions> alignment_options(const xlate::v1::TranslateRequest& request);

class TranslationService final
    : public xlate::v1::Translator::WithRawCallbackMethod_Translate<
          xlate::v1::Translator::WithRawCallbackMethod_TranslateStream<
              xlate::v1::Translator::WithRawCallbackMethod_DetectLanguage<
                  xlate::v1::Translator::WithCallbackMethod_ListModels<
                      xlate::v1::Translator::Service>>>> {
 public:
  // Calls go to a model of `models` (ModelRegistry::Route). Both pointers must outlive the
  // service.
  // `keys`, when given (--api_keys_file), admits each call by the key it presents
  // (server/caller_admission.h) and must outlive the service too.
  // `glossaries`, when given (--glossary), are the named glossaries requests may use; it must
  // outlive the service.
  TranslationService(const ModelRegistry* models, ServerMetrics* metrics, RequestLimits limits,
                     ApiKeys* keys = nullptr, const Glossaries* glossaries = nullptr);

  grpc::ServerUnaryReactor* Translate(grpc::CallbackServerContext* context,
                                      const grpc::ByteBuffer* request,
                                      grpc::ByteBuffer* response) override;
  grpc::ServerWriteReactor<grpc::ByteBuffer>* TranslateStream(
      grpc::CallbackServerContext* context, const grpc::ByteBuffer* request) override;
  grpc::ServerUnaryReactor* ListModels(grpc::CallbackServerContext* context,
                                       const xlate::v1::ListModelsRequest* request,
                                       xlate::v1::ListModelsResponse* response) override;
  // CLD2's candidates for each entry (server/language_detection.h), under the request limits
  // of Translate that apply to text (bytes, entries, code points).
  grpc::ServerUnaryReactor* DetectLanguage(grpc::CallbackServerContext* context,
                                           const grpc::ByteBuffer* request,
                                           grpc::ByteBuffer* response) override;

  // From now on, calls are answered UNAVAILABLE at once; accepted calls go on.
  void StartDrain();
  // Blocks until no accepted call is unanswered or `deadline` passes; returns whether idle.
  bool WaitUntilIdle(absl::Time deadline);

 private:
  template <typename GrpcReactor>
  class Call;
  class UnaryCall;
  class StreamCall;
  // Takes a call's request: refuses it while draining, routes it to a model, checks it and
  // submits its sentences to that model's scheduler (the call's Answer, and its progress
  // callback if any, get the results); a call refused, or with nothing to decode, is answered at
  // once. `client` (gRPC's peer: one client connection; the HTTP client for the gateway's calls)
  // is whom the scheduler shares the engine fairly between, or the call's API key when keys are
  // in use.
  template <typename CallType>
  void Start(CallType* call, const grpc::ByteBuffer& request_bytes, const std::string& client);
  // Counts a call in, or refuses it (false) once draining.
  bool Enter();
  void Leave();
  // Fills `response` from the results of `texts`' sentences by `model`, in order: each entry is
  // its text again with each sentence translated. aligned_sources: each sentence's token ids
  // when the request asks for alignments (else unread).
  // terms: empty, or per sentence the glossary terms it holds (reported per entry).
  static grpc::Status Respond(const ServedModel& model, const xlate::v1::TranslateRequest& request,
                              const SegmentedTexts& texts,
                              const std::vector<std::vector<int32_t>>& aligned_sources, int n_best,
                              std::vector<std::vector<Hypothesis>> results,
                              const std::vector<SentenceTerms>& terms,
                              xlate::v1::TranslateResponse& response);
  // Checks the request for `model`, every limit once, and fills in `options`, `texts` (the
  // entries cut into sentences) and `sources` (a sentence's token ids); the message names the
  // field and the limit.
  // Also fills forced_starts: empty, or per sentence its target prefix's tokens (the first
  // sentence of each entry that has a target_prefix).
  grpc::Status Check(const ServedModel& model, const xlate::v1::TranslateRequest& request,
                     TranslationOptions& options, std::optional<SegmentedTexts>& texts,
                     std::vector<std::vector<int32_t>>& sources,
                     std::vector<std::vector<int32_t>>& forced_starts) const;

  grpc::Status CheckTargetPrefixes(const ServedModel& model,
                                   const xlate::v1::TranslateRequest& request,
                                   const TranslationOptions& options, const SegmentedTexts& texts,
                                   const std::vector<std::vector<int32_t>>& sources,
                                   std::vector<std::vector<int32_t>>& forced_starts) const;
  // The request's glossary_config over its sentences: `terms` per sentence (left empty
  // without a glossary); NOT_FOUND for an unknown glossary name, INVALID_ARGUMENT for bad
  // entries, UNIMPLEMENTED on a GPU model. (expand_runs refuses it with HTML and placeholders.)
  grpc::Status CheckGlossary(const ServedModel& model, const xlate::v1::TranslateRequest& request,
                             const TranslationOptions& options, const SegmentedTexts& texts,
                             const std::vector<std::vector<int32_t>>& sources,
                             const std::vector<std::vector<int32_t>>& forced_starts,
                             std::vector<SentenceTerms>& terms) const;

  const ModelRegistry* models_;
  ServerMetrics* metrics_;
  const RequestLimits limits_;
  ApiKeys* const keys_;
  const Glossaries* const glossaries_;

  absl::Mutex mutex_;
  bool draining_ ABSL_GUARDED_BY(mutex_) = false;
  int64_t unanswered_calls_ ABSL_GUARDED_BY(mutex_) = 0;
};

}  // namespace xlate::server
