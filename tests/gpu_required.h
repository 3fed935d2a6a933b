// How a CUDA test decides to run: on a machine with a GPU it runs; on one without, it skips,
// unless XLATE_EXPECT_GPU is set (the GPU bundle sets it, bench/gpu/run_checks.sh): there a
// missing GPU is a failure, so a broken driver or an unseen device cannot turn every CUDA test
// into a silent skip. A driver that is loaded but fails throws from device_count(), which
// gtest reports as a failure.
#pragma once

#include <cstdlib>

#include <gtest/gtest.h>

#include "engine/ops/backend.h"

namespace xlate::testing {

inline bool gpu_expected() {
  const char* expected = std::getenv("XLATE_EXPECT_GPU");
  return expected != nullptr && expected[0] != '\0' && expected[0] != '0';
}

}  // namespace xlate::testing

// In a test body or SetUp: returns from it, skipped (no GPU) or failed (XLATE_EXPECT_GPU set).
#define XLATE_SKIP_WITHOUT_GPU()                                                             \
  do {                                                                                       \
    if (::xlate::device_count(::xlate::Device::kCUDA) > 0) break;                                   \
    if (::xlate::testing::gpu_expected()) {                                                  \
      FAIL() << "XLATE_EXPECT_GPU is set, but no CUDA device is visible";                   \
    }                                                                                        \
    GTEST_SKIP() << "no CUDA device on this machine";                                       \
  } while (0)
