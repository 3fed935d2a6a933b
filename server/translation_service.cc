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
#include "engine/placeholder_text.h"
#include "engine/html_text.h"
#include "engine/inline_markup.h"
#include "engine/word_links.h"
#include "engine/xml_text.h"
#include "server/language_detection.h"
#include "server/grpc_status.h"
#include "server/request_parsing.h"

namespace xlate::server {
namespace {

grpc::Status invalid(const std::string& message) {
  return grpc::Status(grpc::INVALID_ARGUMENT, message);
}

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

// A request's contents (Translate's, DetectLanguage's): at least one entry, each and all of them
// within their code-point limits.
grpc::Status check_contents(const google::protobuf::RepeatedPtrField<std::string>& contents,
                            const RequestLimits& limits) {
  if (contents.empty()) return invalid("contents is empty: send at least 1 text");
  int64_t request_code_points = 0;
  for (int i = 0; i < contents.size(); ++i) {
    const int64_t code_points = count_code_points(contents[i]);
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
  return grpc::Status::OK;
}

int64_t characters_of(const google::protobuf::RepeatedPtrField<std::string>& contents) {
  int64_t characters = 0;
  for (const std::string& text : contents) characters += count_code_points(text);
  return characters;
}

void fill(const LanguageCandidate& candidate, xlate::v1::DetectedLanguage& detected) {
  detected.set_language_code(candidate.language_code);
  detected.set_confidence(candidate.confidence);
  detected.set_reliable(candidate.reliable);
}

// source_language_code "auto": the language of the request's text taken together, written
// into the request; INVALID_ARGUMENT when entries told reliably disagree or no language can be
// told. Blank entries take no part.
grpc::Status detect_source(xlate::v1::TranslateRequest& request,
                           xlate::v1::DetectedLanguage& detected) {
  std::string joined;
  int first_reliable = -1;
  std::string reliable_code;
  for (int i = 0; i < request.contents_size(); ++i) {
    const std::string& text = request.contents(i);
    const LanguageCandidate best = detect_language(text).front();
    if (best.reliable) {
      if (first_reliable < 0) {
        first_reliable = i, reliable_code = best.language_code;
      } else if (best.language_code != reliable_code) {
        return invalid(absl::StrCat(
            "source_language_code \"auto\": contents[", first_reliable, "] reads as ",
            reliable_code, " and contents[", i, "] as ", best.language_code,
            "; send each language in a request of its own, or name source_language_code"));
      }
    }
    absl::StrAppend(&joined, text, "\n");
  }
  const LanguageCandidate best = detect_language(joined).front();
  if (best.language_code == "und") {
    return invalid("source_language_code \"auto\": no language could be told from the text; "
                   "name source_language_code");
  }
  fill(best, detected);
  request.set_source_language_code(best.language_code);
  return grpc::Status::OK;
}

// A text/html or keep_placeholders request's entries: each entry's document (whose text runs
// are translated), and where its runs start among the request's contents once they have
// replaced the entries (the last start is the end).
struct RunEntries {
  std::vector<std::unique_ptr<const TextRuns>> documents;
  std::vector<int> first_run;
  // Whether a document has inline markup to place: then the request asks for the runs'
  // alignments, which fold_runs turns into word links.
  bool word_links = false;
};

// mime_type "text/html" or "text/xml" (each entry parsed by engine/html_text.h or
// engine/xml_text.h) or options.keep_placeholders
// (engine/placeholder_text.h): the request's contents become the entries' text runs, translated
// as text/plain entries; fold_runs puts them back. Options that describe tokens or hypotheses of
// an entry are refused, and streaming.
grpc::Status expand_runs(xlate::v1::TranslateRequest& request, bool streaming,
                         RunEntries& entries) {
  const bool html = absl::EqualsIgnoreCase(request.mime_type(), "text/html");
  const bool xml = absl::EqualsIgnoreCase(request.mime_type(), "text/xml");
  const bool placeholders = request.options().keep_placeholders();
  const std::string kind = html  ? "mime_type \"text/html\""
                           : xml ? "mime_type \"text/xml\""
                                 : "options.keep_placeholders";
  const auto refuse = [&](absl::string_view what) {
    return invalid(absl::StrCat(kind, " does not take ", what,
                                " (an entry's translation is rebuilt from its text runs)"));
  };
  if (streaming) return refuse("TranslateStream: send it to Translate");
  if (request.has_alignment()) return refuse("alignment");
  if (request.target_prefix_size() > 0) return refuse("target_prefix");
  if (request.options().n_best() > 1) return refuse("n_best > 1");
  if (request.options().return_scores()) return refuse("return_scores");
  google::protobuf::RepeatedPtrField<std::string> runs;
  for (int i = 0; i < request.contents_size(); ++i) {
    std::unique_ptr<const TextRuns> document;
    if (html) {
      auto parsed = HtmlText::Parse(request.contents(i), placeholders);
      if (!parsed.ok()) {
        return invalid(absl::StrCat("contents[", i, "]: ", parsed.status().message()));
      }
      document = std::make_unique<HtmlText>(*std::move(parsed));
    } else if (xml) {
      auto parsed = XmlText::Parse(request.contents(i), placeholders);
      if (!parsed.ok()) {
        return invalid(absl::StrCat("contents[", i, "]: ", parsed.status().message()));
      }
      document = std::make_unique<XmlText>(*std::move(parsed));
    } else {
      document = std::make_unique<PlaceholderText>(request.contents(i));
    }
    entries.first_run.push_back(runs.size());
    for (const std::string& text : document->texts()) *runs.Add() = text;
    entries.word_links = entries.word_links || document->needs_word_links();
    entries.documents.push_back(std::move(document));
  }
  if (entries.word_links) {
    request.mutable_alignment()->set_layer(kMarkupAlignment.layer);
    request.mutable_alignment()->set_head(kMarkupAlignment.head);
  }
  entries.first_run.push_back(runs.size());
  // A request with no text at all still goes through (its one blank entry comes back as is).
  if (runs.empty()) runs.Add();
  *request.mutable_contents() = std::move(runs);
  request.clear_mime_type();
  return grpc::Status::OK;
}

// The translations of an expanded request's runs, rebuilt into one translation per entry.
void fold_runs(const RunEntries& runs, xlate::v1::TranslateResponse& response) {
  google::protobuf::RepeatedPtrField<xlate::v1::Translation> entries;
  for (size_t i = 0; i < runs.documents.size(); ++i) {
    const TextRuns& document = *runs.documents[i];
    std::vector<std::string> translations;
    std::vector<WordLinks> links;
    for (int run = runs.first_run[i]; run < runs.first_run[i + 1]; ++run) {
      const xlate::v1::Translation& translation = response.translations(run);
      translations.push_back(translation.translated_text());
      if (!runs.word_links) continue;
      std::vector<AlignedSentence> sentences;
      for (const xlate::v1::SentenceAlignment& alignment : translation.alignments()) {
        AlignedSentence& sentence = sentences.emplace_back();
        sentence.source = alignment.source_text();
        sentence.target = alignment.target_text();
        // The source's tokens end with the end token, which the weights' rows end with too.
        sentence.source_pieces.assign(alignment.source_tokens().begin(),
                                      alignment.source_tokens().end());
        if (!sentence.source_pieces.empty()) sentence.source_pieces.pop_back();
        sentence.target_pieces.assign(alignment.target_tokens().begin(),
                                      alignment.target_tokens().end());
        for (const xlate::v1::TokenAlignment& row : alignment.target()) {
          sentence.weights.insert(sentence.weights.end(), row.source_weights().begin(),
                                  row.source_weights().end());
        }
        // The run's glossary terms (each sentence links those it holds).
        for (const xlate::v1::GlossaryTerm& term : translation.glossary_terms()) {
          if (term.applied()) sentence.terms.emplace_back(term.source(), term.target());
        }
      }
      links.push_back(link_text_words(document.texts()[run - runs.first_run[i]],
                                      translations.back(), sentences));
    }
    xlate::v1::Translation* entry = entries.Add();
    entry->set_translated_text(document.Rebuild(translations, links));
    // The glossary terms of the entry's runs, in order.
    for (int run = runs.first_run[i]; run < runs.first_run[i + 1]; ++run) {
      for (const xlate::v1::GlossaryTerm& term : response.translations(run).glossary_terms()) {
        *entry->add_glossary_terms() = term;
      }
    }
  }
  *response.mutable_translations() = std::move(entries);
}

// The client whose queue share a call's sentences count against: its peer, or for a call the
// HTTP gateway made in-process (peer "inproc"), the HTTP client the gateway names.
std::string client_of(const grpc::CallbackServerContext& context) {
  std::string peer = context.peer();
  if (!absl::StartsWith(peer, "inproc")) return peer;
  const auto& metadata = context.client_metadata();
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
  // A text/html or keep_placeholders request's documents (unset otherwise).
  std::optional<RunEntries>& runs() { return runs_; }
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
    if (job) model_->scheduler().Cancel(job, why);
  }
  void OnDone() override {
    if (count_when_done_) {
      // The client's deadline passed (by its clock) or it cancelled: what it saw.
      const grpc::StatusCode code =
          !context_->IsCancelled() ? outcome_
          : context_->deadline() <= std::chrono::system_clock::now() ? grpc::DEADLINE_EXCEEDED
                                                                     : grpc::CANCELLED;
      service_->metrics_->on_request_done(model_ ? model_->name() : std::string(), code,
                                          seconds_);
    }
    Release();
  }
  // Whether the request arrived as no bytes at all (see End).
  void set_read_empty(bool empty) { read_empty_ = empty; }
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
  // What End() sent, and when, when OnDone counts it.
  bool count_when_done_ = false;
  grpc::StatusCode outcome_ = grpc::OK;
  absl::Duration seconds_;

 private:
  std::atomic<int> owners_{2};
  const absl::Time deadline_;
  const absl::Time start_;
  bool entered_ = false;
  absl::Mutex mutex_;
  std::shared_ptr<TranslationJob> job_ ABSL_GUARDED_BY(mutex_);
  absl::Status cancelled_ ABSL_GUARDED_BY(mutex_);  // why, once gRPC has cancelled the call
  xlate::v1::TranslateRequest request_;
  std::optional<xlate::v1::DetectedLanguage> detected_;
  std::optional<RunEntries> runs_;
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
    grpc::Status answered = Respond(model(), request(), texts(), aligned_sources(), n_best,
                                    std::move(results), terms(), response);
    if (detected()) *response.mutable_detected_source_language() = *detected();
    if (answered.ok() && runs()) fold_runs(*runs(), response);
    if (answered.ok()) answered = serialize_reply(response, *response_);
    EndWith(answered);
  }
  TranslationJob::ProgressCallback progress_callback() { return nullptr; }

 private:
  grpc::ByteBuffer* const response_;
};

// TranslateStream: partial translations while the job runs, then the response (or a status).
// One write at a time: what comes meanwhile waits, an entry's newer partial replacing its
// older one (so a slow reader holds at most one partial per entry), and the end waits for the
// write in flight.
class TranslationService::StreamCall : public Call<grpc::ServerWriteReactor<grpc::ByteBuffer>> {
 public:
  using Call::Call;
  void set_texts(SegmentedTexts texts) {
    settled_.assign(texts.sentences().size(), std::string());
    sentence_done_.assign(texts.sentences().size(), false);
    shown_.assign(texts.text_count(), Shown());
    Call::set_texts(std::move(texts));
  }
  void EndWith(const grpc::Status& status) { EndAfterWrites(std::nullopt, status); }
  void Answer(absl::Status status, int n_best, std::vector<std::vector<Hypothesis>> results) {
    if (!status.ok()) return EndWith(to_grpc(status));
    xlate::v1::TranslateStreamResponse last;
    grpc::Status answered = Respond(model(), request(), texts(), aligned_sources(), n_best,
                                    std::move(results), terms(), *last.mutable_response());
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

  void OnWriteDone(bool ok) override {
    bool write = false;
    {
      absl::MutexLock lock(&mutex_);
      writing_ = false;
      if (!ok) {  // the stream is broken: the end alone is left to do
        waiting_.clear();
        order_.clear();
      }
      write = NextWriteLocked();
      if (!write && !(ending_ && !ended_)) return;
      if (!write) ended_ = true;
    }
    if (write) return StartWrite(&writing_bytes_);
    EndNow();
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
    bool write = false;
    {
      absl::MutexLock lock(&mutex_);
      if (ending_) return;
      auto [waiting, inserted] = waiting_.try_emplace(entry, std::move(bytes));
      if (inserted) {
        order_.push_back(entry);
      } else {
        waiting->second = std::move(bytes);
      }
      write = NextWriteLocked();
    }
    if (write) StartWrite(&writing_bytes_);
  }

  // Takes the next waiting partial into writing_bytes_ when no write is in flight; returns
  // whether the caller is to start writing it.
  bool NextWriteLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    if (writing_ || order_.empty()) return false;
    const size_t entry = order_.front();
    order_.pop_front();
    writing_bytes_ = std::move(waiting_.at(entry));
    waiting_.erase(entry);
    writing_ = true;
    return true;
  }

  // Ends the stream with `last` (a message) and `status` once the write in flight is done;
  // partials still waiting are dropped (the last message holds the whole answer).
  void EndAfterWrites(std::optional<grpc::ByteBuffer> last, const grpc::Status& status) {
    {
      absl::MutexLock lock(&mutex_);
      if (ending_) return;
      ending_ = true;
      last_ = std::move(last);
      status_ = status;
      waiting_.clear();
      order_.clear();
      if (writing_) return;  // OnWriteDone ends it
      ended_ = true;
    }
    EndNow();
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

  // The completion thread's alone (progress and the answer run there, in order).
  std::vector<std::string> settled_;   // per sentence: its settled text
  std::vector<bool> sentence_done_;
  std::vector<Shown> shown_;           // per entry: what its last partial showed

  absl::Mutex mutex_;
  bool writing_ ABSL_GUARDED_BY(mutex_) = false;
  grpc::ByteBuffer writing_bytes_;  // the write in flight's message; set under mutex_
  std::map<size_t, grpc::ByteBuffer> waiting_ ABSL_GUARDED_BY(mutex_);  // by entry
  std::deque<size_t> order_ ABSL_GUARDED_BY(mutex_);  // entries, in the order they first waited
  bool ending_ ABSL_GUARDED_BY(mutex_) = false;  // EndAfterWrites was called
  bool ended_ ABSL_GUARDED_BY(mutex_) = false;   // EndNow was (or is about to be) called
  // Set once, with ending_, before EndNow reads them.
  std::optional<grpc::ByteBuffer> last_;
  grpc::Status status_;
};

template <typename CallType>
void TranslationService::Start(CallType* call, const grpc::ByteBuffer& request_bytes,
                               const std::string& client) {
  TranslationOptions options;
  std::optional<SegmentedTexts> texts;
  std::vector<std::vector<int32_t>> sources, forced_starts;
  std::vector<SentenceTerms> terms;
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
    status = parse_request(request_bytes, limits_.max_entries_per_request, call->request());
  }
  // The key first (a caller without one costs no more work), its quota last: a request refused
  // for what it holds uses none of it.
  if (status.ok()) status = verify_caller(keys_, *call->context());
  const int64_t characters = status.ok() ? characters_of(call->request().contents()) : 0;
  if (status.ok() && (absl::EqualsIgnoreCase(call->request().mime_type(), "text/html") ||
                      absl::EqualsIgnoreCase(call->request().mime_type(), "text/xml") ||
                      call->request().options().keep_placeholders())) {
    status = expand_runs(call->request(), std::is_same_v<CallType, StreamCall>,
                         call->runs().emplace());
  }
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
    status = Check(call->model(), call->request(), options, texts, sources, forced_starts);
  }
  if (status.ok()) {
    status = CheckGlossary(call->model(), call->request(), options, *texts, sources,
                           forced_starts, terms);
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
    status = admit_caller(keys_, *call->context(), characters, &key_name);
    if (!key_name.empty()) sharing_client = "key:" + key_name;
  }
  if (!status.ok()) return call->EndWith(status);
  call->set_texts(*std::move(texts));
  if (options.alignment.has_value()) call->set_aligned_sources(sources);
  std::vector<Constraints> constraints;
  for (const SentenceTerms& sentence : terms) constraints.push_back(sentence.constraints);
  call->set_terms(std::move(terms));
  const int n_best = options.n_best;
  if (sources.empty()) return call->Answer(absl::OkStatus(), n_best, {});  // all blank
  auto job = call->model().scheduler().Submit(
      std::move(sources), options, call->deadline(),
      [call, n_best](absl::Status status, std::vector<std::vector<Hypothesis>> results) {
        call->Answer(std::move(status), n_best, std::move(results));
      },
      call->progress_callback(), sharing_client, forced_starts, std::move(constraints));
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
        fill(candidate, *detection->add_languages());
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

std::optional<AlignmentOptions> alignment_options(const xlate::v1::TranslateRequest& request) {
  if (!request.has_alignment()) return std::nullopt;
  AlignmentOptions options;
  if (request.alignment().has_layer()) options.layer = request.alignment().layer();
  if (request.alignment().has_head()) options.head = request.alignment().head();
  return options;
}

grpc::Status check_request_text(const xlate::v1::TranslateRequest& request,
                                const ModelConfig& config, const RequestLimits& limits,
                                TranslationOptions& options,
                                std::optional<SegmentedTexts>& texts) {
  for (const absl::Status& language :
       {check_language("source_language_code", request.source_language_code(),
                       config.source_lang, "from"),
        check_language("target_language_code", request.target_language_code(),
                       config.target_lang, "into")}) {
    if (!language.ok()) return to_grpc(language);
  }
  // MIME types are case-insensitive (RFC 2045): "TEXT/PLAIN" is text/plain.
  if (!request.mime_type().empty() && !absl::EqualsIgnoreCase(request.mime_type(), "text/plain")) {
    return invalid(absl::StrCat("mime_type \"", excerpt(request.mime_type()),
                                "\" is not supported; send \"text/plain\" (or leave it empty) or "
                                "\"text/html\" or \"text/xml\""));
  }
  if (grpc::Status sized = check_contents(request.contents(), limits); !sized.ok()) return sized;
  const xlate::v1::DecodingOptions& given = request.options();
  if (given.has_beam_size()) options.beam_size = given.beam_size();
  if (given.has_length_penalty()) options.length_penalty = given.length_penalty();
  if (given.has_max_extra_length()) options.max_extra_length = given.max_extra_length();
  if (given.has_n_best()) options.n_best = given.n_best();
  if (given.has_repetition_penalty()) options.repetition_penalty = given.repetition_penalty();
  if (given.has_no_repeat_ngram_size()) options.no_repeat_ngram_size = given.no_repeat_ngram_size();
  if (given.has_constrained_beam_size()) {
    options.constrained_beam_size = given.constrained_beam_size();
  }
  if (options.beam_size < 1 || options.beam_size > limits.max_beam_size) {
    return invalid(absl::StrCat("options.beam_size = ", options.beam_size,
                                " is out of range: it must be in [1, ", limits.max_beam_size, "]"));
  }
  if (options.constrained_beam_size > limits.max_beam_size) {
    return invalid(absl::StrCat("options.constrained_beam_size = ", options.constrained_beam_size,
                                " is out of range: it must be 0 (beam_size) or in [n_best, ",
                                limits.max_beam_size, "] (--max_beam_size)"));
  }
  if (auto status = options.Validate("options."); !status.ok()) return to_grpc(status);
  options.alignment = alignment_options(request);
  if (options.alignment.has_value()) {
    auto status = check_alignment_options(*options.alignment, config, "alignment.");
    if (!status.ok()) return to_grpc(status);
  }

  // The sentence rules of the request's source language (a multilingual model's has none of
  // its own), else the model's.
  auto split = SegmentedTexts::Split(
      {request.contents().begin(), request.contents().end()},
      request.source_language_code().empty() ? config.source_lang : request.source_language_code(),
      Segmentation::kSentences);
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

grpc::Status TranslationService::Check(const ServedModel& model,
                                       const xlate::v1::TranslateRequest& request,
                                       TranslationOptions& options,
                                       std::optional<SegmentedTexts>& texts,
                                       std::vector<std::vector<int32_t>>& sources,
                                       std::vector<std::vector<int32_t>>& forced_starts) const {
  const Tokenizer& tokenizer = model.translator().tokenizer();
  // A multilingual model's languages are chosen by its language tokens (target_language.h),
  // not compared with one language of its directory.
  auto languages = language_tokens(tokenizer, request.source_language_code(),
                                   request.target_language_code());
  if (!languages.ok()) return to_grpc(languages.status());
  ModelConfig checked_languages = model.config();
  if (tokenizer.language_style() != LanguageTokenStyle::kNone) {
    checked_languages.target_lang.clear();
    if (tokenizer.language_style() == LanguageTokenStyle::kSourceAndForcedTarget) {
      checked_languages.source_lang.clear();
    }
  }
  grpc::Status status =
      check_request_text(request, checked_languages, limits_, options, texts);
  if (!status.ok()) return status;
  options.forced_start_tokens = languages->forced_target;
  const int token_limit = model.max_input_tokens();
  for (size_t s = 0; s < texts->sentences().size(); ++s) {
    const std::string& sentence = texts->sentences()[s];
    auto ids = tokenizer.encode(sentence);
    if (!ids.ok()) return to_grpc(ids.status());
    ids->insert(ids->begin(), languages->source_prefix.begin(), languages->source_prefix.end());
    if (static_cast<int64_t>(ids->size()) + 1 > token_limit) {
      const size_t entry = texts->text_of(s);
      return invalid(absl::StrCat(
          "contents[", entry, "], sentence ", s - texts->first_sentence(entry) + 1, " (\"",
          excerpt(sentence), "\") has ",
          ids->size() + 1, " tokens; the limit is ", token_limit, " (--max_input_tokens, ",
          "end token included)"));
    }
    sources.push_back(*std::move(ids));
  }
  return CheckTargetPrefixes(model, request, options, *texts, sources, forced_starts);
}

grpc::Status TranslationService::CheckTargetPrefixes(
    const ServedModel& model, const xlate::v1::TranslateRequest& request,
    const TranslationOptions& options, const SegmentedTexts& texts,
    const std::vector<std::vector<int32_t>>& sources,
    std::vector<std::vector<int32_t>>& forced_starts) const {
  if (request.target_prefix_size() == 0) return grpc::Status::OK;
  if (request.target_prefix_size() != request.contents_size()) {
    return invalid(absl::StrCat("target_prefix has ", request.target_prefix_size(),
                                " entries; send none or one per entry of contents (",
                                request.contents_size(), ")"));
  }
  const ModelConfig& config = model.config();
  forced_starts.assign(sources.size(), {});
  for (int entry = 0; entry < request.target_prefix_size(); ++entry) {
    const std::string& prefix = request.target_prefix(entry);
    if (prefix.empty()) continue;
    const int64_t code_points = count_code_points(prefix);
    if (code_points > limits_.max_entry_code_points) {
      return invalid(absl::StrCat("target_prefix[", entry, "] has ", code_points,
                                  " code points; the limit is ", limits_.max_entry_code_points,
                                  " (--max_entry_code_points)"));
    }
    const size_t first = texts.first_sentence(static_cast<size_t>(entry));
    if (first == texts.end_sentence(static_cast<size_t>(entry))) {
      return invalid(absl::StrCat("contents[", entry, "] is blank, so it is not translated: "
                                  "target_prefix[", entry, "] cannot apply (send it empty)"));
    }
    auto ids = model.translator().tokenizer().encode_target(prefix);
    if (!ids.ok()) return to_grpc(ids.status());
    const size_t forced = ids->size() + options.forced_start_tokens.size();
    const int limit = options.max_output_tokens(static_cast<int64_t>(sources[first].size()),
                                                config.max_positions, config.end_forced_at_limit);
    if (static_cast<int64_t>(forced) >= limit) {
      return invalid(absl::StrCat("target_prefix[", entry, "] (\"", excerpt(prefix), "\") is ",
                                  ids->size(), " tokens; its sentence may have at most ", limit,
                                  " output tokens, the end token included (its source tokens + "
                                  "options.max_extra_length)"));
    }
    forced_starts[first] = *std::move(ids);
  }
  return grpc::Status::OK;
}

grpc::Status TranslationService::CheckGlossary(
    const ServedModel& model, const xlate::v1::TranslateRequest& request,
    const TranslationOptions& options, const SegmentedTexts& texts,
    const std::vector<std::vector<int32_t>>& sources,
    const std::vector<std::vector<int32_t>>& forced_starts,
    std::vector<SentenceTerms>& terms) const {
  if (!request.has_glossary_config()) return grpc::Status::OK;
  const xlate::v1::GlossaryConfig& config = request.glossary_config();
  if (config.glossary().empty() && config.entries().empty()) return grpc::Status::OK;
  if (!op_backend(model.translator().model().placement().device).lexical_constraints) {
    return grpc::Status(grpc::UNIMPLEMENTED,
                        absl::StrCat("glossary_config: model \"", model.name(),
                                     "\" runs on a backend whose search has no glossary "
                                     "constraints"));
  }
  // The named glossary as the server holds it (no copy); a merged one with inline entries.
  std::shared_ptr<const Glossary> glossary = std::make_shared<const Glossary>();
  if (!config.glossary().empty()) {
    std::shared_ptr<const Glossary> named =
        glossaries_ ? glossaries_->Find(config.glossary()) : nullptr;
    if (!named) {
      const std::vector<std::string> names =
          glossaries_ ? glossaries_->names() : std::vector<std::string>();
      return grpc::Status(grpc::NOT_FOUND,
                          absl::StrCat("glossary_config.glossary \"", config.glossary(),
                                       "\" is not one of this server's glossaries (",
                                       names.empty() ? "it has none" : absl::StrJoin(names, ", "),
                                       ")"));
    }
    glossary = std::move(named);
  }
  if (!config.entries().empty()) {
    std::vector<GlossaryEntry> entries;
    for (const xlate::v1::GlossaryEntry& entry : config.entries()) {
      entries.push_back({entry.source(), entry.target()});
    }
    auto inline_glossary = Glossary::FromEntries(entries, "glossary_config.entries");
    if (!inline_glossary.ok()) return to_grpc(inline_glossary.status());
    glossary = std::make_shared<const Glossary>(glossary->With(*inline_glossary));
  }
  const ModelConfig& model_config = model.config();
  std::vector<int> limits, forced;
  for (size_t s = 0; s < sources.size(); ++s) {
    limits.push_back(options.max_output_tokens(static_cast<int64_t>(sources[s].size()),
                                               model_config.max_positions,
                                               model_config.end_forced_at_limit));
    forced.push_back(static_cast<int>(options.forced_start_tokens.size() +
                                      (forced_starts.empty() ? 0 : forced_starts[s].size())));
  }
  TermTokenRules rules;
  rules.unk_id = model_config.unk_id;
  rules.no_repeat_ngram_size = options.no_repeat_ngram_size;
  auto found = find_terms(*glossary, config.ignore_case(), texts.sentences(),
                          model.translator().tokenizer(), limits, forced, rules);
  if (!found.ok()) return to_grpc(found.status());
  terms = *std::move(found);
  return grpc::Status::OK;
}

namespace {

// The alignment of a sentence (its source as cut and its token ids, its best hypothesis) in the
// reply's words.
grpc::Status add_alignment(const Translator& translator, const AlignmentOptions& options,
                           const std::string& source, const std::vector<int32_t>& source_ids,
                           const std::string& target, const Hypothesis& best,
                           xlate::v1::SentenceAlignment& alignment) {
  const Tokenizer& tokenizer = translator.tokenizer();
  const ModelConfig& config = translator.model().config();
  alignment.set_source_text(source);
  alignment.set_target_text(target);
  for (int32_t id : source_ids) alignment.add_source_tokens(tokenizer.source_piece_of(id));
  alignment.add_source_tokens(tokenizer.source_piece_of(config.eos_id));
  for (int32_t id : best.tokens) alignment.add_target_tokens(tokenizer.piece_of(id));
  const size_t width = source_ids.size() + 1;
  if (best.alignment.size() != best.tokens.size() * width) {
    return grpc::Status(grpc::INTERNAL, "the alignment does not match its sentence");
  }
  for (size_t t = 0; t < best.tokens.size(); ++t) {
    auto* weights = alignment.add_target()->mutable_source_weights();
    weights->Add(best.alignment.begin() + t * width, best.alignment.begin() + (t + 1) * width);
  }
  alignment.set_layer(options.resolved_layer(config.decoder_layers));
  alignment.set_head(options.head);
  return grpc::Status::OK;
}

}  // namespace

grpc::Status TranslationService::Respond(const ServedModel& model,
                                         const xlate::v1::TranslateRequest& request,
                                         const SegmentedTexts& texts,
                                         const std::vector<std::vector<int32_t>>& aligned_sources,
                                         int n_best,
                                         std::vector<std::vector<Hypothesis>> results,
                                         const std::vector<SentenceTerms>& terms,
                                         xlate::v1::TranslateResponse& response) {
  const bool with_scores = request.options().return_scores();
  const std::optional<AlignmentOptions> alignment = alignment_options(request);
  const bool with_hypotheses = n_best > 1 || with_scores;
  // decoded[s][k]: hypothesis k of sentence s.
  std::vector<std::vector<std::string>> decoded(results.size());
  for (size_t s = 0; s < results.size(); ++s) {
    for (const Hypothesis& hypothesis : results[s]) {
      auto text = model.translator().tokenizer().decode(hypothesis.tokens);
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
    // sum of theirs. A search that finished fewer than n_best hypotheses of a sentence gives
    // its entry as many (never copies of one to make up the count).
    size_t hypotheses = static_cast<size_t>(with_hypotheses ? n_best : 1);
    for (size_t s = first; s < end; ++s) hypotheses = std::min(hypotheses, decoded[s].size());
    for (size_t k = 0; k < hypotheses; ++k) {
      std::vector<std::string> sentences;
      float score = 0;
      for (size_t s = first; s < end; ++s) {
        sentences.push_back(decoded[s][k]);
        score += results[s][k].score;
      }
      std::string text = texts.Join(entry, sentences);
      if (k == 0) translation->set_translated_text(text);
      if (!with_hypotheses) break;
      xlate::v1::Hypothesis* hypothesis = translation->add_hypotheses();
      hypothesis->set_text(std::move(text));
      if (with_scores) hypothesis->set_score(score);
    }
    for (size_t s = first; !terms.empty() && s < end; ++s) {
      for (const TermUse& use : terms[s].uses) {
        xlate::v1::GlossaryTerm* term = translation->add_glossary_terms();
        term->set_source(use.source);
        term->set_target(use.target);
        term->set_applied(use.constrained &&
                          decoded[s].front().find(use.target) != std::string::npos);
        if (!use.note.empty()) {
          term->set_note(use.note);
        } else if (!term->applied()) {
          term->set_note("the translation's pieces spell the target otherwise");
        }
      }
    }
    for (size_t s = first; alignment.has_value() && s < end; ++s) {
      grpc::Status aligned = add_alignment(model.translator(), *alignment, texts.sentences()[s],
                                           aligned_sources[s], decoded[s].front(),
                                           results[s].front(), *translation->add_alignments());
      if (!aligned.ok()) return aligned;
    }
  }
  response.set_model(model.name());
  return grpc::Status::OK;
}

}  // namespace xlate::server
