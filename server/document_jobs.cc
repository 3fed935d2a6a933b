#include "server/document_jobs.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "engine/safetensors.h"
#include "nlohmann/json.hpp"
#include "server/api_keys.h"
#include "server/random_id.h"
#include "server/translation_service.h"

namespace xlate::server {
namespace {

constexpr char kQueued[] = "QUEUED";
constexpr char kRunning[] = "RUNNING";
constexpr char kDone[] = "DONE";
constexpr char kFailed[] = "FAILED";
constexpr char kCancelled[] = "CANCELLED";

bool finished(const std::string& state) {
  return state == kDone || state == kFailed || state == kCancelled;
}

absl::StatusOr<std::string> read_whole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

}  // namespace

DocumentJobs::DocumentJobs(std::shared_ptr<grpc::Channel> channel, std::string dir,
                           absl::Duration keep_for)
    : stub_(xlate::v1::Translator::NewStub(std::move(channel))),
      dir_(std::move(dir)),
      keep_for_(keep_for) {}

absl::StatusOr<std::unique_ptr<DocumentJobs>> DocumentJobs::Start(
    std::shared_ptr<grpc::Channel> channel, std::string dir, absl::Duration keep_for) {
  if (!dir.empty()) {
    std::error_code error;
    std::filesystem::create_directories(dir, error);
    if (error || !std::filesystem::is_directory(dir)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--jobs_dir ", dir, " is not a directory that can be made: ", error.message()));
    }
  }
  std::unique_ptr<DocumentJobs> jobs(new DocumentJobs(std::move(channel), std::move(dir), keep_for));
  jobs->Recover();
  jobs->worker_ = std::thread([jobs = jobs.get()] { jobs->Run(); });
  return jobs;
}

DocumentJobs::~DocumentJobs() { Stop(); }

void DocumentJobs::Stop() {
  {
    absl::MutexLock lock(&mutex_);
    stopping_ = true;
    if (running_ != nullptr) running_->TryCancel();
  }
  if (worker_.joinable()) worker_.join();
}

std::string DocumentJobs::PathOf(const std::string& id, const char* file) const {
  return absl::StrCat(dir_, "/", id, "/", file);
}

absl::Status DocumentJobs::SaveLocked(const Job& job) {
  if (dir_.empty()) return absl::OkStatus();
  const Status& status = job.status;
  const nlohmann::json saved = {{"state", status.state},
                                {"sentences_done", status.sentences_done},
                                {"sentences_total", status.sentences_total},
                                {"error", status.error},
                                {"file_name", status.file_name},
                                {"mime_type", status.mime_type},
                                {"created", absl::ToUnixSeconds(status.created)},
                                {"owner", job.owner},
                                {"client", job.client}};
  return write_file_atomically(PathOf(status.id, "job.json"), saved.dump());
}

void DocumentJobs::Recover() {
  if (dir_.empty()) return;
  absl::MutexLock lock(&mutex_);
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, error)) {
    const std::string id = entry.path().filename().string();
    if (!entry.is_directory() || !is_random_id(id)) continue;
    auto text = read_whole(PathOf(id, "job.json"));
    const nlohmann::json saved =
        text.ok() ? nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false)
                  : nlohmann::json();
    const absl::Time created =
        absl::FromUnixSeconds(saved.is_object() ? saved.value("created", int64_t{0}) : 0);
    if (!saved.is_object() || created + keep_for_ <= absl::Now()) {
      // A job past its time, or one whose creation did not finish (no job.json yet).
      std::filesystem::remove_all(entry.path(), error);
      continue;
    }
    Job job;
    job.status.id = id;
    job.status.state = saved.value("state", std::string(kQueued));
    job.status.sentences_total = saved.value("sentences_total", 0);
    job.status.sentences_done = saved.value("sentences_done", 0);
    job.status.error = saved.value("error", std::string());
    job.status.file_name = saved.value("file_name", std::string());
    job.status.mime_type = saved.value("mime_type", std::string());
    job.status.created = created;
    job.owner = saved.value("owner", std::string());
    job.client = saved.value("client", std::string());
    if (!finished(job.status.state)) {
      // Taken up again from the start: now, or once its owner presents its key again.
      job.status.state = kQueued;
      job.status.sentences_done = 0;
      job.waiting_for_key = !job.owner.empty();
      if (!job.waiting_for_key) queue_.push_back(id);
    }
    jobs_[id] = std::move(job);
  }
}

absl::StatusOr<DocumentJobs::Status> DocumentJobs::Create(
    xlate::v1::TranslateDocumentRequest request, const Caller& caller) {
  if (request.content().empty()) {
    return absl::InvalidArgumentError("content is empty: send the file's bytes (in base64)");
  }
  Job job;
  job.status.id = random_id();
  job.status.state = kQueued;
  job.status.file_name = request.file_name();
  job.status.mime_type = request.mime_type();
  job.status.created = absl::Now();
  job.owner = caller.key.empty() ? std::string() : ApiKeys::Name(caller.key);
  job.key = caller.key;
  job.client = caller.client;
  const std::string id = job.status.id;
  absl::MutexLock lock(&mutex_);
  if (!dir_.empty()) {
    std::error_code error;
    std::filesystem::create_directories(absl::StrCat(dir_, "/", id), error);
    absl::Status saved =
        error ? absl::InternalError(absl::StrCat("cannot make ", dir_, "/", id, ": ",
                                                 error.message()))
              : write_file_atomically(PathOf(id, "request.pb"), request.SerializeAsString());
    if (saved.ok()) saved = SaveLocked(job);
    if (!saved.ok()) {
      std::filesystem::remove_all(absl::StrCat(dir_, "/", id), error);
      return saved;
    }
  } else {
    requests_[id] = std::move(request);
  }
  Status status = job.status;
  jobs_[id] = std::move(job);
  queue_.push_back(id);
  return status;
}

absl::StatusOr<DocumentJobs::Job*> DocumentJobs::Find(const std::string& id,
                                                      const Caller& caller) {
  const auto found = jobs_.find(id);
  const std::string owner = caller.key.empty() ? std::string() : ApiKeys::Name(caller.key);
  if (found == jobs_.end() || found->second.owner != owner) {
    return absl::NotFoundError(absl::StrCat("no document job ", id.substr(0, 32),
                                            " (jobs are kept for a while only)"));
  }
  Job& job = found->second;
  if (finished(job.status.state) && job.status.created + keep_for_ <= absl::Now()) {
    if (!dir_.empty()) {
      std::error_code error;
      std::filesystem::remove_all(absl::StrCat(dir_, "/", id), error);
    }
    requests_.erase(id);
    results_.erase(id);
    jobs_.erase(found);
    return absl::NotFoundError(absl::StrCat("no document job ", id,
                                            " (jobs are kept for a while only)"));
  }
  return &job;
}

absl::StatusOr<DocumentJobs::Status> DocumentJobs::Get(const std::string& id,
                                                       const Caller& caller) {
  absl::MutexLock lock(&mutex_);
  auto job = Find(id, caller);
  if (!job.ok()) return job.status();
  if ((*job)->waiting_for_key) {
    // Taken up after a restart: its owner is back, with the key to run it under.
    (*job)->waiting_for_key = false;
    (*job)->key = caller.key;
    queue_.push_back(id);
  }
  return (*job)->status;
}

absl::StatusOr<DocumentJobs::Result> DocumentJobs::Content(const std::string& id,
                                                           const Caller& caller) {
  absl::MutexLock lock(&mutex_);
  auto job = Find(id, caller);
  if (!job.ok()) return job.status();
  const Status& status = (*job)->status;
  if (status.state != kDone) {
    return absl::FailedPreconditionError(absl::StrCat(
        "document job ", id, " is ", status.state,
        status.state == kFailed ? ": " + status.error : std::string(),
        "; its file is there once it is DONE"));
  }
  if (dir_.empty()) return results_.at(id);
  auto content = read_whole(PathOf(id, "result"));
  if (!content.ok()) return absl::InternalError(content.status().message());
  return Result{status.file_name, status.mime_type, *std::move(content)};
}

absl::StatusOr<DocumentJobs::Status> DocumentJobs::Cancel(const std::string& id,
                                                          const Caller& caller) {
  absl::MutexLock lock(&mutex_);
  auto job = Find(id, caller);
  if (!job.ok()) return job.status();
  Status& status = (*job)->status;
  if (finished(status.state)) return status;
  (*job)->cancel_requested = true;
  if (status.state == kRunning) {
    if (running_ != nullptr) running_->TryCancel();  // RunJob marks it CANCELLED
  } else {
    status.state = kCancelled;
    if (absl::Status saved = SaveLocked(**job); !saved.ok()) return saved;
  }
  return status;
}

void DocumentJobs::Run() {
  while (true) {
    std::string id;
    {
      absl::MutexLock lock(&mutex_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
        return stopping_ || !queue_.empty();
      };
      mutex_.Await(absl::Condition(&ready));
      if (stopping_) return;
      id = queue_.front();
      queue_.pop_front();
    }
    RunJob(id);
  }
}

void DocumentJobs::RunJob(const std::string& id) {
  xlate::v1::TranslateDocumentRequest request;
  grpc::ClientContext context;
  {
    absl::MutexLock lock(&mutex_);
    const auto found = jobs_.find(id);
    if (found == jobs_.end()) return;
    Job& job = found->second;
    if (job.cancel_requested || job.status.state != kQueued) return;
    bool read = true;
    if (dir_.empty()) {
      request = requests_.at(id);
    } else {
      auto bytes = read_whole(PathOf(id, "request.pb"));
      read = bytes.ok() && request.ParseFromString(*bytes);
    }
    if (!read) {
      job.status.state = kFailed;
      job.status.error = "the job's request could not be read back from --jobs_dir";
      (void)SaveLocked(job);
      return;
    }
    // The job's call is its owner's: its key for admission and quota, its client's queue share.
    if (!job.key.empty()) context.AddMetadata("x-api-key", job.key);
    context.AddMetadata(kHttpClientMetadata, job.client.empty() ? "document-job" : job.client);
    context.AddMetadata(kDocumentJobMetadata, id);
    job.status.state = kRunning;
    (void)SaveLocked(job);
    running_ = &context;
  }
  auto reader = stub_->TranslateDocumentStream(&context, request);
  xlate::v1::TranslateDocumentStreamResponse message;
  std::optional<xlate::v1::TranslateDocumentResponse> response;
  while (reader->Read(&message)) {
    if (message.has_response()) {
      response = std::move(*message.mutable_response());
      continue;
    }
    absl::MutexLock lock(&mutex_);
    Status& status = jobs_.at(id).status;
    const bool first = status.sentences_total == 0;
    status.sentences_done = message.progress().sentences_done();
    status.sentences_total = message.progress().sentences_total();
    if (first) (void)SaveLocked(jobs_.at(id));  // the total, for a restart's status
  }
  const grpc::Status ended = reader->Finish();
  absl::MutexLock lock(&mutex_);
  running_ = nullptr;
  Job& job = jobs_.at(id);
  Status& status = job.status;
  if (job.cancel_requested) {
    status.state = kCancelled;
  } else if ((stopping_ && !ended.ok()) || ended.error_code() == grpc::UNAVAILABLE) {
    // Stopped by the server's shutdown (or its drain): taken up again after the restart.
    status.state = kQueued;
    status.sentences_done = 0;
  } else if (!ended.ok() || !response.has_value()) {
    status.state = kFailed;
    status.error = ended.ok() ? "the translation ended without the file" : ended.error_message();
  } else {
    absl::Status kept = absl::OkStatus();
    Result result{status.file_name, response->mime_type(), std::move(*response->mutable_content())};
    status.mime_type = result.mime_type;
    if (dir_.empty()) {
      results_[id] = std::move(result);
      requests_.erase(id);
    } else {
      kept = write_file_atomically(PathOf(id, "result"), result.content);
    }
    status.state = kept.ok() ? kDone : kFailed;
    status.error = kept.ok() ? std::string() : std::string(kept.message());
    if (kept.ok()) status.sentences_done = status.sentences_total;
  }
  (void)SaveLocked(job);
}

}  // namespace xlate::server
