#include "engine/ops/cpu/dnnl_context.h"

#include <mutex>

#include "kernels/runtime/plan_cache.h"

namespace xlate::cpu {
namespace {

// Decoding shrinks batches row by row and training batches differ in rows every step, so the
// shapes a process meets keep coming; the least recently used primitives make room.
constexpr size_t kMaxPrimitives = 4096;

std::mutex cache_mutex;
kernels::PlanCache<std::string, dnnl::primitive>& primitive_cache() {
  static auto* cache = new kernels::PlanCache<std::string, dnnl::primitive>(kMaxPrimitives);
  return *cache;
}

}  // namespace

const dnnl::engine& dnnl_engine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::primitive cached_primitive(const std::string& key,
                                 const std::function<dnnl::primitive()>& make) {
  {
    std::lock_guard<std::mutex> lock(cache_mutex);
    if (const dnnl::primitive* found = primitive_cache().find(key)) return *found;
  }
  const kernels::Stopwatch stopwatch;
  dnnl::primitive primitive = make();  // outside the lock: creation can take milliseconds
  const double seconds = stopwatch.seconds();
  std::lock_guard<std::mutex> lock(cache_mutex);
  return primitive_cache().insert(key, primitive, seconds);
}

kernels::PlanCacheCounts primitive_counts() {
  std::lock_guard<std::mutex> lock(cache_mutex);
  return primitive_cache().counts();
}

dnnl::memory wrap_f32(const dnnl::memory::dims& dims, dnnl::memory::format_tag tag,
                      const void* data) {
  return dnnl::memory(dnnl::memory::desc(dims, dnnl::memory::data_type::f32, tag), dnnl_engine(),
                      const_cast<void*>(data));
}

dnnl::primitive_attr scratchpad_attributes() {
  dnnl::primitive_attr attributes;
  attributes.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attributes;
}

Tensor packed_copy(const dnnl::memory::desc& source, const void* data,
                   const dnnl::memory::desc& packed, DType element) {
  Tensor copy = Tensor::empty(
      {static_cast<int64_t>(packed.get_size() / dtype_size(element))}, element);
  dnnl::memory from(source, dnnl_engine(), const_cast<void*>(data));
  dnnl::memory to(packed, dnnl_engine(), copy.raw_data());
  dnnl::stream stream(dnnl_engine());
  dnnl::reorder(from, to).execute(stream, from, to);
  stream.wait();
  return copy;
}

void execute(const dnnl::primitive& primitive, std::unordered_map<int, dnnl::memory> arguments) {
  const dnnl_memory_desc_t* scratchpad = dnnl_primitive_desc_query_md(
      primitive.get_primitive_desc(), dnnl_query_scratchpad_md, 0);
  if (scratchpad != nullptr && scratchpad->ndims > 0) {
    arguments.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(dnnl::memory::desc(*scratchpad),
                                                        dnnl_engine()));
  }
  dnnl::stream stream(dnnl_engine());
  primitive.execute(stream, arguments);
  stream.wait();
}

BlockedOffsets::BlockedOffsets(const dnnl::memory::desc& layout) : layout_(layout.data) {
  if (layout_.format_kind != dnnl_blocked) {
    throw std::runtime_error("a packed weight's layout is not a blocked one");
  }
  const dnnl_blocking_desc_t& blocking = layout_.format_desc.blocking;
  for (int i = 0; i < blocking.inner_nblks; ++i) {
    block_total_[blocking.inner_idxs[i]] *= blocking.inner_blks[i];
  }
}

int64_t BlockedOffsets::operator()(int64_t n, int64_t k) const {
  const dnnl_blocking_desc_t& blocking = layout_.format_desc.blocking;
  const int64_t index[2] = {k, n};
  int64_t at = layout_.offset0 + (k / block_total_[0]) * blocking.strides[0] +
               (n / block_total_[1]) * blocking.strides[1];
  int64_t divisor[2] = {1, 1}, step = 1;
  for (int i = blocking.inner_nblks - 1; i >= 0; --i) {
    const int dim = blocking.inner_idxs[i];
    const int64_t size = blocking.inner_blks[i];
    at += (index[dim] / divisor[dim]) % size * step;
    divisor[dim] *= size;
    step *= size;
  }
  return at;
}

}  // namespace xlate::cpu
