// The server's models by name (routing by name and language pair) and their reloads: a call
// routed before a reload keeps its model, and that model still translates; a reload that fails
// or changes the languages keeps the old model; one reload of a model at a time.
#include <atomic>
#include <filesystem>
#include <fstream>
#include <new>
#include <stdexcept>
#include <thread>

#include <gtest/gtest.h>

#include "absl/synchronization/notification.h"
#include "server/model_registry.h"
#include "tests/test_paths.h"

namespace xlate::server {
namespace {

namespace fs = std::filesystem;

// A copy of the fixture's tiny model under `name` in the scratch directory, its config's
// languages replaced; `break_weights` truncates model.safetensors.
std::string model_copy(const std::string& name, const std::string& source_lang,
                       const std::string& target_lang, bool break_weights = false) {
  const fs::path directory = fs::path(testing::scratch_dir()) / ("registry_" + name);
  fs::remove_all(directory);
  fs::create_directories(directory);
  for (const char* file : {"config.json", "model.safetensors", "spm.model"}) {
    fs::copy_file(fs::path(testing::tiny_model_dir()) / file, directory / file);
  }
  std::ifstream in(directory / "config.json");
  std::string config((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  for (const auto& [key, value] :
       {std::pair<std::string, std::string>{"\"source_lang\": \"en\"", source_lang},
        {"\"target_lang\": \"de\"", target_lang}}) {
    const size_t at = config.find(key);
    EXPECT_NE(at, std::string::npos) << key << " not in the fixture's config.json";
    if (at != std::string::npos) {
      config.replace(at, key.size(), key.substr(0, key.find(':') + 3) + value + "\"");
    }
  }
  std::ofstream(directory / "config.json") << config;
  if (break_weights) fs::resize_file(directory / "model.safetensors", 1000);
  return directory.string();
}

ServingSettings small_settings() {
  ServingSettings settings;
  settings.threads = 1;
  settings.decoder.max_sentences = 4;
  settings.decoder.max_beam_size = 4;
  settings.decoder.max_target_tokens = 40;
  return settings;
}

class Reports : public ModelRegistry::Observer {
 public:
  void on_serving(const ServedModel& model) override {
    absl::MutexLock lock(&mutex_);
    serving_.push_back(model.name() + "@" + model.dir());
  }
  void on_reload(const std::string& name, const absl::Status& outcome) override {
    absl::MutexLock lock(&mutex_);
    reloads_.push_back(name + (outcome.ok() ? ": loaded" : ": failed"));
  }
  std::vector<std::string> serving() {
    absl::MutexLock lock(&mutex_);
    return serving_;
  }
  std::vector<std::string> reloads() {
    absl::MutexLock lock(&mutex_);
    return reloads_;
  }

 private:
  absl::Mutex mutex_;
  std::vector<std::string> serving_ ABSL_GUARDED_BY(mutex_);
  std::vector<std::string> reloads_ ABSL_GUARDED_BY(mutex_);
};

ModelRegistry::Loader loader() {
  return [](const std::string& name, const std::string& dir) {
    return ServedModel::Load(name, dir, small_settings(), nullptr);
  };
}

// Translates `text` on `model`'s own scheduler, as a call routed to it does.
absl::StatusOr<std::vector<std::vector<Hypothesis>>> translate_on(const ServedModel& model,
                                                                  const std::string& text) {
  auto ids = model.translator().tokenizer().encode(text);
  if (!ids.ok()) return ids.status();
  TranslationOptions options;
  options.max_extra_length = 10;
  auto job = model.scheduler().Submit({*ids}, options, absl::InfiniteFuture());
  if (!job.ok()) return job.status();
  (*job)->WaitUntil(absl::InfiniteFuture());
  if (!(*job)->status().ok()) return (*job)->status();
  return (*job)->TakeResults();
}

TEST(ModelRegistry, RoutesByNameThenByLanguagePairThenToTheFirst) {
  ModelRegistry models(loader(), nullptr);
  ASSERT_TRUE(models.Add("en-de", model_copy("route_ende", "en", "de")).ok());
  ASSERT_TRUE(models.Add("de-en", model_copy("route_deen", "de", "en")).ok());
  EXPECT_EQ(models.names(), (std::vector<std::string>{"en-de", "de-en"}));

  const auto route = [&](const std::string& model, const std::string& source,
                         const std::string& target) -> std::string {
    auto routed = models.Route(model, source, target);
    return routed.ok() ? (*routed)->name() : routed.status().ToString();
  };
  EXPECT_EQ(route("de-en", "", ""), "de-en");
  EXPECT_EQ(route("", "", ""), "en-de");
  EXPECT_EQ(route("", "de", ""), "de-en");
  EXPECT_EQ(route("", "", "EN-us"), "de-en");
  EXPECT_EQ(route("", "en", "de-CH"), "en-de");
  // A name wins over the codes; check_request_text then refuses codes the model does not serve.
  EXPECT_EQ(route("en-de", "de", "en"), "en-de");

  auto unknown = models.Route("fr-de", "", "");
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(unknown.status().message(),
            "model \"fr-de\" is not served here; this server serves \"en-de\" (en to de), "
            "\"de-en\" (de to en)");
  auto unserved = models.Route("", "fr", "de");
  EXPECT_EQ(unserved.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(unserved.status().message().find("no served model translates from \"fr\" into "
                                             "\"de\"; this server serves \"en-de\" (en to de)"),
            std::string::npos)
      << unserved.status();
  auto malformed = models.Route("", "", "not a code!");
  EXPECT_EQ(malformed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(malformed.status().message().find("target_language_code"), std::string::npos);

  auto twice = models.Add("de-en", model_copy("route_twice", "de", "en"));
  EXPECT_EQ(twice.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(twice.message().find("two models are named \"de-en\""), std::string::npos);
}

TEST(ModelRegistry, OneModelTakesEveryRequestThatNamesNoModel) {
  ModelRegistry models(loader(), nullptr);
  ASSERT_TRUE(models.Add("only", model_copy("only", "en", "de")).ok());
  // The language check (and its message) is check_request_text's, as before several models.
  auto routed = models.Route("", "fr", "it");
  ASSERT_TRUE(routed.ok()) << routed.status();
  EXPECT_EQ((*routed)->name(), "only");
}

TEST(ModelRegistry, ReloadSwapsTheModelAndCallsRoutedBeforeKeepTheirs) {
  Reports reports;
  ModelRegistry models(loader(), &reports);
  const std::string first = model_copy("swap_first", "en", "de");
  const std::string second = model_copy("swap_second", "en", "de");
  ASSERT_TRUE(models.Add("tiny", first).ok());
  auto before = models.Route("", "", "");
  ASSERT_TRUE(before.ok());

  auto reloaded = models.Reload("tiny", second);
  ASSERT_TRUE(reloaded.ok()) << reloaded.status();
  EXPECT_EQ((*reloaded)->dir(), second);
  auto after = models.Route("tiny", "", "");
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->get(), reloaded->get());
  EXPECT_NE(after->get(), before->get());

  // The call routed before the reload still translates on its model, as it did before.
  EXPECT_EQ((*before)->dir(), first);
  auto old_result = translate_on(**before, "A dog runs in the park.");
  auto new_result = translate_on(**after, "A dog runs in the park.");
  ASSERT_TRUE(old_result.ok()) << old_result.status();
  ASSERT_TRUE(new_result.ok()) << new_result.status();
  EXPECT_EQ((*old_result)[0][0].tokens, (*new_result)[0][0].tokens);  // the same weights

  // Without a directory, the model's current one.
  auto again = models.Reload("", "");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ((*again)->dir(), second);
  EXPECT_EQ(reports.serving(), (std::vector<std::string>{"tiny@" + first, "tiny@" + second,
                                                         "tiny@" + second}));
  EXPECT_EQ(reports.reloads(), (std::vector<std::string>{"tiny: loaded", "tiny: loaded"}));
}

TEST(ModelRegistry, ABrokenOrDifferentModelIsRefusedAndTheOldOneServes) {
  Reports reports;
  ModelRegistry models(loader(), &reports);
  const std::string good = model_copy("keep_good", "en", "de");
  ASSERT_TRUE(models.Add("tiny", good).ok());

  auto broken = models.Reload("tiny", model_copy("keep_broken", "en", "de", true));
  EXPECT_EQ(broken.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(broken.status().message().find("cannot reload model \"tiny\" from "),
            std::string::npos);
  EXPECT_NE(broken.status().message().find("model.safetensors"), std::string::npos)
      << broken.status();
  EXPECT_NE(broken.status().message().find("the model loaded before keeps serving"),
            std::string::npos);

  auto reversed = models.Reload("tiny", model_copy("keep_reversed", "de", "en"));
  EXPECT_EQ(reversed.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(reversed.status().message().find("it translates from \"de\" into \"en\""),
            std::string::npos)
      << reversed.status();

  auto unknown = models.Reload("other", "");
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound);

  auto served = models.Route("", "", "");
  ASSERT_TRUE(served.ok());
  EXPECT_EQ((*served)->dir(), good);
  auto result = translate_on(**served, "Two men play football.");
  EXPECT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(reports.reloads(), (std::vector<std::string>{"tiny: failed", "tiny: failed"}));
}

TEST(ModelRegistry, OneReloadOfAModelAtATime) {
  absl::Notification loading, release;
  bool block = false;
  ModelRegistry models(
      [&](const std::string& name, const std::string& dir) {
        if (block) {
          loading.Notify();
          release.WaitForNotification();
        }
        return ServedModel::Load(name, dir, small_settings(), nullptr);
      },
      nullptr);
  const std::string dir = model_copy("one_at_a_time", "en", "de");
  ASSERT_TRUE(models.Add("tiny", dir).ok());
  block = true;
  std::thread first([&] { EXPECT_TRUE(models.Reload("tiny", "").ok()); });
  loading.WaitForNotification();
  auto second = models.Reload("tiny", "");
  EXPECT_EQ(second.status().code(), absl::StatusCode::kAborted);
  // Meanwhile the model serves.
  auto served = models.Route("tiny", "", "");
  ASSERT_TRUE(served.ok());
  EXPECT_TRUE(translate_on(**served, "A cat sleeps.").ok());
  release.Notify();
  first.join();
}

// A load that throws (on a GPU: the caching allocator's std::bad_alloc when the new model does
// not fit beside the old one) is a refused reload, not an exception through the admin RPC or the
// SIGHUP thread: the old model serves, and the next reload is not refused as "in progress".
TEST(ModelRegistry, ALoadThatThrowsIsARefusedReloadAndTheNextOneRuns) {
  Reports reports;
  int throw_next = 0;  // 1: std::bad_alloc, 2: another exception
  ModelRegistry models(
      [&](const std::string& name, const std::string& dir) {
        if (throw_next == 1) throw std::bad_alloc();
        if (throw_next == 2) throw std::runtime_error("cudaMalloc failed: out of memory");
        return ServedModel::Load(name, dir, small_settings(), nullptr);
      },
      &reports);
  const std::string dir = model_copy("load_throws", "en", "de");
  ASSERT_TRUE(models.Add("tiny", dir).ok());

  throw_next = 1;
  auto full = models.Reload("tiny", "");
  EXPECT_EQ(full.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(full.status().message().find("out of memory loading it beside the models already "
                                         "served"), std::string::npos) << full.status();
  EXPECT_NE(full.status().message().find("the model loaded before keeps serving"),
            std::string::npos);
  throw_next = 2;
  auto failed = models.Reload("tiny", "");
  EXPECT_NE(failed.status().message().find("loading failed: cudaMalloc failed: out of memory"),
            std::string::npos) << failed.status();
  EXPECT_EQ(models.Add("other", dir).code(), absl::StatusCode::kInternal);

  auto served = models.Route("tiny", "", "");
  ASSERT_TRUE(served.ok());
  EXPECT_TRUE(translate_on(**served, "A cat sleeps.").ok());
  throw_next = 0;
  auto again = models.Reload("tiny", "");
  EXPECT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(reports.reloads(),
            (std::vector<std::string>{"tiny: failed", "tiny: failed", "tiny: loaded"}));
}

TEST(ModelRegistry, ReloadAllInBackgroundReportsEachModel) {
  ModelRegistry models(loader(), nullptr);
  ASSERT_TRUE(models.Add("a", model_copy("all_a", "en", "de")).ok());
  ASSERT_TRUE(models.Add("b", model_copy("all_b", "de", "en")).ok());
  absl::Mutex mutex;
  std::vector<std::string> outcomes;
  absl::Notification done;
  models.ReloadAllInBackground([&](const std::string& name, const absl::Status& outcome) {
    absl::MutexLock lock(&mutex);
    outcomes.push_back(name + (outcome.ok() ? " ok" : " " + outcome.ToString()));
    if (outcomes.size() == 2) done.Notify();
  });
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(60)));
  absl::MutexLock lock(&mutex);
  EXPECT_EQ(outcomes, (std::vector<std::string>{"a ok", "b ok"}));
}

// SIGHUP reloads model after model; the model each reload retires is destroyed before the next
// one loads, so a reload of every model needs room for one more model, not for all of them
// twice (on a GPU: device memory).
TEST(ModelRegistry, ReloadAllRetiresEachOldModelBeforeTheNextLoads) {
  std::atomic<ModelRegistry*> registry{nullptr};
  absl::Mutex mutex;
  std::vector<std::string> loads;  // "name: models in memory when its load began"
  ModelRegistry models(
      [&](const std::string& name, const std::string& dir) {
        if (ModelRegistry* loaded_into = registry.load()) {
          absl::MutexLock lock(&mutex);
          loads.push_back(name + ": " + std::to_string(loaded_into->models_in_memory()));
        }
        return ServedModel::Load(name, dir, small_settings(), nullptr);
      },
      nullptr);
  ASSERT_TRUE(models.Add("a", model_copy("retire_a", "en", "de")).ok());
  ASSERT_TRUE(models.Add("b", model_copy("retire_b", "de", "en")).ok());
  ASSERT_TRUE(models.Add("c", model_copy("retire_c", "en", "fr")).ok());
  EXPECT_EQ(models.models_in_memory(), 3);
  registry = &models;
  absl::Notification done;
  models.ReloadAllInBackground([&](const std::string& name, const absl::Status& outcome) {
    EXPECT_TRUE(outcome.ok()) << name << ": " << outcome;
    if (name == "c") done.Notify();
  });
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(60)));
  absl::MutexLock lock(&mutex);
  EXPECT_EQ(loads, (std::vector<std::string>{"a: 3", "b: 3", "c: 3"}));
}

}  // namespace
}  // namespace xlate::server
