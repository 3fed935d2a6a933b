#include "engine/tensor.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

#include "engine/backend/cuda_backend.h"
#include "engine/profiling.h"

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
  Tensor tensor;
  tensor.shape_ = std::move(shape);
  tensor.dtype_ = dtype;
  tensor.device_ = device;
  tensor.storage_ = device == Device::kCPU ? allocate_host(tensor.nbytes())
                                           : cuda_backend::allocate(tensor.nbytes());
  return tensor;
}

Tensor Tensor::pinned(std::vector<int64_t> shape, DType dtype) {
  Tensor tensor;
  tensor.shape_ = std::move(shape);
  tensor.dtype_ = dtype;
  tensor.device_ = Device::kCPU;
  tensor.storage_ = cuda_backend::allocate_pinned(tensor.nbytes());
  return tensor;
}

Tensor Tensor::zeros(std::vector<int64_t> shape, DType dtype, Device device) {
  Tensor tensor = empty(std::move(shape), dtype, device);
  tensor.fill_zero();
  return tensor;
}

void Tensor::fill_zero() {
  if (device_ == Device::kCPU) {
    std::memset(raw_data(), 0, nbytes());
  } else {
    cuda_backend::fill_zero(raw_data(), nbytes());
  }
}

Tensor Tensor::from_vector(const std::vector<float>& values, std::vector<int64_t> shape) {
  Tensor tensor = empty(std::move(shape), DType::kFloat32);
  // An empty vector's data() may be null, which memcpy may not be given even for 0 bytes.
  if (tensor.nbytes() > 0) std::memcpy(tensor.raw_data(), values.data(), tensor.nbytes());
  return tensor;
}

Tensor Tensor::from_vector(const std::vector<int32_t>& values, std::vector<int64_t> shape) {
  Tensor tensor = empty(std::move(shape), DType::kInt32);
  // An empty vector's data() may be null, which memcpy may not be given even for 0 bytes.
  if (tensor.nbytes() > 0) std::memcpy(tensor.raw_data(), values.data(), tensor.nbytes());
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

Tensor Tensor::clone() const { return to(device_); }

Tensor Tensor::to(Device device) const {
  Tensor copy = empty(shape_, dtype_, device);
  copy.copy_from(*this);
  return copy;
}

void Tensor::copy_from(const Tensor& source) {
  if (source.dtype_ != dtype_ || source.numel() != numel()) {
    throw std::logic_error("Tensor::copy_from: " + source.shape_string() + " " +
                           dtype_name(source.dtype_) + " into " + shape_string() + " " +
                           dtype_name(dtype_));
  }
  if (source.device_ == Device::kCPU && device_ == Device::kCPU) {
    std::memcpy(raw_data(), source.raw_data(), nbytes());
    return;
  }
  ScopedOpTimer timer(OpCategory::kTransfer);
  if (source.device_ == Device::kCPU) {
    cuda_backend::copy_host_to_device(raw_data(), source.raw_data(), nbytes());
  } else if (device_ == Device::kCPU) {
    cuda_backend::copy_device_to_host(raw_data(), source.raw_data(), nbytes());
  } else {
    cuda_backend::copy_device_to_device(raw_data(), source.raw_data(), nbytes());
  }
}

Tensor Tensor::to_float32() const {
  if (dtype_ == DType::kFloat32) return *this;
  return to_dtype(DType::kFloat32);
}

Tensor Tensor::to_dtype(DType dtype) const {
  if (dtype == dtype_) return clone();
  if (!is_float(dtype) || !is_float(dtype_)) {
    throw std::logic_error("Tensor::to_dtype: integer conversions are not supported");
  }
  Tensor out = empty(shape_, dtype, device_);
  if (device_ == Device::kCUDA) {
    cuda_backend::convert(out.raw_data(), dtype, raw_data(), dtype_, numel());
    return out;
  }
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
