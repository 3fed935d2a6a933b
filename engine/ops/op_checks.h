// The argument checks the ops share (engine/ops/ops.cc, training_ops.cc): a failed check is a
// programming error and throws std::logic_error naming the op and what is wrong.
#pragma once

#include <string>

#include "engine/tensor.h"

namespace xlate {

void require(bool condition, const char* op, const std::string& what);

// A float tensor on `like`'s device with its dtype: float32 on the CPU; the CUDA backend also
// stores float16 and bfloat16.
void require_float_like(const Tensor& tensor, const Tensor& like, const char* op,
                        const char* name);
// The same, of `count` elements.
void require_float_like(const Tensor& tensor, const Tensor& like, int64_t count, const char* op,
                        const char* name);

// A float32 tensor of `count` elements on `like`'s device (the training ops' contract).
void require_float32(const Tensor& tensor, const Tensor& like, int64_t count, const char* op,
                     const char* name);

void require_int32_like(const Tensor& tensor, const Tensor& like, const char* op,
                        const char* name);

// Whether the op may read `tensor`'s values for its checks (without a device round trip).
inline bool on_host(const Tensor& tensor) { return tensor.device() == Device::kCPU; }

}  // namespace xlate
