#include "engine/tensor.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

#include "engine/ops/backend.h"
#include "engine/profiling.h"

namespace xlate {
namespace {

int64_t product(const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t extent : shape) count *= extent;
  return count;
}

}  // namespace

Tensor Tensor::empty(std::vector<int64_t> shape, DType dtype, Device device) {
  Tensor tensor;
  tensor.shape_ = std::move(shape);
  tensor.dtype_ = dtype;
  tensor.device_ = device;
  tensor.storage_ = op_backend(device).allocate(tensor.nbytes());
  return tensor;
}

Tensor Tensor::staging(std::vector<int64_t> shape, DType dtype, Device device) {
  Tensor tensor;
  tensor.shape_ = std::move(shape);
  tensor.dtype_ = dtype;
  tensor.device_ = Device::kCPU;
  tensor.storage_ = op_backend(device).allocate_host_staging(tensor.nbytes());
  return tensor;
}

Tensor Tensor::zeros(std::vector<int64_t> shape, DType dtype, Device device) {
  Tensor tensor = empty(std::move(shape), dtype, device);
  tensor.fill_zero();
  return tensor;
}

void Tensor::fill_zero() { op_backend(device_).fill_zero(raw_data(), nbytes()); }

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
    op_backend(device_).copy_from_host(raw_data(), source.raw_data(), nbytes());
  } else if (device_ == Device::kCPU) {
    op_backend(source.device_).copy_to_host(raw_data(), source.raw_data(), nbytes());
  } else {
    op_backend(device_).copy_within(raw_data(), source.raw_data(), nbytes());
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
  op_backend(device_).convert(out.raw_data(), dtype, raw_data(), dtype_, numel());
  return out;
}

void Tensor::convert_from(const Tensor& source) {
  if (source.device_ != device_ || source.numel() != numel() || !is_float(dtype_) ||
      !is_float(source.dtype_)) {
    throw std::logic_error("Tensor::convert_from: " + source.shape_string() + " " +
                           dtype_name(source.dtype_) + " into " + shape_string() + " " +
                           dtype_name(dtype_) + " (float types on one device)");
  }
  op_backend(device_).convert(raw_data(), dtype_, source.raw_data(), source.dtype_, numel());
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
