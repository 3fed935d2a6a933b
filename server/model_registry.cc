#include "server/model_registry.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/free_memory.h"
#include "server/language_code.h"
#include "text/utf8.h"

namespace xlate::server {
namespace {

// The slot of the model served as `name` in `slots` (const or not), or null.
template <typename Slots>
auto* find_slot(Slots& slots, const std::string& name) {
  decltype(&slots.front()) found = nullptr;
  for (auto& slot : slots) {
    if (slot.name == name) found = &slot;
  }
  return found;
}

}  // namespace

ModelRegistry::ModelRegistry(Loader loader, Observer* observer)
    : loader_(std::move(loader)), observer_(observer) {}

ModelRegistry::~ModelRegistry() {
  std::vector<Slot> slots;
  {
    absl::MutexLock lock(&mutex_);
    slots.swap(slots_);
  }
  slots.clear();  // the models no call holds go to the registry's thread now
  absl::MutexLock lock(&alive_mutex_);
  stopping_ = true;
  auto none_alive = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(alive_mutex_) { return alive_ == 0; };
  alive_mutex_.Await(absl::Condition(&none_alive));
}

std::shared_ptr<const ServedModel> ModelRegistry::Share(std::unique_ptr<ServedModel> model) {
  {
    absl::MutexLock lock(&alive_mutex_);
    ++alive_;
  }
  // The last holder may be a call ending on the model's own completion thread, which the
  // model's destruction joins: so the registry's thread destroys it.
  return std::shared_ptr<const ServedModel>(model.release(), [this](const ServedModel* retired) {
    background_.Post([this, retired] {
      delete retired;
      // Gives the freed weights and caches back to the system (the allocator keeps freed heap
      // memory for reuse): without it, the resident size stays at its peak of two models after
      // every reload.
      release_free_memory();
      absl::MutexLock lock(&alive_mutex_);
      --alive_;
    });
  });
}

absl::StatusOr<std::unique_ptr<ServedModel>> ModelRegistry::Load(const std::string& name,
                                                                  const std::string& dir) {
  // Loading allocates a whole model beside the one serving (on a GPU: device memory, whose
  // allocator throws when the device is full). An exception must not escape to the admin RPC
  // (which would leave the model marked as reloading for good) or to the SIGHUP thread (which
  // would end the server).
  try {
    return loader_(name, dir);
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        "out of memory loading it beside the models already served: free memory or serve "
        "fewer or smaller models");
  } catch (const std::exception& error) {
    return absl::InternalError(absl::StrCat("loading failed: ", error.what()));
  }
}

absl::Status ModelRegistry::Add(const std::string& name, const std::string& dir) {
  if (name.empty()) return absl::InvalidArgumentError("a served model needs a name");
  {
    absl::ReaderMutexLock lock(&mutex_);
    if (find_slot(slots_, name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("two models are named \"", name, "\"; give each its own name"));
    }
  }
  auto loaded = Load(name, dir);
  if (!loaded.ok()) {
    return absl::Status(loaded.status().code(), absl::StrCat("cannot serve model \"", name,
                                                             "\" from ", dir, ": ",
                                                             loaded.status().message()));
  }
  std::shared_ptr<const ServedModel> model = Share(*std::move(loaded));
  if (observer_) observer_->on_serving(*model);
  absl::MutexLock lock(&mutex_);
  slots_.push_back({name, std::move(model)});
  return absl::OkStatus();
}

std::string ModelRegistry::NotServedLocked(const std::string& name) const {
  return absl::StrCat("model \"", excerpt(name), "\" is not served here; this server serves ",
                      ServedListLocked());
}

std::string ModelRegistry::ServedListLocked() const {
  std::vector<std::string> served;
  for (const Slot& slot : slots_) {
    const ModelConfig& config = slot.model->config();
    served.push_back(absl::StrCat("\"", slot.name, "\" (", config.source_lang.empty() ? "?" :
                                  config.source_lang, " to ", config.target_lang.empty() ? "?" :
                                  config.target_lang, ")"));
  }
  return absl::StrJoin(served, ", ");
}

absl::StatusOr<std::shared_ptr<const ServedModel>> ModelRegistry::Route(
    const std::string& model, const std::string& source_language,
    const std::string& target_language) const {
  absl::ReaderMutexLock lock(&mutex_);
  if (!model.empty()) {
    if (const Slot* slot = find_slot(slots_, model)) return slot->model;
    return absl::NotFoundError(NotServedLocked(model));
  }
  if (slots_.size() == 1) return slots_.front().model;
  for (const std::string* code : {&source_language, &target_language}) {
    if (code->empty()) continue;
    const char* field =
        code == &source_language ? "source_language_code" : "target_language_code";
    if (auto subtag = language_subtag(field, *code); !subtag.ok()) return subtag.status();
  }
  for (const Slot& slot : slots_) {
    const ModelConfig& config = slot.model->config();
    if (check_language("source_language_code", source_language, config.source_lang, "from")
            .ok() &&
        check_language("target_language_code", target_language, config.target_lang, "into")
            .ok()) {
      return slot.model;
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "no served model translates from \"",
      source_language.empty() ? "any" : excerpt(source_language), "\" into \"",
      target_language.empty() ? "any" : excerpt(target_language), "\"; this server serves ",
      ServedListLocked()));
}

absl::StatusOr<std::shared_ptr<const ServedModel>> ModelRegistry::Reload(
    const std::string& name, const std::string& dir) {
  std::string served_name, load_dir;
  std::shared_ptr<const ServedModel> before;
  {
    absl::MutexLock lock(&mutex_);
    Slot* found = name.empty() ? (slots_.size() == 1 ? &slots_.front() : nullptr)
                               : find_slot(slots_, name);
    if (!found) {
      return absl::NotFoundError(
          name.empty() ? absl::StrCat("name the model to reload; this server serves ",
                                      ServedListLocked())
                       : NotServedLocked(name));
    }
    if (found->reloading) {
      return absl::AbortedError(absl::StrCat("model \"", found->name, "\" is being reloaded "
                                             "already; retry once that reload is over"));
    }
    found->reloading = true;
    served_name = found->name;
    before = found->model;
    load_dir = dir.empty() ? before->dir() : dir;
  }
  absl::StatusOr<std::unique_ptr<ServedModel>> loaded = Load(served_name, load_dir);
  absl::Status outcome = loaded.status();
  if (outcome.ok()) {
    const ModelConfig& now = (*loaded)->config();
    const ModelConfig& was = before->config();
    if (now.source_lang != was.source_lang || now.target_lang != was.target_lang) {
      outcome = absl::FailedPreconditionError(absl::StrCat(
          "it translates from \"", now.source_lang, "\" into \"", now.target_lang, "\", and \"",
          served_name, "\" serves \"", was.source_lang, "\" into \"", was.target_lang,
          "\"; serve it under another name"));
    }
  }
  if (!outcome.ok()) {
    outcome = absl::FailedPreconditionError(absl::StrCat(
        "cannot reload model \"", served_name, "\" from ", load_dir, ": ", outcome.message(),
        "; the model loaded before keeps serving"));
  }
  std::shared_ptr<const ServedModel> after;
  if (outcome.ok()) {
    after = Share(*std::move(loaded));
    if (observer_) observer_->on_serving(*after);
  }
  std::shared_ptr<const ServedModel> retired;  // let go of with the lock released
  {
    absl::MutexLock lock(&mutex_);
    if (Slot* slot = find_slot(slots_, served_name)) {  // gone only when the registry is destroyed
      slot->reloading = false;
      if (after) retired = std::exchange(slot->model, after);
    }
  }
  if (observer_) observer_->on_reload(served_name, outcome);
  if (!outcome.ok()) return outcome;
  return after;
}

void ModelRegistry::ReloadAllInBackground(ReloadReport report) {
  std::vector<std::string> served = names();
  if (served.empty()) return;
  ReloadInBackground(std::move(served), 0, std::move(report));
}

void ModelRegistry::ReloadInBackground(std::vector<std::string> names, size_t next,
                                       ReloadReport report) {
  background_.Post([this, names = std::move(names), next, report = std::move(report)]() mutable {
    {
      absl::MutexLock lock(&alive_mutex_);
      if (stopping_) return;
    }
    report(names[next], Reload(names[next], "").status());
    if (next + 1 == names.size()) return;
    // Posted behind the destruction of the model this reload retired (unless a call still holds
    // it). Under alive_mutex_, so the destructor, which sets stopping_ under it, cannot have
    // begun to destroy background_ yet.
    absl::MutexLock lock(&alive_mutex_);
    if (stopping_) return;
    ReloadInBackground(std::move(names), next + 1, std::move(report));
  });
}

int64_t ModelRegistry::models_in_memory() const {
  absl::MutexLock lock(&alive_mutex_);
  return alive_;
}

std::vector<std::string> ModelRegistry::names() const {
  absl::ReaderMutexLock lock(&mutex_);
  std::vector<std::string> names;
  for (const Slot& slot : slots_) names.push_back(slot.name);
  return names;
}

}  // namespace xlate::server
