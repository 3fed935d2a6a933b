// Where tests find their data: CMake compiles the locations in (tests/CMakeLists.txt); an
// environment variable of the same name overrides each.
#pragma once

#include <cstdlib>
#include <string>

namespace xlate::testing {

inline std::string env_or(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value ? value : fallback;
}

// tests/data: tiny models with golden logits from tests/reference/make_golden.py.
inline std::string test_data_dir() { return env_or("XLATE_TEST_DATA", XLATE_TEST_DATA_DIR); }
inline std::string golden_model_dir() { return test_data_dir() + "/tiny_golden"; }
// A tiny random model with a SentencePiece vocabulary, written by `xlate init-model` (fixture).
inline std::string tiny_model_dir() { return env_or("XLATE_TINY_MODEL", XLATE_TEST_TINY_MODEL); }
// A scratch directory for files a test writes.
// Real English sentences (Multi30k test_2016_flickr, from the fixture).
inline std::string sample_text() { return env_or("XLATE_SAMPLE_TEXT", XLATE_TEST_SAMPLE_TEXT); }
inline std::string scratch_dir() { return env_or("XLATE_SCRATCH", XLATE_TEST_SCRATCH); }

}  // namespace xlate::testing
