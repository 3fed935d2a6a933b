#include "server/translation_service.h"

#include <algorithm>
#include <atomic>
#include <optional>

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
  // The request's texts as split into sentences; set before the job is submitted.
  void set_texts(SegmentedTexts texts) { texts_.emplace(std::move(texts)); }
  const SegmentedTexts& texts() const { return *texts_; }
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
  std::optional<SegmentedTexts> texts_;
};

grpc::ServerUnaryReactor* TranslationService::Translate(grpc::CallbackServerContext* context,
                                                        const grpc::ByteBuffer* request_bytes,
                                                        grpc::ByteBuffer* response_bytes) {
  auto* reactor = new Reactor(this, absl::FromChrono(context->deadline()));
  // The reactor owns the parsed request until the call is done; the completion reads it.
  const xlate::v1::TranslateRequest& request = reactor->request();
  TranslationOptions options;
  std::optional<SegmentedTexts> texts;
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
  if (status.ok()) status = Check(request, options, texts, sources);
  if (status.ok()) reactor->set_texts(*std::move(texts));
  // Answers from the sentences' results (none when every entry is blank).
  auto answer = [this, reactor, response_bytes, n_best = options.n_best](
                    absl::Status status, std::vector<std::vector<Hypothesis>> results) {
    if (!status.ok()) return reactor->Complete(to_grpc(status));
    xlate::v1::TranslateResponse response;
    grpc::Status answered =
        Respond(reactor->request(), reactor->texts(), n_best, std::move(results), response);
    if (answered.ok()) answered = serialize_response(response, *response_bytes);
    reactor->Complete(answered);
  };
  if (!status.ok() || sources.empty()) {
    if (status.ok()) {
      answer(absl::OkStatus(), {});
    } else {
      reactor->Complete(status);
    }
    reactor->Release();
    return reactor;
  }
  auto job = scheduler_->Submit(std::move(sources), options,
                                absl::FromChrono(context->deadline()), std::move(answer));
  if (job.ok()) {
    reactor->set_job(*std::move(job));
  } else {
    reactor->Complete(to_grpc(job.status()));
  }
  reactor->Release();
  return reactor;
}

grpc::Status check_request_text(const xlate::v1::TranslateRequest& request,
                                const std::string& model_name, const ModelConfig& config,
                                const RequestLimits& limits, TranslationOptions& options,
                                std::optional<SegmentedTexts>& texts) {
  if (!request.model().empty() && request.model() != model_name) {
    return grpc::Status(grpc::NOT_FOUND, absl::StrCat("model \"", request.model(),
                                                      "\" is not served here; this server "
                                                      "serves \"", model_name, "\""));
  }
  for (const absl::Status& language :
       {check_language("source_language_code", request.source_language_code(),
                       config.source_lang, "from"),
        check_language("target_language_code", request.target_language_code(),
                       config.target_lang, "into")}) {
    if (!language.ok()) return to_grpc(language);
  }
  if (!request.mime_type().empty() && request.mime_type() != "text/plain") {
    return invalid(absl::StrCat("mime_type \"", request.mime_type(),
                                "\" is not supported; send \"text/plain\" (or leave it empty)"));
  }
  if (request.contents_size() == 0) return invalid("contents is empty: send at least 1 text");
  int64_t request_code_points = 0;
  for (int i = 0; i < request.contents_size(); ++i) {
    const int64_t code_points = count_code_points(request.contents(i));
    if (code_points > limits.max_entry_code_points) {
      return invalid(absl::StrCat("contents[", i, "] has ", code_points,
                                  " code points; the limit is ", limits.max_entry_code_points,
                                  " (--max_entry_code_points)"));
    }
    request_code_points += code_points;
  }
  if (request_code_points > limits.max_request_code_points) {
    return invalid(absl::StrCat("contents has ", request_code_points,
                                " code points in all; the limit is ",
                                limits.max_request_code_points, " (--max_request_code_points)"));
  }
  const xlate::v1::DecodingOptions& given = request.options();
  if (given.has_beam_size()) options.beam_size = given.beam_size();
  if (given.has_length_penalty()) options.length_penalty = given.length_penalty();
  if (given.has_max_extra_length()) options.max_extra_length = given.max_extra_length();
  if (given.has_n_best()) options.n_best = given.n_best();
  if (options.beam_size < 1 || options.beam_size > limits.max_beam_size) {
    return invalid(absl::StrCat("options.beam_size = ", options.beam_size,
                                " is out of range: it must be in [1, ", limits.max_beam_size, "]"));
  }
  if (auto status = options.Validate("options."); !status.ok()) return to_grpc(status);

  auto split = SegmentedTexts::Split({request.contents().begin(), request.contents().end()},
                                     config.source_lang, Segmentation::kSentences);
  if (!split.ok()) return to_grpc(split.status());
  texts = *std::move(split);
  const int64_t sentence_count = static_cast<int64_t>(texts->sentences().size());
  if (sentence_count > limits.max_sentences_per_request) {
    return invalid(absl::StrCat("contents holds ", sentence_count, " sentences; the limit is ",
                                limits.max_sentences_per_request,
                                " (--max_sentences_per_request)"));
  }
  return grpc::Status::OK;
}

grpc::Status TranslationService::Check(const xlate::v1::TranslateRequest& request,
                                       TranslationOptions& options,
                                       std::optional<SegmentedTexts>& texts,
                                       std::vector<std::vector<int32_t>>& sources) const {
  grpc::Status status = check_request_text(request, model_name_, translator_->model().config(),
                                           limits_, options, texts);
  if (!status.ok()) return status;
  const int token_limit = std::min(limits_.max_input_tokens, translator_->max_input_tokens());
  for (size_t s = 0; s < texts->sentences().size(); ++s) {
    const std::string& sentence = texts->sentences()[s];
    auto ids = translator_->tokenizer().encode(sentence);
    if (!ids.ok()) return to_grpc(ids.status());
    if (static_cast<int64_t>(ids->size()) + 1 > token_limit) {
      const size_t entry = texts->text_of(s);
      return invalid(absl::StrCat(
          "contents[", entry, "], sentence ", s - texts->first_sentence(entry) + 1, " (\"",
          sentence.substr(0, 40), sentence.size() > 40 ? "...\"" : "\"", ") has ",
          ids->size() + 1, " tokens; the limit is ", token_limit, " (--max_input_tokens, ",
          "end token included)"));
    }
    sources.push_back(*std::move(ids));
  }
  return grpc::Status::OK;
}

grpc::Status TranslationService::Respond(const xlate::v1::TranslateRequest& request,
                                         const SegmentedTexts& texts, int n_best,
                                         std::vector<std::vector<Hypothesis>> results,
                                         xlate::v1::TranslateResponse& response) const {
  const bool with_scores = request.options().return_scores();
  const bool with_hypotheses = n_best > 1 || with_scores;
  // decoded[s][k]: hypothesis k of sentence s.
  std::vector<std::vector<std::string>> decoded(results.size());
  for (size_t s = 0; s < results.size(); ++s) {
    for (const Hypothesis& hypothesis : results[s]) {
      auto text = translator_->tokenizer().decode(hypothesis.tokens);
      if (!text.ok()) return to_grpc(text.status());
      decoded[s].push_back(*std::move(text));
    }
  }
  for (size_t entry = 0; entry < texts.text_count(); ++entry) {
    xlate::v1::Translation* translation = response.add_translations();
    const size_t first = texts.first_sentence(entry), end = texts.end_sentence(entry);
    if (first == end) {  // blank: back as it came, never decoded, and without a score
      translation->set_translated_text(texts.text(entry));
      if (with_hypotheses) translation->add_hypotheses()->set_text(texts.text(entry));
      continue;
    }
    // Hypothesis k of an entry joins hypothesis k of each of its sentences; its score is the
    // sum of theirs.
    for (int k = 0; k < (with_hypotheses ? n_best : 1); ++k) {
      std::vector<std::string> sentences;
      float score = 0;
      for (size_t s = first; s < end; ++s) {
        const size_t pick = std::min<size_t>(k, decoded[s].size() - 1);
        sentences.push_back(decoded[s][pick]);
        score += results[s][pick].score;
      }
      std::string text = texts.Join(entry, sentences);
      if (k == 0) translation->set_translated_text(text);
      if (!with_hypotheses) break;
      xlate::v1::Hypothesis* hypothesis = translation->add_hypotheses();
      hypothesis->set_text(std::move(text));
      if (with_scores) hypothesis->set_score(score);
    }
  }
  response.set_model(model_name_);
  return grpc::Status::OK;
}

}  // namespace xlate::server
