#include "engine/ops/op_checks.h"

#include <stdexcept>

#include "engine/ops/backend.h"

namespace xlate {

void require(bool condition, const char* op, const std::string& what) {
  if (!condition) throw std::logic_error(std::string(op) + ": " + what);
}

void require_float_like(const Tensor& tensor, const Tensor& like, const char* op,
                        const char* name) {
  require(tensor.defined(), op, std::string(name) + " is undefined");
  require(tensor.device() == like.device(), op, std::string(name) + " is on another device");
  require(tensor.dtype() == like.dtype(), op, std::string(name) + " has another dtype");
  require(is_float(tensor.dtype()), op, std::string(name) + " must be a float tensor");
  require(backend_of(tensor).reduced_precision_storage || tensor.dtype() == DType::kFloat32, op,
          std::string(name) + " must be float32 on the " + backend_of(tensor).name + " backend");
}

void require_float_like(const Tensor& tensor, const Tensor& like, int64_t count, const char* op,
                        const char* name) {
  require_float_like(tensor, like, op, name);
  require(tensor.numel() == count, op,
          std::string(name) + " has " + std::to_string(tensor.numel()) + " elements, not " +
              std::to_string(count));
}

void require_float32(const Tensor& tensor, const Tensor& like, int64_t count, const char* op,
                     const char* name) {
  require(tensor.defined() && tensor.dtype() == DType::kFloat32, op,
          std::string(name) + " must be a float32 tensor");
  require(tensor.device() == like.device(), op, std::string(name) + " is on another device");
  require(tensor.numel() == count, op,
          std::string(name) + " has " + std::to_string(tensor.numel()) + " elements, not " +
              std::to_string(count));
}

void require_int32_like(const Tensor& tensor, const Tensor& like, const char* op,
                        const char* name) {
  require(tensor.defined() && tensor.dtype() == DType::kInt32, op,
          std::string(name) + " must be int32");
  require(tensor.device() == like.device(), op, std::string(name) + " is on another device");
}

}  // namespace xlate
