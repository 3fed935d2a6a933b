#include "engine/safetensors.h"

#include <fcntl.h>
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
#include "engine/json_fields.h"

namespace xlate {
namespace {

using Json = nlohmann::json;

// A header larger than this is not a header a sane writer produced.
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;

absl::Status corrupt(const std::string& path, const std::string& what) {
  return absl::DataLossError(absl::StrCat(path, ": ", what));
}

// The file's identity and size when it was opened. A file replaced or rewritten while it is
// read (a deploy copying over it, `kubectl cp`, a sync) differs in one of them afterwards.
struct FileFacts {
  dev_t device = 0;
  ino_t inode = 0;
  off_t size = 0;
  timespec modified{};
  bool operator==(const FileFacts& other) const {
    return device == other.device && inode == other.inode && size == other.size &&
           modified.tv_sec == other.modified.tv_sec && modified.tv_nsec == other.modified.tv_nsec;
  }
};

FileFacts facts_of(const struct stat& facts) {
  return {facts.st_dev, facts.st_ino, facts.st_size, facts.st_mtim};
}

}  // namespace

// An open file read with pread(2) into buffers of the reader's: unlike a memory map (whose pages
// past a shrunken end raise SIGBUS and end the process), a file that shrinks or is replaced
// while read gives a short read or other facts, and an error.
class OpenFile {
 public:
  static absl::StatusOr<std::unique_ptr<OpenFile>> Open(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      return absl::NotFoundError(absl::StrCat(path, ": cannot open: ", std::strerror(errno)));
    }
    auto file = std::unique_ptr<OpenFile>(new OpenFile(path, fd));
    struct stat facts {};
    if (::fstat(fd, &facts) != 0 || !S_ISREG(facts.st_mode)) {
      return absl::FailedPreconditionError(absl::StrCat(path, ": not a regular file"));
    }
    file->opened_ = facts_of(facts);
    return file;
  }
  ~OpenFile() { ::close(fd_); }
  uint64_t size() const { return static_cast<uint64_t>(opened_.size); }

  // Reads bytes [offset, offset + bytes) into `out`.
  absl::Status Read(uint64_t offset, uint64_t bytes, void* out) const {
    char* into = static_cast<char*>(out);
    uint64_t done = 0;
    while (done < bytes) {
      const ssize_t n = ::pread(fd_, into + done, bytes - done, static_cast<off_t>(offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        return absl::DataLossError(absl::StrCat(path_, ": read failed at byte ", offset + done,
                                                ": ", std::strerror(errno)));
      }
      if (n == 0) {
        return absl::DataLossError(absl::StrCat(
            path_, ": the file ended at byte ", offset + done, " of the ", size(),
            " it had when opened: it was truncated or replaced while being read"));
      }
      done += static_cast<uint64_t>(n);
    }
    return absl::OkStatus();
  }

  // OK when the path still names the file opened, unchanged; what was read is then the file
  // as it was: a writer that rewrote it in place (cp) changes its size or modification time, one
  // that renamed another over it (an atomic deploy) its inode.
  absl::Status CheckUnchanged() const {
    struct stat now_open {}, now_named {};
    if (::fstat(fd_, &now_open) != 0 || !(facts_of(now_open) == opened_) ||
        ::stat(path_.c_str(), &now_named) != 0 || !(facts_of(now_named) == opened_)) {
      return absl::DataLossError(absl::StrCat(
          path_, ": the file changed while it was read (replaced, rewritten or truncated); "
                 "nothing of it was used: load it again once it is complete"));
    }
    return absl::OkStatus();
  }

 private:
  OpenFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  const std::string path_;
  const int fd_;
  FileFacts opened_;
};

namespace {

struct CheckedEntry {
  DType dtype;
  std::vector<int64_t> shape;
  uint64_t begin, end;  // within the data
};

absl::StatusOr<CheckedEntry> parse_entry(const std::string& path, const std::string& name,
                                         const Json& entry, uint64_t data_bytes) {
  const std::string where = absl::StrCat("tensor \"", name, "\"");
  if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") ||
      !entry.contains("data_offsets")) {
    return corrupt(path, absl::StrCat(where, ": header entry needs dtype, shape, data_offsets"));
  }
  DType dtype;
  if (!entry["dtype"].is_string() || !dtype_from_name(entry["dtype"].get<std::string>(), &dtype)) {
    return corrupt(path, absl::StrCat(where, ": unsupported dtype ",
                                      json_excerpt(entry["dtype"]),
                                      "; expected F32, F16, BF16, I32 or I8"));
  }
  std::vector<int64_t> shape;
  if (!entry["shape"].is_array()) return corrupt(path, absl::StrCat(where, ": shape not a list"));
  uint64_t count = 1;
  for (const Json& extent : entry["shape"]) {
    if (!extent.is_number_unsigned() || extent.get<uint64_t>() > (1ull << 40)) {
      return corrupt(path, absl::StrCat(where, ": bad shape ", json_excerpt(entry["shape"])));
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
  return CheckedEntry{dtype, std::move(shape), begin, end};
}

}  // namespace

SafetensorsReader::SafetensorsReader(std::string path, std::unique_ptr<OpenFile> file)
    : path_(std::move(path)), file_(std::move(file)) {}

SafetensorsReader::~SafetensorsReader() = default;

absl::StatusOr<std::unique_ptr<SafetensorsReader>> SafetensorsReader::Open(
    const std::string& path) {
  absl::StatusOr<std::unique_ptr<OpenFile>> opened = OpenFile::Open(path);
  if (!opened.ok()) return opened.status();
  const OpenFile& file = **opened;
  if (file.size() < 8) {
    return corrupt(path, absl::StrCat("file is ", file.size(),
                                      " bytes, shorter than the 8-byte header length"));
  }
  unsigned char length_bytes[8];
  if (auto read = file.Read(0, 8, length_bytes); !read.ok()) return read;
  uint64_t header_bytes = 0;
  for (int i = 7; i >= 0; --i) header_bytes = (header_bytes << 8) | length_bytes[i];
  if (header_bytes > kMaxHeaderBytes || header_bytes > file.size() - 8) {
    return corrupt(path, absl::StrCat("header length ", header_bytes, " exceeds the file (",
                                      file.size(), " bytes) or the ", kMaxHeaderBytes,
                                      "-byte limit"));
  }
  std::string header_text(header_bytes, '\0');
  if (auto read = file.Read(8, header_bytes, header_text.data()); !read.ok()) return read;
  const Json header = Json::parse(header_text, nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object()) {
    return corrupt(path, "header is not a JSON object");
  }
  const uint64_t data_start = 8 + header_bytes;
  const uint64_t data_bytes = file.size() - data_start;
  auto reader = std::unique_ptr<SafetensorsReader>(new SafetensorsReader(path, *std::move(opened)));
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") continue;
    auto checked = parse_entry(path, name, entry, data_bytes);
    if (!checked.ok()) return checked.status();
    reader->entries_[name] = Entry{checked->dtype, std::move(checked->shape),
                                   data_start + checked->begin, data_start + checked->end};
  }
  return reader;
}

std::vector<std::string> SafetensorsReader::names() const {
  std::vector<std::string> names;
  for (const auto& entry : entries_) names.push_back(entry.first);
  return names;
}

absl::StatusOr<Tensor> SafetensorsReader::Read(const std::string& name) const {
  const auto found = entries_.find(name);
  if (found == entries_.end()) {
    return absl::NotFoundError(absl::StrCat(path_, ": no tensor \"", name, "\""));
  }
  const Entry& entry = found->second;
  Tensor tensor = Tensor::empty(entry.shape, entry.dtype);
  if (auto read = file_->Read(entry.begin, entry.end - entry.begin, tensor.raw_data());
      !read.ok()) {
    return read;
  }
  return tensor;
}

absl::Status SafetensorsReader::CheckUnchanged() const { return file_->CheckUnchanged(); }

absl::StatusOr<TensorMap> read_safetensors(const std::string& path) {
  absl::StatusOr<std::unique_ptr<SafetensorsReader>> reader = SafetensorsReader::Open(path);
  if (!reader.ok()) return reader.status();
  TensorMap tensors;
  for (const std::string& name : (*reader)->names()) {
    absl::StatusOr<Tensor> tensor = (*reader)->Read(name);
    if (!tensor.ok()) return tensor.status();
    tensors.emplace(name, *std::move(tensor));
  }
  if (auto unchanged = (*reader)->CheckUnchanged(); !unchanged.ok()) return unchanged;
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
