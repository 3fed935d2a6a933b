// Asynchronous file translation (POST /v1/documents): a job takes a TranslateDocumentRequest,
// answers at once with its id, and translates the file in the background through the server's
// own TranslateDocumentStream (in-process, so it has the limits, queue share, quotas and
// metrics of any call), counting the sentences done. Its owner polls it, fetches the result
// once it is done, or cancels it.
//
// With a jobs directory (--jobs_dir) every job is kept on disk as it changes: its
// request, its state and its result, each written whole (a file renamed into place). A server
// that restarts, or stopped while a job ran, takes its unfinished jobs up again from the start;
// finished ones stay downloadable. Without one, jobs live as long as the process. Jobs are
// deleted `keep_for` after they were created.
//
// Ownership: a job is its creator's. With API keys, only the same key sees, fetches or cancels
// it (another gets NOT_FOUND, as for an id that does not exist), and the job's translation is
// charged to that key when it runs. The key itself is never written to disk (its name is): a job
// of a keyed server taken up after a restart waits until its owner next asks about it, and runs
// with the key presented then.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/channel.h"
#include "grpcpp/client_context.h"
#include "proto/translator.grpc.pb.h"

namespace xlate::server {

class DocumentJobs {
 public:
  // Who asks: the API key presented (empty: none) and the HTTP client's address (its share of
  // the queue).
  struct Caller {
    std::string key;
    std::string client;
  };
  struct Status {
    std::string id;
    std::string state;  // QUEUED, RUNNING, DONE, FAILED, CANCELLED
    int32_t sentences_done = 0, sentences_total = 0;  // total 0: not known yet
    std::string error;  // why, when FAILED
    std::string file_name, mime_type;
    absl::Time created;
  };
  struct Result {
    std::string file_name, mime_type, content;
  };

  // Jobs run one at a time on a thread of their own, through `channel` (the server's
  // in-process channel). `dir` (created if missing; empty: none) keeps them across restarts;
  // its unfinished jobs are taken up again.
  static absl::StatusOr<std::unique_ptr<DocumentJobs>> Start(std::shared_ptr<grpc::Channel> channel,
                                                             std::string dir,
                                                             absl::Duration keep_for);
  // Stops the running job (it stays unfinished on disk, to be taken up again) and the thread;
  // jobs created afterwards wait for the next start. Called before the server drains, so that no
  // job holds the drain up.
  void Stop();
  ~DocumentJobs();

  // A new job: QUEUED. INVALID_ARGUMENT for a request without content; INTERNAL when the
  // directory cannot be written (the job is not created).
  absl::StatusOr<Status> Create(xlate::v1::TranslateDocumentRequest request, const Caller& caller);
  // The job's status; NOT_FOUND for an id that is not the caller's.
  absl::StatusOr<Status> Get(const std::string& id, const Caller& caller);
  // The translated file; FAILED_PRECONDITION while the job is not DONE.
  absl::StatusOr<Result> Content(const std::string& id, const Caller& caller);
  // Cancels a job that has not finished (a running one's call is cancelled); its status.
  absl::StatusOr<Status> Cancel(const std::string& id, const Caller& caller);

 private:
  struct Job {
    Status status;
    std::string owner;  // the key's name (ApiKeys::Name), empty without a key
    std::string key;    // in memory only; empty after a restart until the owner asks again
    std::string client;
    bool waiting_for_key = false;
    bool cancel_requested = false;
  };
  DocumentJobs(std::shared_ptr<grpc::Channel> channel, std::string dir, absl::Duration keep_for);
  void Run();
  void RunJob(const std::string& id) ABSL_LOCKS_EXCLUDED(mutex_);
  // The caller's job, expired ones dropped; NOT_FOUND otherwise.
  absl::StatusOr<Job*> Find(const std::string& id, const Caller& caller)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  absl::Status SaveLocked(const Job& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  void Recover();
  std::string PathOf(const std::string& id, const char* file) const;

  const std::unique_ptr<xlate::v1::Translator::Stub> stub_;
  const std::string dir_;
  const absl::Duration keep_for_;
  absl::Mutex mutex_;
  std::map<std::string, Job> jobs_ ABSL_GUARDED_BY(mutex_);
  std::deque<std::string> queue_ ABSL_GUARDED_BY(mutex_);
  // In memory without a directory: requests and results by id.
  std::map<std::string, xlate::v1::TranslateDocumentRequest> requests_ ABSL_GUARDED_BY(mutex_);
  std::map<std::string, Result> results_ ABSL_GUARDED_BY(mutex_);
  grpc::ClientContext* running_ ABSL_GUARDED_BY(mutex_) = nullptr;  // the running job's call
  bool stopping_ ABSL_GUARDED_BY(mutex_) = false;
  std::thread worker_;
};

}  // namespace xlate::server
