#include "server/translation_service.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <map>
#include <optional>
#include <type_traits>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/ops/backend.h"
#include "engine/placement_flags.h"
#include "engine/target_language.h"
#include "text/utf8.h"
#include "server/language_code.h"
#include "server/caller_admission.h"
#include "server/language_detection.h"
#include "server/grpc_status.h"
#include "server/request_documents.h"
#include "server/request_parsing.h"
#include "document/inline_markup.h"
#include "server/source_detection.h"
#include "server/translate_response.h"

namespace xlate::server {
namespace {

// How much later than the client's the server's deadline of a call may be: the time its headers
// took to arrive (Call::deadline_passed).
constexpr absl::Duration kDeadlineArrivalAllowance = absl::Milliseconds(250);

// The answer to a call that comes while the server drains.
grpc::Status draining() {
  return grpc::Status(grpc::UNAVAILABLE, "the server is shutting down; retry on another replica");
}

// The answer to a request of `bytes` over --max_receive_message_bytes.
grpc::Status oversized(size_t bytes, const RequestLimits& limits) {
  return grpc::Status(grpc::RESOURCE_EXHAUSTED,
                      absl::StrCat("the request is ", bytes, " bytes; the limit is ",
                                   limits.max_request_bytes,
                                   " bytes (--max_receive_message_bytes)"));
}


int64_t characters_of(const google::protobuf::RepeatedPtrField<std::string>& contents) {
  int64_t characters = 0;
  for (const std::string& text : contents) characters += count_code_points(text);
  return characters;
}


// The client whose queue share a call's sentences count against: its peer, or for a call the
// HTTP gateway made in-process (peer "inproc"), the HTTP client the gateway names.
std::string client_of(const grpc::CallbackServerContext& context) {
  std::string peer = context.peer();
  if (!absl::StartsWith(peer, "inproc")) return peer;
  const auto& metadata = context.client_metadata();
  if (const auto job = metadata.find(kDocumentJobMetadata); job != metadata.end()) {
    return absl::StrCat("job:", absl::string_view(job->second.data(), job->second.size()));
  }
  const auto forwarded = metadata.find(kHttpClientMetadata);
  if (forwarded == metadata.end()) return peer;
  return absl::StrCat("http:", absl::string_view(forwarded->second.data(),
                                                  forwarded->second.size()));
}

}  // namespace

TranslationService::TranslationService(const ModelRegistry* models, ServerMetrics* metrics,
                                       RequestLimits limits, ApiKeys* keys,
                                       const Glossaries* glossaries)
    : models_(models), metrics_(metrics), limits_(limits), keys_(keys), glossaries_(glossaries) {}

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

// What every call does, unary or streamed: counts itself in (refused while draining) and its
// outcome in the metrics, under the code the client sees (a call past its deadline as
// DEADLINE_EXCEEDED); holds the parsed request, its sentences and the model it was routed to
// (until the call is deleted: a reload never takes a call's model away); and ties the model's
// scheduler's job to gRPC's cancellation (which fails the job, which then ends the call). A call
// ends exactly once. Owned jointly by gRPC (until OnDone) and by the method that starts it (until it
// returns), since the job may complete, and gRPC call OnDone, before that method is done.
template <typename GrpcReactor>
class TranslationService::Call : public GrpcReactor {
 public:
  Call(TranslationService* service, grpc::CallbackServerContext* context)
      : service_(service), context_(context), deadline_(absl::FromChrono(context->deadline())),
        start_(absl::Now()) {
    service_->metrics_->on_request_start();
  }
  // Whether gRPC has given up on the call (its client cancelled, its deadline passed, its
  // connection broke): a request read then may be cut.
  bool cancelled() const { return context_->IsCancelled(); }
  const grpc::CallbackServerContext* context() const { return context_; }
  // Whether the service takes the call (it refuses calls while draining).
  bool Enter() { return entered_ = service_->Enter(); }
  absl::Time deadline() const { return deadline_; }
  xlate::v1::TranslateRequest& request() { return request_; }
  // What source_language_code "auto" was detected as (unset without "auto").
  std::optional<xlate::v1::DetectedLanguage>& detected() { return detected_; }
  // A request's documents (server/request_documents.h; unset for plain text).
  std::optional<DocumentBatch>& documents() { return documents_; }
  // The model the call was routed to; set before its texts.
  void set_model(std::shared_ptr<const ServedModel> model) { model_ = std::move(model); }
  const ServedModel& model() const { return *model_; }
  // The request's texts as split into sentences; set before the job is submitted.
  void set_texts(SegmentedTexts texts) { texts_.emplace(std::move(texts)); }
  const SegmentedTexts& texts() const { return *texts_; }
  // Each sentence's token ids, kept only when the request asks for alignments (which label
  // the source pieces with them); set before the job is submitted.
  void set_aligned_sources(std::vector<std::vector<int32_t>> sources) {
    aligned_sources_ = std::move(sources);
  }
  const std::vector<std::vector<int32_t>>& aligned_sources() const { return aligned_sources_; }
  void set_terms(std::vector<SentenceTerms> terms) { terms_ = std::move(terms); }
  const std::vector<SentenceTerms>& terms() const { return terms_; }
  void set_job(std::shared_ptr<TranslationJob> job) {
    absl::Status cancelled;
    {
      absl::MutexLock lock(&mutex_);
      job_ = job;
      cancelled = cancelled_;
    }
    if (!cancelled.ok()) model_->scheduler().Cancel(job, cancelled);
  }
  // Whether the call's deadline has passed by the client's clock. The server's deadline is the
  // client's timeout counted from when the headers arrived, so the client's comes first by the
  // time they took to arrive (tens of ms on a loaded machine): a cancel that reaches the server
  // that close to its deadline is the client's deadline firing, and the client sees
  // DEADLINE_EXCEEDED. (A client that gives up of its own accord that close to its deadline is
  // counted so too.)
  bool deadline_passed() const { return absl::Now() >= deadline_ - kDeadlineArrivalAllowance; }
  // gRPC calls this when the client cancels and when the deadline passes.
  void OnCancel() override {
    const absl::Status why =
        deadline_passed()
            ? absl::DeadlineExceededError("the call's deadline passed before its translation")
            : absl::CancelledError("the client cancelled the call");
    std::shared_ptr<TranslationJob> job;
    {
      absl::MutexLock lock(&mutex_);
      job = job_;
      cancelled_ = why;
    }
    if (job) model_->scheduler().Cancel(job, why);
  }
  void OnDone() override {
    if (count_when_done_) {
      // The client's deadline passed (by its clock) or it cancelled: what it saw.
      const grpc::StatusCode code = !context_->IsCancelled() ? outcome_
                                    : deadline_passed()      ? grpc::DEADLINE_EXCEEDED
                                                             : grpc::CANCELLED;
      service_->metrics_->on_request_done(model_ ? model_->name() : std::string(), code,
                                          seconds_);
    }
    Release();
  }
  // Whether the request arrived as no bytes at all (see End).
  void set_read_empty(bool empty) { read_empty_ = empty; }
  // Reads a TranslateRequest from the call's bytes (TranslateDocument's call reads its own).
  grpc::Status ReadRequest(const grpc::ByteBuffer& bytes, const RequestLimits& limits) {
    grpc::Status status = parse_request(bytes, limits.max_entries_per_request, request_);
    characters_ = status.ok() ? characters_of(request_.contents()) : 0;
    return status;
  }
  // The request's documents in place of its entries (server/request_documents.h), once its
  // caller is known.
  grpc::Status Expand(bool streaming) {
    return expand_documents(request_, streaming, documents_);
  }
  // The limits the request is checked against.
  RequestLimits limits(const RequestLimits& service_limits) const { return service_limits; }
  // The characters the request charges to its API key's quota.
  int64_t characters() const { return characters_; }
  void Release() {
    if (owners_.fetch_sub(1) == 1) delete this;
  }

 protected:
  // Counts the outcome, runs `finish` with the status to send (which hands gRPC the call's
  // end: the last use of this call, which gRPC may delete from then on), then lets a drain see
  // the call answered. A failure answered after the call's deadline is sent and counted as
  // DEADLINE_EXCEEDED, which is what its client sees: a 1 ms call that gRPC handed over cut
  // (an empty message) was once counted as INVALID_ARGUMENT.
  template <typename Finish>
  void End(const grpc::Status& status, Finish finish) {
    TranslationService* const service = service_;
    const bool entered = entered_;
    const absl::Time now = absl::Now();
    const grpc::Status sent =
        !status.ok() && status.error_code() != grpc::DEADLINE_EXCEEDED && now >= deadline_
            ? grpc::Status(grpc::DEADLINE_EXCEEDED,
                           absl::StrCat("the deadline passed (", status.error_message(), ")"))
            : status;
    service->metrics_->on_request_end();
    // A failure answered to a call that arrived with no bytes is counted once gRPC is done with
    // it (OnDone), when whether its client had given up is known: a 1 ms call's request can be
    // handed over empty, the client's cancel not yet seen, and its client sees
    // DEADLINE_EXCEEDED, not what the server says of an empty request.
    count_when_done_ = read_empty_ && sent.error_code() != grpc::OK &&
                       sent.error_code() != grpc::DEADLINE_EXCEEDED &&
                       sent.error_code() != grpc::CANCELLED;
    if (count_when_done_) {
      outcome_ = sent.error_code();
      seconds_ = now - start_;
    } else {
      service->metrics_->on_request_done(model_ ? model_->name() : std::string(),
                                         sent.error_code(), now - start_);
    }
    finish(sent);
    if (entered) service->Leave();
  }
  TranslationService* const service_;
  grpc::CallbackServerContext* const context_;
  bool read_empty_ = false;
  int64_t characters_ = 0;
  // What End() sent, and when, when OnDone counts it.
  bool count_when_done_ = false;
  grpc::StatusCode outcome_ = grpc::OK;
  absl::Duration seconds_;

 private:
  std::atomic<int> owners_{2};

 protected:
  xlate::v1::TranslateRequest request_;
  std::optional<DocumentBatch> documents_;

 private:
  const absl::Time deadline_;
  const absl::Time start_;
  bool entered_ = false;
  absl::Mutex mutex_;
  std::shared_ptr<TranslationJob> job_ ABSL_GUARDED_BY(mutex_);
  absl::Status cancelled_ ABSL_GUARDED_BY(mutex_);  // why, once gRPC has cancelled the call
  std::optional<xlate::v1::DetectedLanguage> detected_;
  std::shared_ptr<const ServedModel> model_;
  std::optional<SegmentedTexts> texts_;
  std::vector<std::vector<int32_t>> aligned_sources_;
  std::vector<SentenceTerms> terms_;  // per sentence, with a glossary
};

// Translate: one response, or a status.
class TranslationService::UnaryCall : public Call<grpc::ServerUnaryReactor> {
 public:
  UnaryCall(TranslationService* service, grpc::CallbackServerContext* context,
            grpc::ByteBuffer* response)
      : Call(service, context), response_(response) {}
  void EndWith(const grpc::Status& status) {
    End(status, [&](const grpc::Status& sent) { Finish(sent); });
  }
  // The job's DoneCallback.
  void Answer(absl::Status status, int n_best, std::vector<std::vector<Hypothesis>> results) {
    if (!status.ok()) return EndWith(to_grpc(status));
    xlate::v1::TranslateResponse response;
    grpc::Status answered =
        documents() ? respond_documents(model(), *documents(), texts(), aligned_sources(),
                                        results, terms(), response)
                    : respond(model(), request(), texts(), aligned_sources(), n_best, results,
                              terms(), response);
    if (detected()) *response.mutable_detected_source_language() = *detected();
    if (answered.ok()) answered = serialize_reply(response, *response_);
    EndWith(answered);
  }
  TranslationJob::ProgressCallback progress_callback() { return nullptr; }

 private:
  grpc::ByteBuffer* const response_;
};

// A call that streams messages while its job runs, then its last message and status. One write
// at a time: what comes meanwhile waits in the derived call's queue (TakeWaitingLocked), and the
// end waits for the write in flight, the messages still waiting dropped (the last one holds the
// whole answer).
class TranslationService::WritingCall : public Call<grpc::ServerWriteReactor<grpc::ByteBuffer>> {
 public:
  using Call::Call;
  void EndWith(const grpc::Status& status) { EndAfterWrites(std::nullopt, status); }

  void OnWriteDone(bool ok) override {
    bool write = false;
    {
      absl::MutexLock lock(&mutex_);
      writing_ = false;
      if (!ok) DropWaitingLocked();  // the stream is broken: the end alone is left to do
      write = NextWriteLocked();
      if (!write && !(ending_ && !ended_)) return;
      if (!write) ended_ = true;
    }
    if (write) return StartWrite(&writing_bytes_);
    EndNow();
  }

 protected:
  // The next waiting message, moved into `next` (false: none waits).
  virtual bool TakeWaitingLocked(grpc::ByteBuffer& next) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) = 0;
  virtual void DropWaitingLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) = 0;

  // Queues a message with `wait` (which adds it to the waiting ones, under the lock) and writes
  // the next one when no write is in flight; nothing once the call is ending.
  template <typename Wait>
  void Offer(Wait wait) {
    bool write = false;
    {
      absl::MutexLock lock(&mutex_);
      if (ending_) return;
      wait();
      write = NextWriteLocked();
    }
    if (write) StartWrite(&writing_bytes_);
  }

  // Ends the stream with `last` (a message) and `status` once the write in flight is done.
  void EndAfterWrites(std::optional<grpc::ByteBuffer> last, const grpc::Status& status) {
    {
      absl::MutexLock lock(&mutex_);
      if (ending_) return;
      ending_ = true;
      last_ = std::move(last);
      status_ = status;
      DropWaitingLocked();
      if (writing_) return;  // OnWriteDone ends it
      ended_ = true;
    }
    EndNow();
  }

  absl::Mutex mutex_;

 private:
  bool NextWriteLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    if (writing_ || !TakeWaitingLocked(writing_bytes_)) return false;
    writing_ = true;
    return true;
  }

  void EndNow() {
    const grpc::Status status = status_;
    End(status, [&](const grpc::Status& sent) {
      if (last_) {
        StartWriteAndFinish(&*last_, grpc::WriteOptions(), sent);
      } else {
        Finish(sent);
      }
    });
  }

  bool writing_ ABSL_GUARDED_BY(mutex_) = false;
  grpc::ByteBuffer writing_bytes_;  // the write in flight's message; set under mutex_
  bool ending_ ABSL_GUARDED_BY(mutex_) = false;  // EndAfterWrites was called
  bool ended_ ABSL_GUARDED_BY(mutex_) = false;   // EndNow was (or is about to be) called
  // Set once, with ending_, before EndNow reads them.
  std::optional<grpc::ByteBuffer> last_;
  grpc::Status status_;
};

// What TranslateDocument and TranslateDocumentStream share, over their kind of call (`Base`):
// the file's request, read from the call's bytes, parsed (only for a caller the key check
// admitted) into the runs that become the call's entries, checked against the document limits,
// and the reply rebuilt from their translations.
template <typename Base>
class TranslationService::FileCall : public Base {
 public:
  using Base::Base;
  grpc::Status ReadRequest(const grpc::ByteBuffer& bytes, const RequestLimits& limits) {
    return parse_request(bytes, limits.max_entries_per_request, file_);
  }
  grpc::Status Expand(bool /*streaming*/) {
    xlate::v1::TranslateRequest& request = this->request_;
    std::string mime_type = file_.mime_type();
    if (mime_type.empty()) mime_type = mime_type_of_file(file_.file_name());
    auto format = entry_format(mime_type, "mime_type");
    if (!format.ok()) return to_grpc(format.status());
    mime_type_ = mime_type;
    auto batch = DocumentBatch::Parse({std::move(*file_.mutable_content())}, *format,
                                      file_.options().keep_placeholders(), "");
    if (!batch.ok()) return to_grpc(batch.status());
    request.set_source_language_code(file_.source_language_code());
    request.set_target_language_code(file_.target_language_code());
    request.set_model(file_.model());
    *request.mutable_options() = file_.options();
    request.mutable_options()->clear_keep_placeholders();  // taken out by the batch already
    if (file_.has_glossary_config()) *request.mutable_glossary_config() = file_.glossary_config();
    for (const std::string& run : batch->runs()) *request.add_contents() = run;
    if (request.contents().empty()) request.add_contents();
    if (batch->needs_word_links()) {
      request.mutable_alignment()->set_layer(kMarkupAlignment.layer);
      request.mutable_alignment()->set_head(kMarkupAlignment.head);
    }
    this->characters_ = characters_of(request.contents());
    this->documents_ = *std::move(batch);
    return grpc::Status::OK;
  }
  RequestLimits limits(const RequestLimits& service_limits) const {
    RequestLimits limits = service_limits;
    limits.document = true;
    return limits;
  }

 protected:
  grpc::Status Reply(const std::vector<std::vector<Hypothesis>>& results,
                     xlate::v1::TranslateDocumentResponse& reply) {
    xlate::v1::TranslateResponse response;
    grpc::Status status =
        respond_documents(this->model(), *this->documents(), this->texts(),
                          this->aligned_sources(), results, this->terms(), response);
    if (!status.ok()) return status;
    xlate::v1::Translation& file = *response.mutable_translations(0);
    reply.set_content(std::move(*file.mutable_translated_text()));
    reply.set_mime_type(mime_type_);
    reply.set_model(response.model());
    if (this->detected()) *reply.mutable_detected_source_language() = *this->detected();
    *reply.mutable_glossary_terms() = file.glossary_terms();
    return grpc::Status::OK;
  }

 private:
  xlate::v1::TranslateDocumentRequest file_;
  std::string mime_type_;
};

// TranslateDocument: the file's paragraphs translated as a Translate request's entries, and the
// file rebuilt from them (one response, or a status).
class TranslationService::DocumentCall : public FileCall<Call<grpc::ServerUnaryReactor>> {
 public:
  DocumentCall(TranslationService* service, grpc::CallbackServerContext* context,
               grpc::ByteBuffer* response)
      : FileCall(service, context), response_(response) {}
  void EndWith(const grpc::Status& status) {
    End(status, [&](const grpc::Status& sent) { Finish(sent); });
  }
  // The job's DoneCallback.
  void Answer(absl::Status status, int /*n_best*/, std::vector<std::vector<Hypothesis>> results) {
    if (!status.ok()) return EndWith(to_grpc(status));
    xlate::v1::TranslateDocumentResponse reply;
    grpc::Status answered = Reply(results, reply);
    if (answered.ok()) answered = serialize_reply(reply, *response_);
    EndWith(answered);
  }
  TranslationJob::ProgressCallback progress_callback() { return nullptr; }

 private:
  grpc::ByteBuffer* const response_;
};

// TranslateDocumentStream: the file's progress (sentences done of all) while the job runs, then
// the response (or a status); a newer progress message replaces one still waiting.
class TranslationService::DocumentStreamCall : public FileCall<WritingCall> {
 public:
  using FileCall::FileCall;
  void Answer(absl::Status status, int /*n_best*/, std::vector<std::vector<Hypothesis>> results) {
    if (!status.ok()) return EndWith(to_grpc(status));
    xlate::v1::TranslateDocumentStreamResponse last;
    grpc::Status answered = Reply(results, *last.mutable_response());
    grpc::ByteBuffer bytes;
    if (answered.ok()) answered = serialize_reply(last, bytes);
    if (!answered.ok()) return EndWith(answered);
    EndAfterWrites(std::move(bytes), grpc::Status::OK);
  }
  // The job's ProgressCallback (on the completion thread, as Answer): a sentence done.
  TranslationJob::ProgressCallback progress_callback() {
    return [this](size_t /*sentence*/, std::vector<int32_t> /*tokens*/, bool complete) {
      if (!complete) return;
      xlate::v1::TranslateDocumentStreamResponse update;
      update.mutable_progress()->set_sentences_done(++sentences_done_);
      update.mutable_progress()->set_sentences_total(
          static_cast<int32_t>(texts().sentences().size()));
      grpc::ByteBuffer bytes;
      if (!serialize_reply(update, bytes).ok()) return;
      Offer([&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) { waiting_ = std::move(bytes); });
    };
  }

 private:
  bool TakeWaitingLocked(grpc::ByteBuffer& next) override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    if (!waiting_) return false;
    next = *std::move(waiting_);
    waiting_.reset();
    return true;
  }
  void DropWaitingLocked() override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) { waiting_.reset(); }

  int32_t sentences_done_ = 0;  // the completion thread's alone
  // The newest progress not written yet.
  std::optional<grpc::ByteBuffer> waiting_ ABSL_GUARDED_BY(mutex_);
};

// TranslateStream: partial translations while the job runs, then the response (or a status).
// An entry's newer partial replaces its older one (so a slow reader holds at most one partial
// per entry).
class TranslationService::StreamCall : public WritingCall {
 public:
  using WritingCall::WritingCall;
  void set_texts(SegmentedTexts texts) {
    settled_.assign(texts.sentences().size(), std::string());
    sentence_done_.assign(texts.sentences().size(), false);
    shown_.assign(texts.text_count(), Shown());
    Call::set_texts(std::move(texts));
  }
  void Answer(absl::Status status, int n_best, std::vector<std::vector<Hypothesis>> results) {
    if (!status.ok()) return EndWith(to_grpc(status));
    xlate::v1::TranslateStreamResponse last;
    grpc::Status answered = respond(model(), request(), texts(), aligned_sources(), n_best,
                                    results, terms(), *last.mutable_response());
    if (detected()) {
      *last.mutable_response()->mutable_detected_source_language() = *detected();
    }
    grpc::ByteBuffer bytes;
    if (answered.ok()) answered = serialize_reply(last, bytes);
    if (!answered.ok()) return EndWith(answered);
    EndAfterWrites(std::move(bytes), grpc::Status::OK);
  }
  // The job's ProgressCallback (on the completion thread, as Answer): a sentence's tokens so
  // far become its entry's partial translation when the entry's shown text grows.
  TranslationJob::ProgressCallback progress_callback() {
    return [this](size_t sentence, std::vector<int32_t> tokens, bool complete) {
      OnProgress(sentence, std::move(tokens), complete);
    };
  }

 private:
  struct Shown {
    size_t bytes = 0;
    bool complete = false;
  };

  void OnProgress(size_t sentence, std::vector<int32_t> tokens, bool complete) {
    const Tokenizer& tokenizer = model().translator().tokenizer();
    if (!complete) tokens.resize(tokenizer.whole_words(tokens));
    auto text = tokenizer.decode(tokens);
    if (!text.ok()) return;  // the answer's own decode reports it
    settled_[sentence] = *std::move(text);
    sentence_done_[sentence] = complete;
    // The entry's sentences in order, through the first that is not done.
    const SegmentedTexts& split = texts();
    const size_t entry = split.text_of(sentence), first = split.first_sentence(entry);
    const size_t end = split.end_sentence(entry);
    size_t last = first;
    while (last + 1 < end && sentence_done_[last]) ++last;
    const bool entry_done = last + 1 == end && sentence_done_[last];
    const std::vector<std::string> translations(settled_.begin() + static_cast<ptrdiff_t>(first),
                                                settled_.begin() + static_cast<ptrdiff_t>(last) + 1);
    std::string shown = entry_done ? split.Join(entry, translations)
                                   : split.JoinThrough(entry, translations, last - first);
    Shown& before = shown_[entry];
    if (shown.size() <= before.bytes && !(entry_done && !before.complete)) return;
    before = {shown.size(), entry_done};
    xlate::v1::TranslateStreamResponse update;
    xlate::v1::PartialTranslation* partial = update.mutable_partial();
    partial->set_entry(static_cast<int32_t>(entry));
    partial->set_text(std::move(shown));
    partial->set_complete(entry_done);
    grpc::ByteBuffer bytes;
    if (!serialize_reply(update, bytes).ok()) return;
    Offer([&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
      auto [waiting, inserted] = waiting_.try_emplace(entry, std::move(bytes));
      if (inserted) {
        order_.push_back(entry);
      } else {
        waiting->second = std::move(bytes);
      }
    });
  }

  // An entry's partials wait in the order the entries first waited, a newer one in place of an
  // older one.
  bool TakeWaitingLocked(grpc::ByteBuffer& next) override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    if (order_.empty()) return false;
    const size_t entry = order_.front();
    order_.pop_front();
    next = std::move(waiting_.at(entry));
    waiting_.erase(entry);
    return true;
  }
  void DropWaitingLocked() override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    waiting_.clear();
    order_.clear();
  }

  // The completion thread's alone (progress and the answer run there, in order).
  std::vector<std::string> settled_;   // per sentence: its settled text
  std::vector<bool> sentence_done_;
  std::vector<Shown> shown_;           // per entry: what its last partial showed

  std::map<size_t, grpc::ByteBuffer> waiting_ ABSL_GUARDED_BY(mutex_);  // by entry
  std::deque<size_t> order_ ABSL_GUARDED_BY(mutex_);  // entries, in the order they first waited
};

template <typename CallType>
void TranslationService::Start(CallType* call, const grpc::ByteBuffer& request_bytes,
                               const std::string& client) {
  CheckedRequest checked;
  grpc::Status status = grpc::Status::OK;
  call->set_read_empty(request_bytes.Length() == 0);
  if (!call->Enter()) {
    status = draining();
  } else if (call->cancelled()) {
    // Given up on before it was read (its client cancelled, or its deadline passed by the
    // client's clock): the bytes that arrived need not be the whole request.
    status = grpc::Status(grpc::CANCELLED, "the call was cancelled before its request was read");
  } else if (call->deadline() <= absl::Now()) {
    // Past its deadline before it was read (a 1 ms deadline): whatever bytes arrived need not
    // be the whole request, and an answer about them (INVALID_ARGUMENT for a cut message) would
    // be counted under the wrong code.
    status = grpc::Status(grpc::DEADLINE_EXCEEDED,
                          "the deadline passed before the request could be read");
  } else if (static_cast<int64_t>(request_bytes.Length()) > limits_.max_request_bytes) {
    status = oversized(request_bytes.Length(), limits_);
  } else {
    status = call->ReadRequest(request_bytes, limits_);
  }
  // The key first (a caller without one costs no more work), its quota last: a request refused
  // for what it holds uses none of it.
  if (status.ok()) status = verify_caller(keys_, *call->context());
  if (status.ok()) status = call->Expand(std::is_same_v<CallType, StreamCall>);
  if (status.ok() && absl::EqualsIgnoreCase(call->request().source_language_code(), "auto")) {
    status = detect_source(call->request(), call->detected().emplace());
  }
  if (status.ok()) {
    const xlate::v1::TranslateRequest& request = call->request();
    auto model = models_->Route(request.model(), request.source_language_code(),
                                request.target_language_code());
    if (model.ok()) {
      call->set_model(*std::move(model));
    } else {
      status = to_grpc(model.status());
    }
  }
  if (status.ok()) {
    status = check_translate_request(call->model(), call->request(), call->limits(limits_),
                                     glossaries_, checked);
  }
  if (!status.ok() && call->detected() && status.error_code() == grpc::INVALID_ARGUMENT &&
      absl::StartsWith(status.error_message(), "source_language_code")) {
    // A detected language no model takes: say that it was detected, and how surely.
    const xlate::v1::DetectedLanguage& detected = *call->detected();
    status = grpc::Status(
        grpc::INVALID_ARGUMENT,
        detected.language_code().empty()
            ? absl::StrCat("source_language_code \"auto\": no language could be detected in "
                           "contents; name it: ", status.error_message())
            : absl::StrCat("source_language_code \"auto\" was detected as ",
                           detected.language_code(), " (confidence ", detected.confidence(),
                           detected.reliable() ? "" : ", not reliable", "): ",
                           status.error_message()));
  }
  // The scheduler shares the engine between clients: per API key when keys are in use (one
  // caller may open many connections), else per peer.
  std::string sharing_client = client;
  if (status.ok()) {
    std::string key_name;
    status = admit_caller(keys_, *call->context(), call->characters(), &key_name);
    // A document job stays a client of its own (client_of), its key's calls another.
    if (!key_name.empty() && !absl::StartsWith(client, "job:")) {
      sharing_client = "key:" + key_name;
    }
  }
  if (!status.ok()) return call->EndWith(status);
  call->set_texts(*std::move(checked.texts));
  if (checked.options.alignment.has_value()) call->set_aligned_sources(checked.sources);
  std::vector<Constraints> constraints;
  for (const SentenceTerms& sentence : checked.terms) constraints.push_back(sentence.constraints);
  call->set_terms(std::move(checked.terms));
  const int n_best = checked.options.n_best;
  if (checked.sources.empty()) return call->Answer(absl::OkStatus(), n_best, {});  // all blank
  auto job = call->model().scheduler().Submit(
      std::move(checked.sources), checked.options, call->deadline(),
      [call, n_best](absl::Status status, std::vector<std::vector<Hypothesis>> results) {
        call->Answer(std::move(status), n_best, std::move(results));
      },
      call->progress_callback(), sharing_client, checked.forced_starts, std::move(constraints));
  if (job.ok()) {
    call->set_job(*std::move(job));
  } else {
    call->EndWith(to_grpc(job.status()));
  }
}

grpc::ServerUnaryReactor* TranslationService::Translate(grpc::CallbackServerContext* context,
                                                        const grpc::ByteBuffer* request_bytes,
                                                        grpc::ByteBuffer* response_bytes) {
  auto* call = new UnaryCall(this, context, response_bytes);
  Start(call, *request_bytes, client_of(*context));
  call->Release();
  return call;
}

grpc::ServerUnaryReactor* TranslationService::TranslateDocument(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request_bytes,
    grpc::ByteBuffer* response_bytes) {
  auto* call = new DocumentCall(this, context, response_bytes);
  Start(call, *request_bytes, client_of(*context));
  call->Release();
  return call;
}

grpc::ServerWriteReactor<grpc::ByteBuffer>* TranslationService::TranslateDocumentStream(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request_bytes) {
  auto* call = new DocumentStreamCall(this, context);
  Start(call, *request_bytes, client_of(*context));
  call->Release();
  return call;
}

grpc::ServerUnaryReactor* TranslationService::ListModels(
    grpc::CallbackServerContext* context, const xlate::v1::ListModelsRequest* /*request*/,
    xlate::v1::ListModelsResponse* response) {
  // Open without a key, as health and LibreTranslate's /languages are: it says what the server
  // serves, nothing of its clients.
  for (const std::string& name : models_->names()) {
    auto model = models_->Route(name, "", "");
    if (!model.ok()) continue;  // removed since names() was read
    const ModelConfig& config = (*model)->config();
    const Placement& placement = (*model)->translator().model().placement();
    xlate::v1::ModelInfo* info = response->add_models();
    info->set_name(name);
    info->set_source_language_code(config.source_lang);
    info->set_target_language_code(config.target_lang);
    for (const std::string& code : (*model)->translator().tokenizer().languages()) {
      info->add_target_language_codes(code);
    }
    info->set_device(device_label(placement.device));
    info->set_compute_type(compute_type_label(placement));
  }
  if (glossaries_) {
    for (const std::string& name : glossaries_->names()) response->add_glossaries(name);
  }
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* TranslationService::DetectLanguage(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request_bytes,
    grpc::ByteBuffer* response_bytes) {
  xlate::v1::DetectLanguageRequest request;
  grpc::Status status = grpc::Status::OK;
  const bool entered = Enter();
  if (!entered) {
    status = draining();
  } else if (static_cast<int64_t>(request_bytes->Length()) > limits_.max_request_bytes) {
    status = oversized(request_bytes->Length(), limits_);
  } else {
    status = parse_request(*request_bytes, limits_.max_entries_per_request, request);
  }
  if (status.ok()) status = verify_caller(keys_, *context);
  if (status.ok()) status = check_contents(request.contents(), limits_);
  if (status.ok()) status = admit_caller(keys_, *context, characters_of(request.contents()));
  if (status.ok()) {
    xlate::v1::DetectLanguageResponse response;
    for (const std::string& text : request.contents()) {
      xlate::v1::LanguageDetection* detection = response.add_detections();
      for (const LanguageCandidate& candidate : detect_language(text)) {
        fill_detected(candidate, *detection->add_languages());
      }
    }
    status = serialize_reply(response, *response_bytes);
  }
  if (entered) Leave();
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(status);
  return reactor;
}

grpc::ServerWriteReactor<grpc::ByteBuffer>* TranslationService::TranslateStream(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request_bytes) {
  auto* call = new StreamCall(this, context);
  Start(call, *request_bytes, client_of(*context));
  call->Release();
  return call;
}


}  // namespace xlate::server
