// A caching allocator for device memory (and page-locked host memory): freed blocks are kept and
// handed out again, so a decoding step that allocates the same shapes as the last one never
// reaches cudaMalloc (which synchronises the device and costs tens of microseconds).
//
// Sizes are rounded to a size class (512 B steps up to 1 MiB, 2 MiB steps above) and a request
// is served by a cached block of exactly its class, so memory use stays close to the peak of
// what is live. When the backing memory is exhausted, every cached block is released and the
// request retried once before failing.
//
// Stream rule: blocks are reused without any event or synchronisation, which is correct only
// when all work on the memory of one allocator runs on one stream in order. The engine gives
// each worker (stream) its own allocator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace xlate::kernels {

// Where blocks come from: cudaMalloc/cudaFree on a GPU (cuda_runtime.h); tests use host memory.
class BackingMemory {
 public:
  virtual ~BackingMemory() = default;
  // nullptr when the memory is exhausted.
  virtual void* allocate(size_t bytes) = 0;
  virtual void release(void* block) = 0;
};

struct AllocatorStats {
  size_t bytes_in_use = 0;    // handed out and not yet freed (size classes)
  size_t bytes_reserved = 0;  // obtained from the backing memory (in use + cached)
  int64_t backing_allocations = 0;
  int64_t cache_hits = 0;
};

class CachingAllocator {
 public:
  explicit CachingAllocator(std::unique_ptr<BackingMemory> backing);
  ~CachingAllocator();  // returns every block to the backing memory
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // A block of at least `bytes` (a 0-byte request gets the smallest class). Throws
  // std::bad_alloc when the backing memory cannot provide it even after emptying the cache.
  void* allocate(size_t bytes);
  // Returns a block from allocate() to the cache; nullptr is ignored.
  void free(void* block);
  // Releases the cached (free) blocks to the backing memory.
  void empty_cache();

  AllocatorStats stats() const;

  static size_t size_class(size_t bytes);

 private:
  void release_cached_locked();

  std::unique_ptr<BackingMemory> backing_;
  mutable std::mutex mutex_;
  std::multimap<size_t, void*> cached_;         // size class -> free block
  std::unordered_map<void*, size_t> in_use_;    // block -> size class
  AllocatorStats stats_;
};

}  // namespace xlate::kernels
