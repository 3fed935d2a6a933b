// A ZIP archive held in memory (libzip, Debian's libzip-dev): the container of the office and
// e-book formats (DOCX, PPTX, XLSX, ODF, EPUB). Their XML parts are read out, and the archive is
// written again with some parts replaced and every other entry's data copied as it was
// (libzip copies an unchanged entry's compressed bytes; images, styles, relationships and
// metadata come through byte for byte).
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace xlate {

class ZipArchive {
 public:
  // A part is read only up to this many bytes once inflated: a ZIP bomb (a small entry that
  // inflates to gigabytes) is refused by name instead of exhausting memory.
  static constexpr size_t kMaxPartBytes = size_t{64} << 20;
  // Entries an archive may list.
  static constexpr size_t kMaxEntries = 65536;

  // INVALID_ARGUMENT when `bytes` is not a ZIP archive libzip can read (libzip's reason), or
  // lists more than kMaxEntries entries.
  static absl::StatusOr<ZipArchive> Open(std::string bytes);

  // The entries' names, in the archive's order.
  const std::vector<std::string>& names() const { return names_; }
  bool contains(const std::string& name) const;
  // Entry `name` inflated: NOT_FOUND without it, INVALID_ARGUMENT when it is encrypted, over
  // kMaxPartBytes or its data is damaged (libzip's reason: a CRC that does not match, a bad
  // deflate stream).
  absl::StatusOr<std::string> Read(const std::string& name) const;
  // The archive with each entry named in `replaced` holding the new bytes instead (names the
  // archive lacks are a programming error: std::logic_error), every other entry as it was;
  // RESOURCE_EXHAUSTED or INTERNAL when libzip cannot write it.
  absl::StatusOr<std::string> WithReplaced(
      const std::map<std::string, std::string>& replaced) const;

 private:
  ZipArchive() = default;
  std::string bytes_;
  std::vector<std::string> names_;
};

}  // namespace xlate
