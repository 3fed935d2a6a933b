// Translated files kept for download: LibreTranslate's /translate_file answers with the URL of
// its result (translatedFileUrl), which its clients then fetch (/download_file/...). Each file
// is kept under an unguessable id (server/random_id.h: a file is its owner's) for a
// while, within a byte budget; the oldest goes first when a new one needs room, and an expired
// one is never served.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <optional>
#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace xlate::server {

class TranslatedFiles {
 public:
  struct File {
    std::string name;       // as the client named its upload
    std::string mime_type;
    std::string content;
  };

  // Keeps files for `keep_for`, at most `max_bytes` of content in all; `clock` tells the time
  // (a test's fake clock).
  TranslatedFiles(int64_t max_bytes, absl::Duration keep_for,
                  std::function<absl::Time()> clock = [] { return absl::Now(); });

  // Keeps `file` and returns its id (32 hex digits), making room by dropping the oldest files;
  // nullopt for a file larger than the whole budget.
  std::optional<std::string> Put(File file);
  // The file of `id`, until it expires or makes room for newer ones.
  std::optional<File> Get(const std::string& id);
  // Content bytes kept now (expired files count until the next Put or Get drops them).
  int64_t bytes() const;

 private:
  struct Entry {
    File file;
    absl::Time expires;
  };
  void DropExpiredLocked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  void DropOldestLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);

  const int64_t max_bytes_;
  const absl::Duration keep_for_;
  const std::function<absl::Time()> clock_;
  mutable absl::Mutex mutex_;
  std::map<std::string, Entry> files_ ABSL_GUARDED_BY(mutex_);
  std::list<std::string> order_ ABSL_GUARDED_BY(mutex_);  // ids, oldest first
  int64_t bytes_ ABSL_GUARDED_BY(mutex_) = 0;
};

}  // namespace xlate::server
