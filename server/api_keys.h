// API keys and their quotas (--api_keys_file): which callers may translate, and how much.
//
// The file has one key per line, optionally followed by a tab and its requests per minute, and
// another tab and its characters (Unicode code points of contents) per day; 0 or absent means
// no limit. Blank lines and lines starting with '#' are skipped. Keys are kept only as their
// SHA-256 digests: a presented key is hashed and compared with every digest in constant time
// (CRYPTO_memcmp, no early exit), and a key is named in messages, logs and metrics by the first
// 12 hex digits of its digest, never by itself.
//
// Quotas are token buckets refilled continuously (a minute's requests over a minute, a day's
// characters over a day), so a key that used its minute waits for part of it, not for the
// minute to turn. A reload (SIGHUP) replaces the keys and limits; a key that stays keeps the
// quota it has used.
#pragma once

#include <array>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace xlate::server {

struct ApiKeyLimits {
  int64_t requests_per_minute = 0;  // 0: no limit
  int64_t characters_per_day = 0;   // 0: no limit
};

class ApiKeys {
 public:
  using Clock = std::function<absl::Time()>;
  using Digest = std::array<unsigned char, 32>;

  // Reads `path` (see above); INVALID_ARGUMENT naming the file and line of a malformed line
  // (never quoting a key), NOT_FOUND when it cannot be read, and INVALID_ARGUMENT for a file
  // with no key.
  static absl::StatusOr<std::unique_ptr<ApiKeys>> Load(const std::string& path,
                                                       Clock clock = absl::Now);

  // Re-reads the file; on failure the keys in use stay and the error says why.
  absl::Status Reload();

  // Admits one request of `characters` code points from the caller presenting `key`:
  // its name, or UNAUTHENTICATED (no key, or one not in the file) or RESOURCE_EXHAUSTED (over
  // a quota: which, its limit, and in how many seconds the request would fit).
  absl::StatusOr<std::string> Admit(absl::string_view key, int64_t characters);

  // Admit's answer about the key alone, taking no quota: the HTTP gateway asks it before it
  // reads a body, so that a caller without a valid key costs no parse.
  absl::Status Verify(absl::string_view key);

  // The name of a key (12 hex digits of its SHA-256).
  static std::string Name(absl::string_view key);

 private:
  struct Bucket {
    double requests = 0, characters = 0;  // what is left
    absl::Time refilled;
  };
  struct Entry {
    Digest digest;
    std::string name;
    ApiKeyLimits limits;
  };
  ApiKeys(std::string path, Clock clock) : path_(std::move(path)), clock_(std::move(clock)) {}
  static absl::StatusOr<std::vector<Entry>> Read(const std::string& path);
  // The entry whose digest is the key's, comparing every one; nullptr when none.
  const Entry* Find(absl::string_view key) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);

  const std::string path_;
  const Clock clock_;
  absl::Mutex mutex_;
  std::vector<Entry> entries_ ABSL_GUARDED_BY(mutex_);
  std::map<std::string, Bucket> buckets_ ABSL_GUARDED_BY(mutex_);  // by name
};

}  // namespace xlate::server
