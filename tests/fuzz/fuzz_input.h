// Helpers of the fuzz targets: the readers under test take files, so an input is written to a
// scratch file first (in a folder of its own per process, under $TMPDIR).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace xlate::fuzz {

// A folder for this fuzzing process's scratch files (made once; removed when it exits normally).
const std::string& scratch_directory();

// Writes `size` bytes at `data` to `path` (replacing it).
void write_bytes(const std::string& path, const uint8_t* data, size_t size);

}  // namespace xlate::fuzz
