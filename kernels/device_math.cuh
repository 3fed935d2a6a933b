// Device-side helpers shared by the kernels: float conversion of the storage types, warp and
// block reductions, and the host-side dispatch from ElementType to a C++ type.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cfloat>
#include <stdexcept>

#include "kernels/element_type.h"

namespace xlate::kernels {

template <typename T>
__device__ __forceinline__ float to_float(T value);
template <>
__device__ __forceinline__ float to_float<float>(float value) { return value; }
template <>
__device__ __forceinline__ float to_float<__half>(__half value) { return __half2float(value); }
template <>
__device__ __forceinline__ float to_float<__nv_bfloat16>(__nv_bfloat16 value) {
  return __bfloat162float(value);
}

template <typename T>
__device__ __forceinline__ T from_float(float value);
template <>
__device__ __forceinline__ float from_float<float>(float value) { return value; }
template <>
__device__ __forceinline__ __half from_float<__half>(float value) { return __float2half_rn(value); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float value) {
  return __float2bfloat16_rn(value);
}

constexpr int kWarpSize = 32;

__device__ __forceinline__ float warp_sum(float value) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    value += __shfl_xor_sync(0xffffffffu, value, offset);
  }
  return value;
}

__device__ __forceinline__ float warp_max(float value) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    value = fmaxf(value, __shfl_xor_sync(0xffffffffu, value, offset));
  }
  return value;
}

// Four dot products at once, Σ_d rows4[d]·column[d·pitch] for each of four rows: rows4 holds the
// rows' d-th values side by side ([dims][4], 16-byte aligned: one float4 load per d, broadcast
// to the warp), column is a lane's own column of a transposed matrix in shared memory. So one
// shared load of the column feeds four multiply-adds (the attention kernels' scores and dP).
__device__ __forceinline__ float4 four_dot_products(const float* rows4, const float* column,
                                                    int pitch, int dims) {
  float4 sum = make_float4(0.f, 0.f, 0.f, 0.f);
  for (int d = 0; d < dims; ++d) {
    const float x = column[d * pitch];
    const float4 r = reinterpret_cast<const float4*>(rows4)[d];
    sum.x += r.x * x;
    sum.y += r.y * x;
    sum.z += r.z * x;
    sum.w += r.w * x;
  }
  return sum;
}

// Sum / max over the whole block (blockDim.x a multiple of 32, at most 1024); every thread gets
// the result. `scratch` holds 32 floats of shared memory and may be reused after the call.
__device__ __forceinline__ float block_sum(float value, float* scratch) {
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  value = warp_sum(value);
  __syncthreads();
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  const int warps = blockDim.x / kWarpSize;
  value = lane < warps ? scratch[lane] : 0.f;
  return warp_sum(value);
}

__device__ __forceinline__ float block_max(float value, float* scratch) {
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  value = warp_max(value);
  __syncthreads();
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  const int warps = blockDim.x / kWarpSize;
  value = lane < warps ? scratch[lane] : -FLT_MAX;
  return warp_max(value);
}

// Calls `body(T{})` with T the C++ type stored for `type` (host side, to launch a kernel template).
template <typename Body>
void dispatch_float_type(ElementType type, Body&& body) {
  switch (type) {
    case ElementType::kFloat32: body(float{}); return;
    case ElementType::kFloat16: body(__half{}); return;
    case ElementType::kBFloat16: body(__nv_bfloat16{}); return;
  }
  throw std::logic_error("unknown element type");
}

inline unsigned grid_size(long long items, int per_block) {
  return static_cast<unsigned>((items + per_block - 1) / per_block);
}

}  // namespace xlate::kernels
