#include "server/translation_cache.h"

#include "absl/hash/hash.h"

namespace xlate::server {
namespace {

// A heap allocation's bytes as malloc holds them: its contents and about 16 bytes of its own.
template <typename T>
int64_t vector_bytes(const std::vector<T>& values) {
  return static_cast<int64_t>(sizeof(values) + values.capacity() * sizeof(T)) +
         (values.capacity() > 0 ? 16 : 0);
}

// What an entry holds, estimated: its key twice (the entry's and the index's), its hypotheses,
// the list and index nodes.
int64_t entry_bytes(const TranslationCache::Key& key, const std::vector<Hypothesis>& hypotheses) {
  int64_t key_bytes = static_cast<int64_t>(sizeof(TranslationCache::Key) +
                                           key.partition.capacity()) +
                      vector_bytes(key.source) + vector_bytes(key.options.forced_start_tokens) +
                      vector_bytes(key.constraints);
  for (const auto& constraint : key.constraints) key_bytes += vector_bytes(constraint);
  int64_t bytes = 128 + 2 * key_bytes + vector_bytes(hypotheses);
  for (const Hypothesis& hypothesis : hypotheses) {
    bytes += vector_bytes(hypothesis.tokens) + vector_bytes(hypothesis.alignment);
  }
  return bytes;
}

// A copy whose vectors hold no spare capacity (a decoder's grow as they are filled).
template <typename T>
std::vector<T> exact(const std::vector<T>& values) {
  return std::vector<T>(values.begin(), values.end());
}

std::vector<Hypothesis> compact(const std::vector<Hypothesis>& hypotheses) {
  std::vector<Hypothesis> copies;
  copies.reserve(hypotheses.size());
  for (const Hypothesis& hypothesis : hypotheses) {
    copies.push_back({exact(hypothesis.tokens), hypothesis.score, hypothesis.log_prob,
                      exact(hypothesis.alignment)});
  }
  return copies;
}

TranslationCache::Key compact(const TranslationCache::Key& key) {
  TranslationCache::Key copy = key;
  copy.source = exact(key.source);
  copy.options.forced_start_tokens = exact(key.options.forced_start_tokens);
  return copy;
}

}  // namespace

bool TranslationCache::Key::operator==(const Key& other) const {
  return partition == other.partition && source == other.source && options == other.options &&
         constraints == other.constraints;
}

TranslationCache::Key TranslationCache::KeyOf(std::string partition, std::vector<int32_t> source,
                                              const TranslationOptions& options,
                                              Constraints constraints) {
  Key key{std::move(partition), std::move(source), options, std::move(constraints)};
  key.options.report_stable_prefixes = false;
  return key;
}

size_t TranslationCache::KeyHash::operator()(const Key& key) const {
  // The fields that differ most between sentences; equal hashes fall back to Key::operator==,
  // which compares every option.
  size_t hash = absl::Hash<std::vector<int32_t>>()(key.source);
  hash = hash * 1000003u ^ absl::Hash<std::string>()(key.partition);
  hash = hash * 1000003u ^ absl::Hash<std::vector<int32_t>>()(key.options.forced_start_tokens);
  hash = hash * 1000003u ^ absl::Hash<Constraints>()(key.constraints);
  hash = hash * 1000003u ^ static_cast<size_t>(key.options.beam_size);
  return hash;
}

TranslationCache::TranslationCache(int64_t max_bytes) : max_bytes_(max_bytes) {}

std::optional<std::vector<Hypothesis>> TranslationCache::Find(const Key& key) {
  absl::MutexLock lock(&mutex_);
  const auto found = index_.find(key);
  if (found == index_.end()) {
    ++stats_.misses;
    return std::nullopt;
  }
  ++stats_.hits;
  order_.splice(order_.begin(), order_, found->second);
  return found->second->hypotheses;
}

int64_t TranslationCache::Insert(const Key& given_key,
                                 const std::vector<Hypothesis>& given_hypotheses) {
  Key key = compact(given_key);
  std::vector<Hypothesis> hypotheses = compact(given_hypotheses);
  const int64_t bytes = entry_bytes(key, hypotheses);
  if (bytes > max_bytes_) return 0;
  int64_t evicted = 0;
  absl::MutexLock lock(&mutex_);
  if (const auto found = index_.find(key); found != index_.end()) {
    stats_.bytes -= found->second->bytes;
    order_.erase(found->second);
    index_.erase(found);
  }
  while (!order_.empty() && stats_.bytes + bytes > max_bytes_) {
    const Entry& oldest = order_.back();
    stats_.bytes -= oldest.bytes;
    index_.erase(oldest.key);
    order_.pop_back();
    ++evicted;
  }
  stats_.evictions += evicted;
  order_.push_front(Entry{key, std::move(hypotheses), bytes});
  index_.emplace(std::move(key), order_.begin());
  stats_.bytes += bytes;
  return evicted;
}

TranslationCache::Stats TranslationCache::stats() const {
  absl::MutexLock lock(&mutex_);
  Stats stats = stats_;
  stats.entries = static_cast<int64_t>(order_.size());
  return stats;
}

}  // namespace xlate::server
