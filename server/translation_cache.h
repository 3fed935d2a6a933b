// Finished translations, so that a sentence translated once is not decoded again (web pages and
// documents repeat their navigation, boilerplate and footers). An entry is keyed by everything
// that decides its hypotheses: the source tokens (after segmentation), the options whole
// (TranslationOptions, its forced start tokens included, as the engine batches them), the lexical
// constraints, and a partition (an API key, or "" when shared). The model is not in the key:
// each served model holds a cache of its own, so a reloaded model starts with an empty one.
// Bounded in bytes, least recently used first. Thread-safe.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "engine/decoding/search.h"
#include "engine/translator.h"

namespace xlate::server {

class TranslationCache {
 public:
  struct Key {
    std::string partition;
    std::vector<int32_t> source;
    TranslationOptions options;  // report_stable_prefixes cleared: it changes no output
    Constraints constraints;
    bool operator==(const Key& other) const;
  };
  struct KeyHash {
    size_t operator()(const Key& key) const;
  };
  // A key for a sentence as the scheduler queues it.
  static Key KeyOf(std::string partition, std::vector<int32_t> source,
                   const TranslationOptions& options, Constraints constraints);

  // max_bytes >= 1: the entries' estimated bytes (keys and hypotheses) stay within it.
  explicit TranslationCache(int64_t max_bytes);

  // The hypotheses stored under `key` (which becomes the most recently used), or none.
  std::optional<std::vector<Hypothesis>> Find(const Key& key);
  // Stores `hypotheses` under `key` (replacing an entry there), evicting the least recently used
  // entries until the cache fits its bound; an entry larger than the bound is not stored.
  // Returns how many entries were evicted.
  int64_t Insert(const Key& key, const std::vector<Hypothesis>& hypotheses);

  struct Stats {
    int64_t hits = 0, misses = 0, evictions = 0;  // since the cache was made
    int64_t bytes = 0, entries = 0;               // now
  };
  Stats stats() const;

 private:
  struct Entry {
    Key key;
    std::vector<Hypothesis> hypotheses;
    int64_t bytes;
  };
  using Order = std::list<Entry>;  // most recently used first

  const int64_t max_bytes_;
  mutable absl::Mutex mutex_;
  Order order_ ABSL_GUARDED_BY(mutex_);
  std::unordered_map<Key, Order::iterator, KeyHash> index_ ABSL_GUARDED_BY(mutex_);
  Stats stats_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace xlate::server
