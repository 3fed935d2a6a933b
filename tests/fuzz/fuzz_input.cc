#include "tests/fuzz/fuzz_input.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace xlate::fuzz {

namespace {

std::string& directory_path() {
  static std::string path;
  return path;
}

void remove_scratch_directory() {
  std::error_code ignored;  // a folder already gone is fine
  std::filesystem::remove_all(directory_path(), ignored);
}

}  // namespace

const std::string& scratch_directory() {
  static const bool made = [] {
    const char* tmp = std::getenv("TMPDIR");
    directory_path() = (std::filesystem::path(tmp ? tmp : "/tmp") /
                        ("xlate_fuzz_" + std::to_string(::getpid()))).string();
    std::filesystem::create_directories(directory_path());
    std::atexit(remove_scratch_directory);  // libFuzzer ends its runs with exit()
    return true;
  }();
  (void)made;
  return directory_path();
}

void write_bytes(const std::string& path, const uint8_t* data, size_t size) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
}

}  // namespace xlate::fuzz
