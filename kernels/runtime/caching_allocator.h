// A caching allocator for device memory (and page-locked host memory): freed blocks are kept and
// handed out again, so a decoding step that allocates the same shapes as the last one never
// reaches cudaMalloc (which synchronises the device and costs tens of microseconds).
//
// Memory comes from the backing memory in segments, and a segment is cut into blocks: a request
// (rounded up to 512 B) takes the smallest free block that holds it (best fit), and the part of
// that block it does not need stays free as a block of its own; a freed block merges with free
// neighbours of its segment. A training step's activations change size with every batch's token
// count, so one block per size seen (or per size class) would keep growing the reserve, while
// cut and merged segments keep it close to the most the work held at once.
// - Every block starts a multiple of 512 B into its segment: as aligned as the backing
//   memory's allocations are up to that (cudaMalloc's: 256 B).
// - Requests up to 1 MiB come from 2 MiB segments of their own (small blocks never pin a large
//   segment), cut at any 512 B; larger ones from segments of 20 MiB (requests under 10 MiB, so
//   several share one) or of an eighth more than the request, rounded to 2 MiB, cut only where
//   more than 1 MiB is left (less stays with the block).
// - When the backing memory refuses a segment, the preferred size falls back to the request's
//   own (rounded to 2 MiB); then every wholly free segment is released and the request retried
//   once before failing; an allocator in an AllocatorGroup then also empties the caches of the
//   group's other members and retries once more.
//
// Without caching (the constructor's `cache` false) every request is a backing allocation of its
// own, released when freed: compute-sanitizer then sees an access past a block's end, which
// within a cut segment is valid memory to it.
//
// Stream rule: blocks are reused without any event or synchronisation, which is correct only
// when all work on the memory of one allocator runs on one stream in order. The engine gives
// each worker (stream) its own allocator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
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
  size_t bytes_in_use = 0;       // blocks handed out and not yet freed
  size_t peak_bytes_in_use = 0;  // the most bytes_in_use has been (what the work needed at once)
  size_t bytes_reserved = 0;     // segments obtained from the backing memory (in use + cached)
  int64_t backing_allocations = 0;
  int64_t cache_hits = 0;        // requests served by a cached block
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
                            std::shared_ptr<AllocatorGroup> group = nullptr, bool cache = true);
  ~CachingAllocator();  // returns every block to the backing memory
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // A block of at least `bytes` (a 0-byte request gets 512 B). Throws std::bad_alloc when the
  // backing memory cannot provide it even after emptying the cache.
  void* allocate(size_t bytes);
  // Returns a block from allocate() to the cache; nullptr is ignored.
  void free(void* block);
  // Releases the wholly free segments to the backing memory.
  void empty_cache();

  AllocatorStats stats() const;

  // What a request of `bytes` is rounded up to: 512 B steps.
  static size_t rounded_size(size_t bytes);

 private:
  struct Block;
  struct BySizeThenAddress {
    bool operator()(const Block* a, const Block* b) const;
  };
  using FreeBlocks = std::set<Block*, BySizeThenAddress>;

  // A block of `size` (rounded) from the cache or the backing memory (after emptying this
  // cache); nullptr when the backing memory refuses.
  void* allocate_locked(size_t size);
  // A new segment's block for a request of `size`; nullptr when the backing memory refuses.
  Block* new_segment_locked(size_t size, bool small);
  void release_free_segments_locked();

  std::unique_ptr<BackingMemory> backing_;
  std::shared_ptr<AllocatorGroup> group_;
  bool cache_;
  mutable std::mutex mutex_;
  FreeBlocks small_free_;                      // blocks of the 2 MiB segments
  FreeBlocks large_free_;                      // blocks of the others
  std::unordered_map<void*, Block*> in_use_;   // address -> block handed out
  AllocatorStats stats_;
};

}  // namespace xlate::kernels
