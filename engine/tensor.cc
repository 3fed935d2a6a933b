#include "engine/tensor.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

namespace xlate {
namespace {

int64_t product(const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t extent : shape) count *= extent;
  return count;
}

std::shared_ptr<void> allocate_host(size_t bytes) {
  constexpr size_t kAlignment = 64;
  const size_t rounded = ((bytes + kAlignment - 1) / kAlignment) * kAlignment;
  void* pointer = std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
  if (pointer == nullptr) throw std::bad_alloc();
  return std::shared_ptr<void>(pointer, [](void* p) { std::free(p); });
}

}  // namespace

Tensor Tensor::empty(std::vector<int64_t> shape, DType dtype, Device device) {
  if (device != Device::kCPU) {
    // Programming error, not user input: CUDA storage is created by the CUDA backend.
    throw std::logic_error("Tensor::empty: only CPU storage is available in this build");
  }
  Tensor tensor;
  tensor.shape_ = std::move(shape);
  tensor.dtype_ = dtype;
  tensor.device_ = device;
  tensor.storage_ = allocate_host(tensor.nbytes());
  return tensor;
}

Tensor Tensor::zeros(std::vector<int64_t> shape, DType dtype, Device device) {
  Tensor tensor = empty(std::move(shape), dtype, device);
  std::memset(tensor.raw_data(), 0, tensor.nbytes());
  return tensor;
}

Tensor Tensor::from_vector(const std::vector<float>& values, std::vector<int64_t> shape) {
  Tensor tensor = empty(std::move(shape), DType::kFloat32);
  std::memcpy(tensor.raw_data(), values.data(), tensor.nbytes());
  return tensor;
}

Tensor Tensor::from_vector(const std::vector<int32_t>& values, std::vector<int64_t> shape) {
  Tensor tensor = empty(std::move(shape), DType::kInt32);
  std::memcpy(tensor.raw_data(), values.data(), tensor.nbytes());
  return tensor;
}

int64_t Tensor::dim(int axis) const {
  const int index = axis < 0 ? axis + rank() : axis;
  return shape_.at(static_cast<size_t>(index));
}

int64_t Tensor::numel() const { return product(shape_); }

Tensor Tensor::view(int64_t offset, std::vector<int64_t> shape) const {
  if (offset < 0 || offset + product(shape) > numel()) {
    throw std::logic_error("Tensor::view: " + xlate::shape_string(shape) + " at offset " +
                           std::to_string(offset) + " exceeds " + shape_string());
  }
  Tensor tensor = *this;
  tensor.shape_ = std::move(shape);
  tensor.storage_ = std::shared_ptr<void>(
      storage_, static_cast<char*>(storage_.get()) + offset * static_cast<int64_t>(dtype_size(dtype_)));
  return tensor;
}

Tensor Tensor::reshape(std::vector<int64_t> shape) const {
  if (product(shape) > numel()) {
    throw std::logic_error("Tensor::reshape: " + xlate::shape_string(shape) + " is larger than " +
                           shape_string());
  }
  Tensor view = *this;
  view.shape_ = std::move(shape);
  return view;
}

Tensor Tensor::clone() const {
  Tensor copy = empty(shape_, dtype_, device_);
  std::memcpy(copy.raw_data(), raw_data(), nbytes());
  return copy;
}

Tensor Tensor::to_float32() const {
  if (dtype_ == DType::kFloat32) return *this;
  return to_dtype(DType::kFloat32);
}

Tensor Tensor::to_dtype(DType dtype) const {
  if (dtype == dtype_) return clone();
  if (dtype == DType::kInt32 || dtype_ == DType::kInt32) {
    throw std::logic_error("Tensor::to_dtype: integer conversions are not supported");
  }
  Tensor out = empty(shape_, dtype, device_);
  const int64_t count = numel();
  std::vector<float> widened;
  const float* source = nullptr;
  if (dtype_ == DType::kFloat32) {
    source = data<float>();
  } else {
    widened.resize(static_cast<size_t>(count));
    const uint16_t* bits = data<uint16_t>();
    for (int64_t i = 0; i < count; ++i) {
      widened[i] = dtype_ == DType::kFloat16 ? half_to_float(bits[i]) : bfloat16_to_float(bits[i]);
    }
    source = widened.data();
  }
  if (dtype == DType::kFloat32) {
    std::memcpy(out.raw_data(), source, out.nbytes());
  } else {
    uint16_t* bits = out.data<uint16_t>();
    for (int64_t i = 0; i < count; ++i) {
      bits[i] = dtype == DType::kFloat16 ? float_to_half(source[i]) : float_to_bfloat16(source[i]);
    }
  }
  return out;
}

std::string Tensor::shape_string() const { return xlate::shape_string(shape_); }

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

}  // namespace xlate
