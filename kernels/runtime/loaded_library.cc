#include "kernels/runtime/loaded_library.h"

#include <dlfcn.h>

#include <stdexcept>

namespace xlate::kernels {

LoadedLibrary::LoadedLibrary(std::string name, const std::string& what)
    : name_(std::move(name)), handle_(dlopen(name_.c_str(), RTLD_NOW | RTLD_LOCAL)) {
  if (handle_ == nullptr) {
    const char* reason = dlerror();
    throw std::runtime_error("cannot load " + name_ + " (" + what + "): " +
                             (reason ? reason : "unknown reason"));
  }
}

void* LoadedLibrary::find(const char* symbol) const {
  void* address = dlsym(handle_, symbol);
  if (address == nullptr) {
    throw std::runtime_error(name_ + " has no " + symbol + " (a different version?)");
  }
  return address;
}

}  // namespace xlate::kernels
