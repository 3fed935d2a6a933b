// A bounded cache of per-shape plans: cuBLASLt's descriptors and chosen algorithm in
// kernels/runtime/gemm.cc, oneDNN's primitives in the CPU backend. Making a plan costs far more than
// using one (a heuristic query, a primitive's code generation), so a repeated shape reuses its
// plan; but the shapes a process meets are not a fixed set (training batches have a different
// token count nearly every step, decoding batches shrink row by row), so the cache holds at most
// `capacity` plans and drops the least recently used one to make room. Plain C++, no locking:
// a GemmContext belongs to one stream's thread; the CPU backend locks around its cache.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <stdexcept>
#include <utility>

namespace xlate::kernels {

// Host seconds since construction, for the time a plan takes to make.
class Stopwatch {
 public:
  Stopwatch() : started_(std::chrono::steady_clock::now()) {}
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  }

 private:
  std::chrono::steady_clock::time_point started_;
};

struct PlanCacheCounts {
  uint64_t hits = 0;       // lookups that found their plan
  uint64_t misses = 0;     // lookups that had to make it
  uint64_t evictions = 0;  // plans dropped to stay within the capacity
  // Host seconds the misses' plans took to make (as their makers reported to insert()): what a
  // process whose shapes keep changing pays for planning.
  double making_seconds = 0;
};

template <typename Key, typename Plan>
class PlanCache {
 public:
  explicit PlanCache(size_t capacity) : capacity_(capacity) {
    if (capacity == 0) throw std::invalid_argument("PlanCache: capacity must be at least 1");
  }
  PlanCache(const PlanCache&) = delete;
  PlanCache& operator=(const PlanCache&) = delete;

  // The plan under `key` (now the most recently used), or nullptr. Counts a hit when found; a
  // caller that then makes the plan itself counts the miss through insert().
  Plan* find(const Key& key) {
    auto found = index_.find(key);
    if (found == index_.end()) return nullptr;
    ++counts_.hits;
    entries_.splice(entries_.begin(), entries_, found->second);
    return &found->second->second;
  }

  // Stores `plan` under `key` as the most recently used, replacing a plan already there (two
  // threads that missed the same key both insert), and drops the least recently used plan when
  // the cache would exceed its capacity; `making_seconds`: how long making it took. The
  // reference stays valid until the next insert.
  Plan& insert(const Key& key, Plan plan, double making_seconds = 0) {
    ++counts_.misses;
    counts_.making_seconds += making_seconds;
    auto found = index_.find(key);
    if (found != index_.end()) {
      found->second->second = std::move(plan);
      entries_.splice(entries_.begin(), entries_, found->second);
      return found->second->second;
    }
    if (entries_.size() == capacity_) {
      index_.erase(entries_.back().first);
      entries_.pop_back();
      ++counts_.evictions;
    }
    entries_.emplace_front(key, std::move(plan));
    index_.emplace(key, entries_.begin());
    return entries_.front().second;
  }

  // find(), or insert(make()) when absent, timing make(). If make() throws, the cache is
  // unchanged.
  template <typename Make>
  Plan& get_or_make(const Key& key, Make&& make) {
    if (Plan* plan = find(key)) return *plan;
    const Stopwatch stopwatch;
    Plan plan = make();
    return insert(key, std::move(plan), stopwatch.seconds());
  }

  void clear() {
    index_.clear();
    entries_.clear();
  }

  size_t size() const { return entries_.size(); }
  size_t capacity() const { return capacity_; }
  const PlanCacheCounts& counts() const { return counts_; }

 private:
  using Entries = std::list<std::pair<Key, Plan>>;  // most recently used first
  size_t capacity_;
  Entries entries_;
  std::map<Key, typename Entries::iterator> index_;
  PlanCacheCounts counts_;
};

}  // namespace xlate::kernels
