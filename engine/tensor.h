// A dense, row-major tensor: shape, element type, device, and shared storage.
// Copies share storage (like a handle); reshape() views the same bytes under another shape.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/dtype.h"

namespace xlate {

// Where a tensor's bytes live. kCUDA storage comes from the CUDA backend
// (engine/backend/cuda_backend.h); a CPU-only build has none. data<T>() of a CUDA tensor is a
// device pointer: only the CUDA backend dereferences it.
enum class Device { kCPU, kCUDA };

// "host" or "GPU": whose memory ran out, in error messages.
inline const char* memory_name(Device device) { return device == Device::kCPU ? "host" : "GPU"; }

class Tensor {
 public:
  Tensor() = default;

  // Uninitialised storage (64-byte aligned on the CPU).
  static Tensor empty(std::vector<int64_t> shape, DType dtype, Device device = Device::kCPU);
  static Tensor zeros(std::vector<int64_t> shape, DType dtype, Device device = Device::kCPU);
  // A host tensor in memory that copies from `device` fill without a staging copy (page-locked
  // for a GPU). For buffers a decode loop reads back from the GPU again and again (a copy to the
  // host waits for the stream; a copy from this tensor does not, so it must not be freed before
  // the stream is next waited for).
  static Tensor staging(std::vector<int64_t> shape, DType dtype, Device device);
  static Tensor from_vector(const std::vector<float>& values, std::vector<int64_t> shape);
  static Tensor from_vector(const std::vector<int32_t>& values, std::vector<int64_t> shape);

  bool defined() const { return storage_ != nullptr; }
  // Whether another tensor (a copy, a view) holds this one's storage too.
  bool storage_shared() const { return storage_.use_count() > 1; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  // Negative axes count from the end.
  int64_t dim(int axis) const;
  int64_t numel() const;
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }

  template <typename T>
  T* data() {
    return static_cast<T*>(storage_.get());
  }
  template <typename T>
  const T* data() const {
    return static_cast<const T*>(storage_.get());
  }
  void* raw_data() { return storage_.get(); }
  const void* raw_data() const { return storage_.get(); }

  // Same storage, new shape with the same or a smaller element count (a prefix view).
  Tensor reshape(std::vector<int64_t> shape) const;
  // A view of `shape` starting `offset` elements into this tensor's storage; it keeps the
  // storage alive. The trainer lays all parameters (and gradients) out in one flat buffer.
  Tensor view(int64_t offset, std::vector<int64_t> shape) const;
  // Deep copy on the same device.
  Tensor clone() const;
  // Deep copy on `device` (a copy to the CPU waits for the device's stream).
  Tensor to(Device device) const;
  // This tensor on `device`: a handle to it when it is there already, else to(device).
  Tensor on(Device device) const { return device == device_ ? *this : to(device); }
  // Sets every byte of this tensor (or view) to 0, on its device.
  void fill_zero();
  // Copies `source` (same dtype and element count, any device) into this tensor's bytes.
  void copy_from(const Tensor& source);
  // A float32 copy of a float tensor of any float dtype (a handle to *this when already f32).
  Tensor to_float32() const;
  // A copy converted to a 16-bit float type or float32.
  Tensor to_dtype(DType dtype) const;
  // Writes `source` (a float tensor on the same device with as many elements) converted to this
  // tensor's float dtype: one pass on the device, no temporary.
  void convert_from(const Tensor& source);

  std::string shape_string() const;  // "[2, 3, 4]"

 private:
  std::shared_ptr<void> storage_;
  std::vector<int64_t> shape_;
  DType dtype_ = DType::kFloat32;
  Device device_ = Device::kCPU;
};

std::string shape_string(const std::vector<int64_t>& shape);

}  // namespace xlate
