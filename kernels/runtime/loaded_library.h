// A shared library opened with dlopen for the life of the process (never closed), and the
// functions looked up in it: how kernels/ uses the CUDA libraries it does not link
// (cublaslt_library.h and nccl_library.h say why each).
#pragma once

#include <string>

namespace xlate::kernels {

class LoadedLibrary {
 public:
  // Opens `name` (a soname such as "libnccl.so.2"); throws std::runtime_error naming it,
  // `what` (what the library is, for the user) and the loader's message when it cannot.
  LoadedLibrary(std::string name, const std::string& what);

  // Sets *function to the library's `symbol`; throws std::runtime_error naming both when it is
  // missing (a different version of the library).
  template <typename Function>
  void resolve(const char* symbol, Function* function) const {
    *function = reinterpret_cast<Function>(find(symbol));
  }

 private:
  void* find(const char* symbol) const;

  std::string name_;
  void* handle_;
};

}  // namespace xlate::kernels
