// Argument checks and device dispatch for every op; the math lives in the backends.
#include "engine/ops/ops.h"

#include <stdexcept>
#include <string>

#include "engine/ops/cpu/cpu_ops.h"
#include "engine/profiling.h"

namespace xlate {
namespace {

void require(bool condition, const char* op, const std::string& what) {
  if (!condition) throw std::logic_error(std::string(op) + ": " + what);
}

void require_cpu_float(const Tensor& tensor, const char* op, const char* name) {
  require(tensor.defined(), op, std::string(name) + " is undefined");
  require(tensor.device() == Device::kCPU, op,
          std::string(name) + " is on a device without a backend in this build");
  require(tensor.dtype() == DType::kFloat32, op, std::string(name) + " must be float32");
}

}  // namespace

void embedding_forward(Tensor& out, const Tensor& tokens, const Tensor& table,
                       const Tensor& positions, float scale, int64_t position_offset) {
  require_cpu_float(out, "embedding_forward", "out");
  require(tokens.dtype() == DType::kInt32 && tokens.rank() == 2, "embedding_forward",
          "tokens must be int32 [N, T]");
  require(position_offset + tokens.dim(1) <= positions.dim(0), "embedding_forward",
          "positions beyond the positional table");
  require(out.numel() == tokens.numel() * table.dim(1), "embedding_forward", "out shape");
  cpu::embedding_forward(out, tokens, table, positions, scale, position_offset);
}

void linear_forward(Tensor& out, const Tensor& inp, const Tensor& weight, const Tensor& bias,
                    Activation activation) {
  require_cpu_float(inp, "linear_forward", "inp");
  require_cpu_float(weight, "linear_forward", "weight");
  require(weight.rank() == 2 && inp.dim(-1) == weight.dim(1), "linear_forward",
          "inp " + inp.shape_string() + " does not match weight " + weight.shape_string());
  require(out.numel() == inp.numel() / weight.dim(1) * weight.dim(0), "linear_forward",
          "out " + out.shape_string());
  require(!bias.defined() || bias.numel() == weight.dim(0), "linear_forward", "bias size");
  cpu::linear_forward(out, inp, weight, bias, activation);
}

void add_layer_norm_forward(Tensor& out, const Tensor& inp, const Tensor& residual,
                            const Tensor& gamma, const Tensor& beta, float eps) {
  require_cpu_float(inp, "add_layer_norm_forward", "inp");
  require(inp.numel() == residual.numel() && inp.numel() == out.numel(),
          "add_layer_norm_forward", "inp, residual and out differ in size");
  require(gamma.numel() == inp.dim(-1) && beta.numel() == inp.dim(-1), "add_layer_norm_forward",
          "gamma/beta size");
  cpu::add_layer_norm_forward(out, inp, residual, gamma, beta, eps);
}

void attention_forward(Tensor& out, const Tensor& query, const Tensor& keys, const Tensor& values,
                       const Tensor& key_rows, const Tensor& key_lengths, int heads,
                       bool causal) {
  ScopedOpTimer timer(OpCategory::kAttention);
  require_cpu_float(query, "attention_forward", "query");
  require(query.rank() == 3 && keys.rank() == values.rank() &&
              keys.numel() / keys.dim(-1) == values.numel() / values.dim(-1),
          "attention_forward", "query [N, T, h*d_k], keys [..., h*d_k], values [..., h*d_v]");
  require(query.dim(2) == keys.dim(-1) && query.dim(2) % heads == 0 &&
              values.dim(-1) % heads == 0,
          "attention_forward", "query/key widths must match and divide by heads");
  require(key_rows.rank() == 2 && key_rows.dim(0) == query.dim(0) &&
              key_lengths.numel() == query.dim(0),
          "attention_forward", "key_rows [N, S] and key_lengths [N]");
  const int32_t* lengths = key_lengths.data<int32_t>();
  for (int64_t n = 0; n < query.dim(0); ++n) {
    require(lengths[n] <= key_rows.dim(1) && (!causal || lengths[n] >= query.dim(1)),
            "attention_forward", "key_lengths beyond the key_rows table");
  }
  require(out.numel() == query.dim(0) * query.dim(1) * values.dim(-1), "attention_forward",
          "out [N, T, h*d_v]");
  cpu::attention_forward(out, query, keys, values, key_rows, key_lengths, heads, causal);
}

void log_softmax_forward(Tensor& out, const Tensor& inp) {
  ScopedOpTimer timer(OpCategory::kSoftmax);
  require_cpu_float(inp, "log_softmax_forward", "inp");
  require(out.numel() == inp.numel(), "log_softmax_forward", "out shape");
  cpu::log_softmax_forward(out, inp);
}

}  // namespace xlate
