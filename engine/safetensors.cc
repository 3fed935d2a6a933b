#include "engine/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <memory>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace xlate {
namespace {

using Json = nlohmann::json;

// A header larger than this is not a header a sane writer produced.
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;

absl::Status corrupt(const std::string& path, const std::string& what) {
  return absl::DataLossError(absl::StrCat(path, ": ", what));
}

absl::StatusOr<Tensor> parse_entry(const std::string& path, const std::string& name,
                                   const Json& entry, const char* data, uint64_t data_bytes) {
  const std::string where = absl::StrCat("tensor \"", name, "\"");
  if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") ||
      !entry.contains("data_offsets")) {
    return corrupt(path, absl::StrCat(where, ": header entry needs dtype, shape, data_offsets"));
  }
  DType dtype;
  if (!entry["dtype"].is_string() || !dtype_from_name(entry["dtype"].get<std::string>(), &dtype)) {
    return corrupt(path, absl::StrCat(where, ": unsupported dtype ", entry["dtype"].dump(),
                                      "; expected F32, F16, BF16, I32 or I8"));
  }
  std::vector<int64_t> shape;
  if (!entry["shape"].is_array()) return corrupt(path, absl::StrCat(where, ": shape not a list"));
  uint64_t count = 1;
  for (const Json& extent : entry["shape"]) {
    if (!extent.is_number_unsigned() || extent.get<uint64_t>() > (1ull << 40)) {
      return corrupt(path, absl::StrCat(where, ": bad shape ", entry["shape"].dump()));
    }
    shape.push_back(extent.get<int64_t>());
    count *= extent.get<uint64_t>();
    if (count > (1ull << 40)) return corrupt(path, absl::StrCat(where, ": shape too large"));
  }
  const Json& offsets = entry["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
      !offsets[1].is_number_unsigned()) {
    return corrupt(path, absl::StrCat(where, ": data_offsets must be [begin, end]"));
  }
  const uint64_t begin = offsets[0].get<uint64_t>(), end = offsets[1].get<uint64_t>();
  if (begin > end || end > data_bytes) {
    return corrupt(path, absl::StrCat(where, ": data_offsets [", begin, ", ", end,
                                      "] fall outside the ", data_bytes,
                                      " data bytes (truncated file?)"));
  }
  if (end - begin != count * dtype_size(dtype)) {
    return corrupt(path, absl::StrCat(where, ": ", end - begin, " bytes stored, but shape ",
                                      shape_string(shape), " of ", dtype_name(dtype), " needs ",
                                      count * dtype_size(dtype)));
  }
  Tensor tensor = Tensor::empty(shape, dtype);
  std::memcpy(tensor.raw_data(), data + begin, end - begin);
  // The copied file pages leave this process's memory at once (the file is mapped, read-only):
  // loading then needs the weights' size, not twice it.
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t first = reinterpret_cast<uintptr_t>(data + begin) / page * page;
  const uintptr_t last = reinterpret_cast<uintptr_t>(data + end) / page * page;
  if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
  return tensor;
}

// A file mapped read-only for the length of a read; empty files map nothing.
class MappedFile {
 public:
  static absl::StatusOr<std::unique_ptr<MappedFile>> Open(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      return absl::NotFoundError(absl::StrCat(path, ": cannot open: ", std::strerror(errno)));
    }
    struct stat facts {};
    if (::fstat(fd, &facts) != 0 || !S_ISREG(facts.st_mode)) {
      ::close(fd);
      return absl::FailedPreconditionError(absl::StrCat(path, ": not a regular file"));
    }
    auto file = std::unique_ptr<MappedFile>(new MappedFile());
    file->size_ = static_cast<size_t>(facts.st_size);
    if (file->size_ > 0) {
      void* mapped = ::mmap(nullptr, file->size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (mapped == MAP_FAILED) {
        const std::string reason = std::strerror(errno);
        ::close(fd);
        return absl::ResourceExhaustedError(absl::StrCat(path, ": cannot map: ", reason));
      }
      file->data_ = static_cast<const char*>(mapped);
    }
    ::close(fd);
    return file;
  }
  ~MappedFile() {
    if (data_ != nullptr) ::munmap(const_cast<char*>(data_), size_);
  }
  const char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  MappedFile() = default;
  const char* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace

absl::StatusOr<TensorMap> read_safetensors(const std::string& path) {
  absl::StatusOr<std::unique_ptr<MappedFile>> file = MappedFile::Open(path);
  if (!file.ok()) return file.status();
  const absl::string_view bytes((*file)->data(), (*file)->size());
  if (bytes.size() < 8) {
    return corrupt(path, absl::StrCat("file is ", bytes.size(),
                                      " bytes, shorter than the 8-byte header length"));
  }
  uint64_t header_bytes = 0;
  for (int i = 7; i >= 0; --i) header_bytes = (header_bytes << 8) | static_cast<uint8_t>(bytes[i]);
  if (header_bytes > kMaxHeaderBytes || header_bytes > bytes.size() - 8) {
    return corrupt(path, absl::StrCat("header length ", header_bytes, " exceeds the file (",
                                      bytes.size(), " bytes) or the ", kMaxHeaderBytes,
                                      "-byte limit"));
  }
  const Json header = Json::parse(bytes.begin() + 8, bytes.begin() + 8 + header_bytes, nullptr,
                                  /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object()) {
    return corrupt(path, "header is not a JSON object");
  }
  const char* data = bytes.data() + 8 + header_bytes;
  const uint64_t data_bytes = bytes.size() - 8 - header_bytes;
  TensorMap tensors;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") continue;
    auto tensor = parse_entry(path, name, entry, data, data_bytes);
    if (!tensor.ok()) return tensor.status();
    tensors.emplace(name, *std::move(tensor));
  }
  return tensors;
}

absl::Status write_file_atomically(const std::string& path, const std::string& contents) {
  const std::string temporary = absl::StrCat(path, ".tmp.", ::getpid());
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    return absl::PermissionDeniedError(
        absl::StrCat(path, ": cannot create ", temporary, ": ", std::strerror(errno)));
  }
  size_t written = 0;
  while (written < contents.size()) {
    const ssize_t n = ::write(fd, contents.data() + written, contents.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      const std::string reason = std::strerror(errno);
      ::close(fd);
      ::unlink(temporary.c_str());
      return absl::ResourceExhaustedError(absl::StrCat(path, ": write failed: ", reason));
    }
    written += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(temporary.c_str());
    return absl::DataLossError(absl::StrCat(path, ": fsync/close failed: ", std::strerror(errno)));
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    ::unlink(temporary.c_str());
    return absl::PermissionDeniedError(
        absl::StrCat(path, ": rename failed: ", std::strerror(errno)));
  }
  // The rename itself is durable only once the directory entry is on disk.
  const std::string directory = std::filesystem::path(path).parent_path().string();
  const int directory_fd = ::open(directory.empty() ? "." : directory.c_str(), O_RDONLY);
  if (directory_fd >= 0) {
    ::fsync(directory_fd);
    ::close(directory_fd);
  }
  return absl::OkStatus();
}

absl::Status write_safetensors(const std::string& path, const TensorMap& tensors,
                               const std::map<std::string, std::string>& metadata) {
  Json header = Json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    header[name] = {{"dtype", dtype_name(tensor.dtype())},
                    {"shape", tensor.shape()},
                    {"data_offsets", {offset, offset + tensor.nbytes()}}};
    offset += tensor.nbytes();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // keep tensor data 8-byte aligned
  std::string contents(8, '\0');
  for (int i = 0; i < 8; ++i) contents[i] = static_cast<char>((text.size() >> (8 * i)) & 0xff);
  contents += text;
  contents.reserve(contents.size() + offset);
  for (const auto& entry : tensors) {
    contents.append(static_cast<const char*>(entry.second.raw_data()), entry.second.nbytes());
  }
  return write_file_atomically(path, contents);
}

}  // namespace xlate
