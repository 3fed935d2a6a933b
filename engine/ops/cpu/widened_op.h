// 16-bit storage for the CPU's float32 op bodies: WidenedOp<&body>::call has the body's
// signature and takes float16 / bfloat16 tensors. Each 16-bit float tensor it is given (also
// inside a Columns, a LayerNormTraining or behind a Tensor*) is widened to a float32 copy
// (exact), the body runs on the copies, and each 16-bit tensor the body may write (Tensor&,
// Tensor*, LayerNormTraining*) is rounded back once, to nearest even. That is the CUDA kernels'
// contract (16-bit storage, float32 arithmetic, one rounding per stored value), so the CPU
// reproduces a GPU's 16-bit numerics; float32 arguments reach the body untouched.
//
// Aliasing stays legal: an output that aliases an input gets a copy of its own, and the body
// computes what it computes without aliasing (every op that allows aliasing computes the same
// either way). Costs one extra pass over each 16-bit argument: the bodies that matter for speed
// (the matrix products) read 16-bit tensors themselves.
#pragma once

#include <tuple>
#include <type_traits>
#include <utility>

#include "engine/ops/ops.h"
#include "engine/ops/training_ops.h"
#include "engine/tensor.h"

namespace xlate::cpu {

inline bool is_16bit_float(const Tensor& tensor) {
  return tensor.defined() &&
         (tensor.dtype() == DType::kFloat16 || tensor.dtype() == DType::kBFloat16);
}

namespace widened_detail {

// How one argument reaches the float32 body: `get()` gives the body's argument, `store()` rounds
// what the body wrote back into a 16-bit original. The primary template passes it through.
template <typename Arg>
struct Widen {
  explicit Widen(Arg arg) : arg_(std::forward<Arg>(arg)) {}
  static bool needed(const std::remove_reference_t<Arg>&) { return false; }
  Arg get() { return std::forward<Arg>(arg_); }
  void store() {}
  Arg arg_;
};

inline Tensor widen(const Tensor& tensor) {
  return is_16bit_float(tensor) ? tensor.to_dtype(DType::kFloat32) : tensor;
}

template <>
struct Widen<const Tensor&> {
  explicit Widen(const Tensor& arg) : copy_(widen(arg)) {}
  static bool needed(const Tensor& arg) { return is_16bit_float(arg); }
  const Tensor& get() { return copy_; }
  void store() {}
  Tensor copy_;
};

template <>
struct Widen<Tensor&> {
  explicit Widen(Tensor& arg) : original_(arg), copy_(widen(arg)) {}
  static bool needed(const Tensor& arg) { return is_16bit_float(arg); }
  Tensor& get() { return is_16bit_float(original_) ? copy_ : original_; }
  void store() {
    if (is_16bit_float(original_)) original_.convert_from(copy_);
  }
  Tensor& original_;
  Tensor copy_;
};

template <>
struct Widen<Tensor*> {
  explicit Widen(Tensor* arg) : original_(arg), copy_(arg == nullptr ? Tensor() : widen(*arg)) {}
  static bool needed(const Tensor* arg) { return arg != nullptr && is_16bit_float(*arg); }
  Tensor* get() { return needed(original_) ? &copy_ : original_; }
  void store() {
    if (needed(original_)) original_->convert_from(copy_);
  }
  Tensor* original_;
  Tensor copy_;
};

template <>
struct Widen<const Columns&> {
  explicit Widen(const Columns& arg) : copy_(widen(arg.tensor), arg.first, arg.width) {}
  static bool needed(const Columns& arg) { return is_16bit_float(arg.tensor); }
  const Columns& get() { return copy_; }
  void store() {}
  Columns copy_;
};

template <>
struct Widen<const LayerNormTraining&> {
  explicit Widen(const LayerNormTraining& arg) : copy_(arg) { copy_.sum = widen(arg.sum); }
  static bool needed(const LayerNormTraining& arg) { return is_16bit_float(arg.sum); }
  const LayerNormTraining& get() { return copy_; }
  void store() {}
  LayerNormTraining copy_;
};

template <>
struct Widen<LayerNormTraining*> {
  explicit Widen(LayerNormTraining* arg) : original_(arg) {
    if (arg == nullptr) return;
    copy_ = *arg;
    copy_.sum = widen(arg->sum);
  }
  static bool needed(const LayerNormTraining* arg) {
    return arg != nullptr && is_16bit_float(arg->sum);
  }
  LayerNormTraining* get() { return original_ == nullptr ? nullptr : &copy_; }
  void store() {
    if (original_ != nullptr && is_16bit_float(original_->sum)) {
      original_->sum.convert_from(copy_.sum);
    }
  }
  LayerNormTraining* original_;
  LayerNormTraining copy_;
};

}  // namespace widened_detail

template <auto Body, typename Signature = decltype(Body)>
struct WidenedOp;

template <auto Body, typename Result, typename... Args>
struct WidenedOp<Body, Result (*)(Args...)> {
  // Whether any argument is a 16-bit float tensor (else the body runs on the arguments as given).
  static bool any_16bit(const std::remove_reference_t<Args>&... args) {
    return (widened_detail::Widen<Args>::needed(args) || ...);
  }

  static Result call(Args... args) {
    if (!any_16bit(args...)) return Body(std::forward<Args>(args)...);
    // Each element is made in place from its argument (Widen keeps references to originals).
    std::tuple<widened_detail::Widen<Args>...> widened(std::forward<Args>(args)...);
    if constexpr (std::is_void_v<Result>) {
      std::apply([](auto&... each) { Body(each.get()...); }, widened);
      std::apply([](auto&... each) { (each.store(), ...); }, widened);
    } else {
      Result result = std::apply([](auto&... each) { return Body(each.get()...); }, widened);
      std::apply([](auto&... each) { (each.store(), ...); }, widened);
      return result;
    }
  }
};

}  // namespace xlate::cpu
