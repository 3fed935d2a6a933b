// The oneDNN engine of the CPU backend and a cache of its primitives. Creating a primitive is
// the expensive part of a oneDNN call, so each shape's primitive is made once and reused; the
// cache is shared by all threads. A primitive may execute on several threads at once only
// because each execution brings its own scratchpad: in oneDNN's default (library) scratchpad
// mode, executions of one primitive share a buffer, and concurrent translations corrupted each
// other's matrix products. Make every primitive with scratchpad_attributes().
#pragma once

#include <functional>
#include <string>
#include <unordered_map>

#include <oneapi/dnnl/dnnl.hpp>

#include "engine/tensor.h"
#include "kernels/runtime/plan_cache.h"

namespace xlate::cpu {

const dnnl::engine& dnnl_engine();

// Matrix products of more rows run as chunks of at most this many, each through the primitive
// of its own row count. A decoding step's products (rows = sentences x beams) mostly fit in
// one; an encoder batch's (sentences x padded length rows, thousands of different counts) would
// otherwise make a primitive for every count it met, and the cache of them made the server's
// memory grow for as long as new counts came (17% in 10 minutes of mixed load). A primitive
// for any row count (oneDNN's runtime dimensions) was 20x slower.
constexpr int64_t kMaxPlanRows = 256;

// Calls chunk(first_row, row_count) for consecutive chunks of at most kMaxPlanRows of `rows`.
template <typename Chunk>
void for_row_chunks(int64_t rows, Chunk&& chunk) {
  for (int64_t first = 0; first < rows; first += kMaxPlanRows) {
    chunk(first, rows - first < kMaxPlanRows ? rows - first : kMaxPlanRows);
  }
}

// The primitive cached under `key`, made by `make` on first use.
dnnl::primitive cached_primitive(const std::string& key,
                                 const std::function<dnnl::primitive()>& make);
// The cache's lookups and the seconds its primitives took to make, all threads together.
kernels::PlanCacheCounts primitive_counts();

// Attributes that let execute() hand each execution a scratchpad of its own.
dnnl::primitive_attr scratchpad_attributes();

// Plain row-major f32 memory over caller-owned data.
dnnl::memory wrap_f32(const dnnl::memory::dims& dims, dnnl::memory::format_tag tag,
                      const void* data);

// A weight packed for a primitive: `data`, laid out as `source` says, copied (oneDNN's reorder)
// into a new host tensor of `element`s laid out as `packed` says.
Tensor packed_copy(const dnnl::memory::desc& source, const void* data,
                   const dnnl::memory::desc& packed, DType element);

// Where the elements of a weight [N, K] packed in one of oneDNN's blocked layouts lie (the layout
// of the weight as the product's [K, N] operand): each dimension's index splits into an outer
// part, times that dimension's stride, and the inner blocks, outermost first, the last varying
// fastest. Throws std::runtime_error for a layout that is not blocked.
class BlockedOffsets {
 public:
  explicit BlockedOffsets(const dnnl::memory::desc& layout);
  // The element offset of weight row n (an output), column k (an input).
  int64_t operator()(int64_t n, int64_t k) const;

 private:
  dnnl_memory_desc_t layout_;
  int64_t block_total_[2] = {1, 1};  // each dimension's inner blocks multiplied
};

// Runs a primitive on a fresh stream of the engine, with a scratchpad of this call, and waits.
void execute(const dnnl::primitive& primitive, std::unordered_map<int, dnnl::memory> arguments);

}  // namespace xlate::cpu
