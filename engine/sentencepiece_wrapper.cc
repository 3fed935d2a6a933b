#include "engine/sentencepiece_wrapper.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>

namespace xlate::spm {
namespace {

namespace fs = std::filesystem;
using CreateFunction = Backend* (*)();

// The module is loaded with RTLD_DEEPBIND so that SentencePiece's bundled protobuf binds to
// itself, not to the server's protobuf, unless it was built self-contained (every symbol of a
// static SentencePiece hidden inside it: XLATE_SENTENCEPIECE_STATIC_DIR in engine/CMakeLists.txt).
// The sanitizers' runtimes refuse RTLD_DEEPBIND. Their builds load the module without it: its
// symbols then resolve in the global scope first, which is safe where no other protobuf is
// loaded (Abseil's symbols carry an inline namespace and do not clash) or where the module is
// self-contained. Any other process is refused with a message instead of crashing later.
#ifdef XLATE_SENTENCEPIECE_SELF_CONTAINED
constexpr bool kSelfContainedModule = true;
#else
constexpr bool kSelfContainedModule = false;
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitizerBuild = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitizerBuild = true;
#else
constexpr bool kSanitizerBuild = false;
#endif
#else
constexpr bool kSanitizerBuild = false;
#endif

// A function every protobuf library (the system's and SentencePiece's bundled copy) exports.
constexpr char kProtobufSymbol[] = "_ZN6google8protobuf11MessageLite14ParseFromArrayEPKvi";

std::vector<std::string> module_candidates() {
  constexpr char kModule[] = "libxlate_sentencepiece.so";
  std::vector<std::string> candidates;
  if (const char* path = std::getenv("XLATE_SENTENCEPIECE_MODULE")) candidates.push_back(path);
  std::error_code error;
  const fs::path executable = fs::read_symlink("/proc/self/exe", error);
  if (!error) {
    candidates.push_back((executable.parent_path() / kModule).string());
    candidates.push_back((executable.parent_path() / ".." / "lib" / kModule).string());
  }
  candidates.push_back(XLATE_SENTENCEPIECE_MODULE_PATH);
  return candidates;
}

// Loads the module once per process; returns its factory or null.
CreateFunction load_module(std::string* error) {
  static std::once_flag once;
  static CreateFunction create = nullptr;
  static std::string load_error;
  std::call_once(once, [] {
    std::string tried;
    for (const std::string& candidate : module_candidates()) {
      if (!fs::exists(candidate)) {
        tried += " " + candidate;
        continue;
      }
      if (kSanitizerBuild && !kSelfContainedModule &&
          dlsym(RTLD_DEFAULT, kProtobufSymbol) != nullptr) {
        load_error = "this sanitizer build cannot load SentencePiece into a process that "
                     "already has a protobuf library (the sanitizer runtime refuses the "
                     "RTLD_DEEPBIND that keeps SentencePiece's bundled protobuf apart); use a "
                     "build without -DXLATE_SANITIZE for this binary, or one with "
                     "-DXLATE_SENTENCEPIECE_STATIC_DIR";
        return;
      }
      const bool deep_bind = !kSanitizerBuild && !kSelfContainedModule;
      void* handle = dlopen(candidate.c_str(),
                            RTLD_NOW | RTLD_LOCAL | (deep_bind ? RTLD_DEEPBIND : 0));
      if (handle == nullptr) {
        load_error = candidate + ": " + dlerror();
        return;
      }
      create = reinterpret_cast<CreateFunction>(dlsym(handle, "xlate_sentencepiece_create"));
      if (create == nullptr) load_error = candidate + ": no xlate_sentencepiece_create symbol";
      return;  // the module stays loaded for the life of the process
    }
    load_error = "the SentencePiece module libxlate_sentencepiece.so was not found (tried" +
                 tried + "); set XLATE_SENTENCEPIECE_MODULE to its path";
  });
  *error = load_error;
  return create;
}

}  // namespace

std::unique_ptr<Backend> create_backend(std::string* error) {
  const CreateFunction create = load_module(error);
  return create ? std::unique_ptr<Backend>(create()) : nullptr;
}

}  // namespace xlate::spm
