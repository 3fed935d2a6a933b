// A caching allocator for device memory (and page-locked host memory): freed blocks are kept and
// handed out again, so a decoding step that allocates the same shapes as the last one never
// reaches cudaMalloc (which synchronises the device and costs tens of microseconds).
//
// Sizes are rounded to a size class (512 B steps up to 1 MiB, 2 MiB steps above) and a request
// is served by the smallest cached block of its class or of a class at most 1/8 larger
// (reuse_limit), so memory use stays close to the peak of what is live: a training step's
// activations change size with every batch's token count, and exact classes would keep one
// block per size seen until the memory ran out, while the bound keeps the space a block wastes
// below 1/9 of it. When the backing memory is exhausted, every cached block is released and the
// request retried once before failing; an allocator in an AllocatorGroup then also empties the
// caches of the group's other members and retries once more.
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
#include <vector>

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
  size_t peak_bytes_in_use = 0;  // the most bytes_in_use has been (what the work needed at once)
  size_t bytes_reserved = 0;  // obtained from the backing memory (in use + cached)
  int64_t backing_allocations = 0;
  int64_t cache_hits = 0;
};

class CachingAllocator;

// The allocators that draw on one memory: all worker threads' allocators of the process's GPU.
// Each thread caches what it frees, so when the memory runs out the room one thread needs may be
// cached by another that will never allocate again (a retired model's weights go back to the
// cache of the thread that loaded them: an admin RPC or the SIGHUP thread). A member that is
// refused by the backing memory empties the other members' caches before it gives up.
//
// Lock order: the group's lock, then one member's lock; a member never holds its own lock while
// it calls into the group.
class AllocatorGroup {
 public:
  void join(CachingAllocator* member);
  void leave(CachingAllocator* member);
  // Empties the cache of every member but `asking` (a cudaFree waits for the device, so blocks
  // another stream freed while its kernels were queued are idle by the time they are released).
  void empty_caches_except(const CachingAllocator* asking);

 private:
  std::mutex mutex_;
  std::vector<CachingAllocator*> members_;
};

class CachingAllocator {
 public:
  // `group`, if given, is joined for the allocator's lifetime.
  explicit CachingAllocator(std::unique_ptr<BackingMemory> backing,
                            std::shared_ptr<AllocatorGroup> group = nullptr);
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
  // The largest cached block that may serve a request of class `size`: size + size / 8.
  static size_t reuse_limit(size_t size);

 private:
  // A block of class `size` from the cache or the backing memory (after emptying this cache);
  // nullptr when the backing memory refuses.
  void* allocate_locked(size_t size);
  void release_cached_locked();

  std::unique_ptr<BackingMemory> backing_;
  std::shared_ptr<AllocatorGroup> group_;
  mutable std::mutex mutex_;
  std::multimap<size_t, void*> cached_;         // size class -> free block
  std::unordered_map<void*, size_t> in_use_;    // block -> size class
  AllocatorStats stats_;
};

}  // namespace xlate::kernels
