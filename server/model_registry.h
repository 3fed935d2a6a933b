// The models a server serves, by name, and their reloads without downtime.
//
// A call takes a reference to the model it is routed to (Route) and keeps it until it ends, so a
// reload that swaps a new model in under the same name never pulls the old one from under a
// call: the old model goes on translating what it accepted, and is destroyed (its scheduler
// drained, its memory freed) on the registry's own thread once the last call that holds it is
// gone. Until then both are in memory.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "server/served_model.h"
#include "server/task_threads.h"

namespace xlate::server {

class ModelRegistry {
 public:
  // Loads the model served as `name` from `dir` (ServedModel::Load with the server's settings).
  using Loader = std::function<absl::StatusOr<std::unique_ptr<ServedModel>>(
      const std::string& name, const std::string& dir)>;
  // Told of each model that starts serving (at Add and after a reload) and of each reload's
  // outcome; called on the thread that loaded it, with no lock held.
  class Observer {
   public:
    virtual ~Observer() = default;
    virtual void on_serving(const ServedModel& model) = 0;
    virtual void on_reload(const std::string& name, const absl::Status& outcome) = 0;
  };

  // `observer` may be null; else it must outlive the registry.
  ModelRegistry(Loader loader, Observer* observer);
  // Waits until every model is destroyed: the calls holding one must end (the server has
  // stopped) before.
  ~ModelRegistry();
  ModelRegistry(const ModelRegistry&) = delete;
  ModelRegistry& operator=(const ModelRegistry&) = delete;

  // Loads a model and serves it as `name`, after those added before (the first is the default
  // for requests that name none and give no languages). Errors: a name that is empty or served
  // already (InvalidArgument), the loader's.
  absl::Status Add(const std::string& name, const std::string& dir);

  // The model for a request: the one named `model`, or, when `model` is empty, the only one, or
  // else the first whose languages match the request's codes (either may be empty: any). The
  // caller still checks the request's languages against the model (check_request_text), which
  // words the error of a single model's server. Errors: NotFound for a name not served (the
  // message lists the names), InvalidArgument for codes that are not BCP-47 or that no served
  // model translates (the message lists the models' languages).
  absl::StatusOr<std::shared_ptr<const ServedModel>> Route(const std::string& model,
                                                          const std::string& source_language,
                                                          const std::string& target_language) const;

  // Loads `dir` (empty: the model's current directory) and serves it as `name` from the next
  // Route on; calls routed before keep the old model. Returns the new model. Errors: NotFound
  // (a name not served; empty `name` while several are served), Aborted (a reload of `name` is
  // under way), FailedPrecondition (the new model does not load or its languages differ from the
  // served one's; the old one keeps serving).
  absl::StatusOr<std::shared_ptr<const ServedModel>> Reload(const std::string& name,
                                                           const std::string& dir);
  using ReloadReport = std::function<void(const std::string& name, const absl::Status& outcome)>;
  // Reloads every model from its current directory on the registry's thread, one after the
  // other (SIGHUP); `report` is called with each outcome there. Each reload is a task of its
  // own, so a model retired by one is destroyed before the next loads (the destruction is queued
  // on the same thread): at most one model beside the served ones is in memory, not one per
  // served model.
  void ReloadAllInBackground(ReloadReport report);

  // The names served, in the order they were added.
  std::vector<std::string> names() const;
  // Models loaded and not yet destroyed: the served ones, and retired ones that calls still
  // hold or whose destruction waits on the registry's thread.
  int64_t models_in_memory() const;

 private:
  struct Slot {
    std::string name;
    std::shared_ptr<const ServedModel> model;
    bool reloading = false;
  };
  // Shares `model` so that its last holder hands it to the registry's thread for destruction.
  std::shared_ptr<const ServedModel> Share(std::unique_ptr<ServedModel> model);
  // 'model "<name>" is not served here; this server serves <the list>'.
  std::string NotServedLocked(const std::string& name) const ABSL_SHARED_LOCKS_REQUIRED(mutex_);
  // loader_'s model, or its exception as a status (RESOURCE_EXHAUSTED for std::bad_alloc).
  absl::StatusOr<std::unique_ptr<ServedModel>> Load(const std::string& name,
                                                    const std::string& dir);
  // Each model's name and languages: '"en-de" (en to de), "de-en" (de to en)'.
  std::string ServedListLocked() const ABSL_SHARED_LOCKS_REQUIRED(mutex_);
  // Reloads names[next] on the registry's thread, then posts the reload of names[next + 1].
  void ReloadInBackground(std::vector<std::string> names, size_t next, ReloadReport report);

  const Loader loader_;
  Observer* const observer_;

  mutable absl::Mutex mutex_;
  std::vector<Slot> slots_ ABSL_GUARDED_BY(mutex_);

  mutable absl::Mutex alive_mutex_;
  int64_t alive_ ABSL_GUARDED_BY(alive_mutex_) = 0;  // models shared and not yet destroyed
  bool stopping_ ABSL_GUARDED_BY(alive_mutex_) = false;
  // Destroyed first, once no model is left: it runs what was posted to it, then joins.
  TaskThreads background_;
};

}  // namespace xlate::server
