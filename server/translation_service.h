// The xlate.v1.Translator gRPC service (callback API): the life of each call. It checks each
// request (server/translate_checks.h; its documents, server/request_documents.h), cuts its
// entries into sentences, queues them on the scheduler and answers, with one translation per
// entry in order (server/translate_response.h), when the scheduler completes the job (an
// all-blank request at once). TranslateStream
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
#include "proto/translator.grpc.pb.h"
#include "server/api_keys.h"
#include "server/glossaries.h"
#include "server/metrics.h"
#include "server/model_registry.h"
#include "server/translate_checks.h"

namespace xlate::server {

// The service name that health checks may name (besides "", the whole server).
constexpr char kTranslatorServiceName[] = "xlate.v1.Translator";
// The metadata under which the HTTP gateway (server/http_gateway.h) names the HTTP client its
// in-process call is for: the client whose share of the queue the call's sentences count
// against. Taken from in-process calls only, so a remote gRPC client cannot claim another's.
constexpr char kHttpClientMetadata[] = "x-xlate-http-client";
// The metadata under which a document job's in-process call (server/document_jobs.h) names its
// job: the job is a client of its own for the scheduler's fair share, so that its owner's
// interactive calls decode beside it as a light client's do (the express decoder), not behind
// it. Taken from in-process calls only.
constexpr char kDocumentJobMetadata[] = "x-xlate-document-job";

class TranslationService final
    : public xlate::v1::Translator::WithRawCallbackMethod_Translate<
          xlate::v1::Translator::WithRawCallbackMethod_TranslateStream<
              xlate::v1::Translator::WithRawCallbackMethod_DetectLanguage<
                  xlate::v1::Translator::WithRawCallbackMethod_TranslateDocument<
                      xlate::v1::Translator::WithRawCallbackMethod_TranslateDocumentStream<
                          xlate::v1::Translator::WithCallbackMethod_ListModels<
                              xlate::v1::Translator::Service>>>>>> {
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
  // One file (document/document_batch.h's formats): its paragraphs are checked and translated
  // as a Translate request's entries, under RequestLimits' document limits, and the file is
  // rebuilt around their translations.
  grpc::ServerUnaryReactor* TranslateDocument(grpc::CallbackServerContext* context,
                                              const grpc::ByteBuffer* request,
                                              grpc::ByteBuffer* response) override;
  // TranslateDocument with the file's progress while it translates.
  grpc::ServerWriteReactor<grpc::ByteBuffer>* TranslateDocumentStream(
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
  class WritingCall;
  template <typename Base>
  class FileCall;
  class StreamCall;
  class DocumentCall;
  class DocumentStreamCall;
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
