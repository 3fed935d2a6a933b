// What every kernel entry point shares: the element type of its float tensors and the stream it
// runs on. CUDA-free, so engine code can call kernels without the CUDA headers.
#pragma once

// cudaStream_t is `CUstream_st*`; naming the struct keeps the handle type-safe without CUDA.
struct CUstream_st;

namespace xlate::kernels {

using Stream = CUstream_st*;  // nullptr is the legacy default stream

// Float tensors are stored in one of these; kernels compute in float32 whatever the storage.
enum class ElementType { kFloat32, kFloat16, kBFloat16 };

inline int element_size(ElementType type) { return type == ElementType::kFloat32 ? 4 : 2; }

// How a matrix product of float32 tensors computes: exactly, or with its inputs rounded to
// float16 or bfloat16 so that tensor cores run it (products and sums stay float32): float16 by
// cuBLAS's FAST_16F compute type on the fly, bfloat16 by a rounded copy of each operand
// (kernels/runtime/gemm.cc says why). Mixed-precision training's products.
enum class Float32Math { kExact, kFloat16Inputs, kBFloat16Inputs };

}  // namespace xlate::kernels
