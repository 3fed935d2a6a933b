#include "server/translation_service.h"

#include <algorithm>
#include <atomic>

#include "absl/strings/str_cat.h"
#include "server/language_code.h"
#include "server/request_parsing.h"

namespace xlate::server {
namespace {

grpc::Status to_grpc(const absl::Status& status) {
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

grpc::Status invalid(const std::string& message) {
  return grpc::Status(grpc::INVALID_ARGUMENT, message);
}

}  // namespace

TranslationService::TranslationService(const Translator* translator, Scheduler* scheduler,
                                       ServerMetrics* metrics, std::string model_name,
                                       RequestLimits limits)
    : translator_(translator),
      scheduler_(scheduler),
      metrics_(metrics),
      model_name_(std::move(model_name)),
      limits_(limits) {}

void TranslationService::StartDrain() {
  absl::MutexLock lock(&mutex_);
  draining_ = true;
}

bool TranslationService::WaitUntilIdle(absl::Time deadline) {
  absl::MutexLock lock(&mutex_);
  auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) { return unanswered_calls_ == 0; };
  return mutex_.AwaitWithDeadline(absl::Condition(&idle), deadline);
}

bool TranslationService::Enter() {
  absl::MutexLock lock(&mutex_);
  if (draining_) return false;
  ++unanswered_calls_;
  return true;
}

void TranslationService::Leave() {
  absl::MutexLock lock(&mutex_);
  --unanswered_calls_;
}

// One call: finishes exactly once, either at once (bad request, full queue, draining) or from
// the job's completion; a cancellation fails the job, which then finishes the call. Owned
// jointly by gRPC (until OnDone) and by Translate() (until it returns), since the job may
// complete, and gRPC call OnDone, before Translate() has finished with the reactor.
class TranslationService::Reactor : public grpc::ServerUnaryReactor {
 public:
  Reactor(TranslationService* service, absl::Time deadline)
      : service_(service), deadline_(deadline), start_(absl::Now()) {
    service_->metrics_->on_request_start();
  }
  // Whether the service takes the call (it refuses calls while draining).
  bool Enter() { return entered_ = service_->Enter(); }
  // Every outcome, including one the client no longer waits for, is counted under the code
  // the client sees: a call past its deadline as DEADLINE_EXCEEDED.
  void Complete(const grpc::Status& status) {
    TranslationService* const service = service_;
    const bool entered = entered_;
    service->metrics_->on_request_end();
    service->metrics_->on_request_done(status.error_code(), absl::Now() - start_);
    Finish(status);  // gRPC may end the reactor (OnDone) on another thread from here on
    if (entered) service->Leave();
  }
  xlate::v1::TranslateRequest& request() { return request_; }
  void set_job(std::shared_ptr<TranslationJob> job) {
    absl::Status cancelled;
    {
      absl::MutexLock lock(&mutex_);
      job_ = job;
      cancelled = cancelled_;
    }
    if (!cancelled.ok()) service_->scheduler_->Cancel(job, cancelled);
  }
  // gRPC calls this when the client cancels and when the deadline passes.
  void OnCancel() override {
    const absl::Status why =
        absl::Now() >= deadline_
            ? absl::DeadlineExceededError("the call's deadline passed before its translation")
            : absl::CancelledError("the client cancelled the call");
    std::shared_ptr<TranslationJob> job;
    {
      absl::MutexLock lock(&mutex_);
      job = job_;
      cancelled_ = why;
    }
    if (job) service_->scheduler_->Cancel(job, why);
  }
  void OnDone() override { Release(); }
  void Release() {
    if (owners_.fetch_sub(1) == 1) delete this;
  }

 private:
  std::atomic<int> owners_{2};
  TranslationService* const service_;
  const absl::Time deadline_;
  const absl::Time start_;
  bool entered_ = false;
  absl::Mutex mutex_;
  std::shared_ptr<TranslationJob> job_ ABSL_GUARDED_BY(mutex_);
  absl::Status cancelled_ ABSL_GUARDED_BY(mutex_);  // why, once gRPC has cancelled the call
  xlate::v1::TranslateRequest request_;
};

grpc::ServerUnaryReactor* TranslationService::Translate(grpc::CallbackServerContext* context,
                                                        const grpc::ByteBuffer* request_bytes,
                                                        grpc::ByteBuffer* response_bytes) {
  auto* reactor = new Reactor(this, absl::FromChrono(context->deadline()));
  // The reactor owns the parsed request until the call is done; the completion reads it.
  const xlate::v1::TranslateRequest& request = reactor->request();
  TranslationOptions options;
  std::vector<std::vector<int32_t>> sources;
  grpc::Status status = grpc::Status::OK;
  if (!reactor->Enter()) {
    status = grpc::Status(grpc::UNAVAILABLE, "the server is shutting down; retry on another "
                                             "replica");
  } else if (static_cast<int64_t>(request_bytes->Length()) > limits_.max_request_bytes) {
    status = grpc::Status(grpc::RESOURCE_EXHAUSTED,
                          absl::StrCat("the request is ", request_bytes->Length(),
                                       " bytes; the limit is ", limits_.max_request_bytes,
                                       " bytes (--max_receive_message_bytes)"));
  } else {
    status = parse_request(*request_bytes, reactor->request());
  }
  if (status.ok()) status = Check(request, options, sources);
  if (!status.ok()) {
    reactor->Complete(status);
    reactor->Release();
    return reactor;
  }
  auto job = scheduler_->Submit(
      std::move(sources), options, absl::FromChrono(context->deadline()),
      [this, reactor, response_bytes, n_best = options.n_best](
          absl::Status status, std::vector<std::vector<Hypothesis>> results) {
        if (!status.ok()) return reactor->Complete(to_grpc(status));
        xlate::v1::TranslateResponse response;
        grpc::Status answered = Respond(reactor->request(), n_best, std::move(results), response);
        if (answered.ok()) answered = serialize_response(response, *response_bytes);
        reactor->Complete(answered);
      });
  if (job.ok()) {
    reactor->set_job(*std::move(job));
  } else {
    reactor->Complete(to_grpc(job.status()));
  }
  reactor->Release();
  return reactor;
}

grpc::Status TranslationService::Check(const xlate::v1::TranslateRequest& request,
                                       TranslationOptions& options,
                                       std::vector<std::vector<int32_t>>& sources) const {
  if (!request.model().empty() && request.model() != model_name_) {
    return grpc::Status(grpc::NOT_FOUND, absl::StrCat("model \"", request.model(),
                                                      "\" is not served here; this server "
                                                      "serves \"", model_name_, "\""));
  }
  const ModelConfig& config = translator_->model().config();
  for (const absl::Status& language :
       {check_language("source_language_code", request.source_language_code(),
                       config.source_lang, "from"),
        check_language("target_language_code", request.target_language_code(),
                       config.target_lang, "into")}) {
    if (!language.ok()) return to_grpc(language);
  }
  if (request.contents_size() == 0) return invalid("contents is empty: send at least 1 sentence");
  if (request.contents_size() > limits_.max_sentences_per_request) {
    return invalid(absl::StrCat("contents has ", request.contents_size(),
                                " sentences; the limit is ", limits_.max_sentences_per_request));
  }
  const xlate::v1::DecodingOptions& given = request.options();
  if (given.has_beam_size()) options.beam_size = given.beam_size();
  if (given.has_length_penalty()) options.length_penalty = given.length_penalty();
  if (given.has_max_extra_length()) options.max_extra_length = given.max_extra_length();
  if (given.has_n_best()) options.n_best = given.n_best();
  if (options.beam_size < 1 || options.beam_size > limits_.max_beam_size) {
    return invalid(absl::StrCat("options.beam_size = ", options.beam_size,
                                " is out of range: it must be in [1, ", limits_.max_beam_size, "]"));
  }
  if (auto status = options.Validate("options."); !status.ok()) return to_grpc(status);
  for (int i = 0; i < request.contents_size(); ++i) {
    const std::string& sentence = request.contents(i);
    if (sentence.empty()) return invalid(absl::StrCat("contents[", i, "] is empty"));
    if (static_cast<int>(sentence.size()) > limits_.max_input_bytes) {
      return invalid(absl::StrCat("contents[", i, "] is ", sentence.size(),
                                  " bytes; the limit is ", limits_.max_input_bytes, " bytes"));
    }
    auto ids = translator_->tokenizer().encode(sentence);
    if (!ids.ok()) return to_grpc(ids.status());
    const int token_limit = std::min(limits_.max_input_tokens, translator_->max_input_tokens());
    if (static_cast<int64_t>(ids->size()) + 1 > token_limit) {
      return invalid(absl::StrCat("contents[", i, "] has ", ids->size() + 1,
                                  " tokens; the limit is ", token_limit));
    }
    sources.push_back(*std::move(ids));
  }
  return grpc::Status::OK;
}

grpc::Status TranslationService::Respond(const xlate::v1::TranslateRequest& request, int n_best,
                                         std::vector<std::vector<Hypothesis>> results,
                                         xlate::v1::TranslateResponse& response) const {
  const bool with_hypotheses = n_best > 1 || request.options().return_scores();
  for (std::vector<Hypothesis>& hypotheses : results) {
    xlate::v1::Translation* translation = response.add_translations();
    for (size_t k = 0; k < hypotheses.size(); ++k) {
      auto text = translator_->tokenizer().decode(hypotheses[k].tokens);
      if (!text.ok()) return to_grpc(text.status());
      if (k == 0) translation->set_translated_text(*text);
      if (!with_hypotheses) break;
      xlate::v1::Hypothesis* hypothesis = translation->add_hypotheses();
      hypothesis->set_text(*std::move(text));
      if (request.options().return_scores()) hypothesis->set_score(hypotheses[k].score);
    }
  }
  response.set_model(model_name_);
  return grpc::Status::OK;
}

}  // namespace xlate::server
