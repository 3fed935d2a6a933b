// Matrix products through oneDNN's matmul primitive. Weights stay in PyTorch's [N, K] layout and
// are described to oneDNN as the transposed operand (format tag `ba`), so no copy is made.
// Primitives are created once per shape and reused; creation is the expensive part.
#include <map>
#include <mutex>
#include <tuple>

#include <oneapi/dnnl/dnnl.hpp>

#include "engine/ops/cpu/cpu_ops.h"
#include "engine/profiling.h"

namespace xlate::cpu {
namespace {

using dnnl::memory;

struct MatmulKey {
  int64_t rows, outputs, inputs;
  bool bias, relu;
  bool operator<(const MatmulKey& other) const {
    return std::tie(rows, outputs, inputs, bias, relu) <
           std::tie(other.rows, other.outputs, other.inputs, other.bias, other.relu);
  }
};

class MatmulCache {
 public:
  static MatmulCache& instance() {
    static MatmulCache cache;
    return cache;
  }
  const dnnl::engine& engine() const { return engine_; }

  dnnl::matmul get(const MatmulKey& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = primitives_.find(key);
    if (found != primitives_.end()) return found->second;
    if (primitives_.size() >= kMaxPrimitives) primitives_.clear();
    dnnl::matmul primitive = create(key);
    primitives_.emplace(key, primitive);
    return primitive;
  }

 private:
  // Decoding shrinks batches row by row, so shapes vary; bound the cache all the same.
  static constexpr size_t kMaxPrimitives = 4096;

  dnnl::matmul create(const MatmulKey& key) const {
    const memory::desc source({key.rows, key.inputs}, memory::data_type::f32,
                              memory::format_tag::ab);
    const memory::desc weights({key.inputs, key.outputs}, memory::data_type::f32,
                               memory::format_tag::ba);
    const memory::desc bias = key.bias ? memory::desc({1, key.outputs}, memory::data_type::f32,
                                                      memory::format_tag::ab)
                                       : memory::desc();
    const memory::desc destination({key.rows, key.outputs}, memory::data_type::f32,
                                   memory::format_tag::ab);
    dnnl::primitive_attr attributes;
    if (key.relu) {
      dnnl::post_ops post;
      post.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
      attributes.set_post_ops(post);
    }
    const dnnl::matmul::desc description(source, weights, bias, destination);
    return dnnl::matmul(dnnl::matmul::primitive_desc(description, attributes, engine_));
  }

  dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
  std::mutex mutex_;
  std::map<MatmulKey, dnnl::matmul> primitives_;
};

}  // namespace

void linear_forward(Tensor& out, const Tensor& inp, const Tensor& weight, const Tensor& bias,
                    Activation activation) {
  ScopedOpTimer timer(OpCategory::kMatmul);
  const int64_t outputs = weight.dim(0), inputs = weight.dim(1);
  const int64_t rows = inp.numel() / inputs;
  if (rows == 0) return;
  const MatmulKey key{rows, outputs, inputs, bias.defined(), activation == Activation::kRelu};
  MatmulCache& cache = MatmulCache::instance();
  dnnl::matmul primitive = cache.get(key);
  const dnnl::engine& engine = cache.engine();
  auto wrap = [&](std::vector<int64_t> dims, memory::format_tag tag, const void* pointer) {
    return memory(memory::desc(dims, memory::data_type::f32, tag), engine,
                  const_cast<void*>(pointer));
  };
  std::unordered_map<int, memory> arguments{
      {DNNL_ARG_SRC, wrap({rows, inputs}, memory::format_tag::ab, inp.raw_data())},
      {DNNL_ARG_WEIGHTS, wrap({inputs, outputs}, memory::format_tag::ba, weight.raw_data())},
      {DNNL_ARG_DST, wrap({rows, outputs}, memory::format_tag::ab, out.raw_data())}};
  if (bias.defined()) {
    arguments.emplace(DNNL_ARG_BIAS, wrap({1, outputs}, memory::format_tag::ab, bias.raw_data()));
  }
  dnnl::stream stream(engine);
  primitive.execute(stream, arguments);
  stream.wait();
}

}  // namespace xlate::cpu
