// ZIP archives for the tests of the archive formats (document/zip_archive.h): written by libzip
// from a map of entries, and one entry read back.
#pragma once

#include <gtest/gtest.h>
#include <zip.h>

#include <map>
#include <string>

#include "document/zip_archive.h"

namespace xlate {

// A ZIP archive of `entries` (deflated), written by libzip.
inline std::string make_archive(const std::map<std::string, std::string>& entries) {
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* target = zip_source_buffer_create(nullptr, 0, 0, &error);
  zip_source_keep(target);
  zip_t* archive = zip_open_from_source(target, ZIP_TRUNCATE, &error);
  for (const auto& [name, data] : entries) {
    zip_source_t* source = zip_source_buffer(archive, data.data(), data.size(), 0);
    zip_file_add(archive, name.c_str(), source, 0);
  }
  zip_close(archive);
  zip_stat_t stat;
  zip_source_open(target);
  zip_source_stat(target, &stat);
  std::string out(stat.size, '\0');
  zip_source_read(target, out.data(), out.size());
  zip_source_close(target);
  zip_source_free(target);
  return out;
}

inline std::string read_entry(const std::string& archive, const std::string& name) {
  auto zip = ZipArchive::Open(archive);
  EXPECT_TRUE(zip.ok()) << zip.status();
  auto data = zip->Read(name);
  EXPECT_TRUE(data.ok()) << data.status();
  return data.ok() ? *data : "";
}

}  // namespace xlate
