#include "document/zip_archive.h"

#include <zip.h>

#include <algorithm>
#include <stdexcept>

#include "absl/strings/str_cat.h"

namespace xlate {
namespace {

struct ArchiveCloser {
  // Discards: a read-only archive has nothing to write, and a failed rewrite must not.
  void operator()(zip_t* archive) const { zip_discard(archive); }
};
using Archive = std::unique_ptr<zip_t, ArchiveCloser>;

struct SourceFreer {
  void operator()(zip_source_t* source) const { zip_source_free(source); }
};
using Source = std::unique_ptr<zip_source_t, SourceFreer>;

struct FileCloser {
  void operator()(zip_file_t* file) const { zip_fclose(file); }
};

std::string error_text(zip_error_t* error) {
  std::string text = zip_error_strerror(error);
  zip_error_fini(error);
  return text;
}

// `bytes` as a libzip source the caller owns (libzip reads it in place; it must outlive the
// source).
Source source_of(const std::string& bytes, zip_error_t* error) {
  return Source(zip_source_buffer_create(bytes.data(), bytes.size(), 0, error));
}

// Opens `source` (which the archive then holds a reference to) with `flags`.
absl::StatusOr<Archive> open_archive(zip_source_t* source, int flags) {
  zip_error_t error;
  zip_error_init(&error);
  zip_source_keep(source);
  Archive archive(zip_open_from_source(source, flags, &error));
  if (archive == nullptr) {
    zip_source_free(source);
    return absl::InvalidArgumentError(
        absl::StrCat("not a ZIP archive that can be read: ", error_text(&error)));
  }
  zip_error_fini(&error);
  return archive;
}

}  // namespace

absl::StatusOr<ZipArchive> ZipArchive::Open(std::string bytes) {
  ZipArchive zip;
  zip.bytes_ = std::move(bytes);
  zip_error_t error;
  zip_error_init(&error);
  Source source = source_of(zip.bytes_, &error);
  if (source == nullptr) return absl::InternalError(error_text(&error));
  zip_error_fini(&error);
  auto archive = open_archive(source.get(), ZIP_RDONLY | ZIP_CHECKCONS);
  if (!archive.ok()) return archive.status();
  const zip_int64_t entries = zip_get_num_entries(archive->get(), 0);
  if (entries < 0 || static_cast<size_t>(entries) > kMaxEntries) {
    return absl::InvalidArgumentError(absl::StrCat("the archive lists ", entries,
                                                   " entries; the limit is ", kMaxEntries));
  }
  for (zip_int64_t i = 0; i < entries; ++i) {
    const char* name = zip_get_name(archive->get(), static_cast<zip_uint64_t>(i), 0);
    zip.names_.push_back(name != nullptr ? name : "");
  }
  return zip;
}

bool ZipArchive::contains(const std::string& name) const {
  return std::find(names_.begin(), names_.end(), name) != names_.end();
}

absl::StatusOr<std::string> ZipArchive::Read(const std::string& name) const {
  zip_error_t error;
  zip_error_init(&error);
  Source source = source_of(bytes_, &error);
  if (source == nullptr) return absl::InternalError(error_text(&error));
  zip_error_fini(&error);
  auto archive = open_archive(source.get(), ZIP_RDONLY);
  if (!archive.ok()) return archive.status();
  const zip_int64_t index = zip_name_locate(archive->get(), name.c_str(), 0);
  if (index < 0) return absl::NotFoundError(absl::StrCat("the archive has no ", name));
  zip_stat_t stat;
  zip_stat_init(&stat);
  if (zip_stat_index(archive->get(), static_cast<zip_uint64_t>(index), 0, &stat) == 0 &&
      (stat.valid & ZIP_STAT_ENCRYPTION_METHOD) && stat.encryption_method != ZIP_EM_NONE) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, " is encrypted: send the file without a password (it cannot be read, nor "
              "written back)"));
  }
  std::unique_ptr<zip_file_t, FileCloser> file(
      zip_fopen_index(archive->get(), static_cast<zip_uint64_t>(index), 0));
  if (file == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, " cannot be read: ", zip_strerror(archive->get())));
  }
  // Read past the limit by one byte to tell a part at the limit from one over it, whatever
  // size the entry's header claims.
  std::string data;
  char buffer[1 << 16];
  while (true) {
    const zip_int64_t got = zip_fread(file.get(), buffer, sizeof buffer);
    if (got < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, " is damaged: ", zip_file_strerror(file.get())));
    }
    if (got == 0) break;
    data.append(buffer, static_cast<size_t>(got));
    if (data.size() > kMaxPartBytes) {
      return absl::InvalidArgumentError(absl::StrCat(name, " inflates to over ", kMaxPartBytes,
                                                     " bytes, the limit for one part"));
    }
  }
  return data;
}

absl::StatusOr<std::string> ZipArchive::WithReplaced(
    const std::map<std::string, std::string>& replaced) const {
  // libzip rewrites the archive into the source it was opened from; that source is a copy of
  // the original bytes, read back once the archive is closed.
  zip_error_t error;
  zip_error_init(&error);
  Source source(zip_source_buffer_create(nullptr, 0, 0, &error));
  if (source == nullptr) return absl::ResourceExhaustedError(error_text(&error));
  zip_error_fini(&error);
  if (zip_source_begin_write(source.get()) != 0 ||
      zip_source_write(source.get(), bytes_.data(), bytes_.size()) !=
          static_cast<zip_int64_t>(bytes_.size()) ||
      zip_source_commit_write(source.get()) != 0) {
    return absl::ResourceExhaustedError("the archive cannot be copied in memory");
  }
  auto archive = open_archive(source.get(), 0);
  if (!archive.ok()) return archive.status();
  for (const auto& [name, data] : replaced) {
    const zip_int64_t index = zip_name_locate(archive->get(), name.c_str(), 0);
    if (index < 0) throw std::logic_error("ZipArchive::WithReplaced: no entry " + name);
    // The data is read when the archive is closed, below, while `replaced` is alive.
    zip_source_t* part = zip_source_buffer(archive->get(), data.data(), data.size(), 0);
    if (part == nullptr ||
        zip_file_replace(archive->get(), static_cast<zip_uint64_t>(index), part, 0) != 0) {
      if (part != nullptr) zip_source_free(part);
      return absl::InternalError(
          absl::StrCat("cannot replace ", name, ": ", zip_strerror(archive->get())));
    }
  }
  if (zip_close(archive->get()) != 0) {
    return absl::InternalError(
        absl::StrCat("cannot write the archive: ", zip_strerror(archive->get())));
  }
  archive->release();  // closed
  zip_stat_t stat;
  if (zip_source_open(source.get()) != 0 || zip_source_stat(source.get(), &stat) != 0) {
    return absl::InternalError("the written archive cannot be read back");
  }
  std::string out(static_cast<size_t>(stat.size), '\0');
  const zip_int64_t got = zip_source_read(source.get(), out.data(), out.size());
  zip_source_close(source.get());
  if (got != static_cast<zip_int64_t>(out.size())) {
    return absl::InternalError("the written archive reads back short");
  }
  return out;
}

}  // namespace xlate
