// Pictures of a sentence pair's cross-attention, drawn the way the paper's Figures 3-5 show
// attention: for each decoder layer one PNG with a panel per head and one of the heads'
// average; target tokens down the side, source tokens across, weight 0 white to 1 dark blue.
// Drawn by PLplot (its pngcairo driver) where the build has it (XLATE_PLOTS); `xlate translate
// --attention_png DIR` writes them.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/alignment.h"

namespace xlate::tools {

struct AttentionLabels {
  std::vector<std::string> source_tokens;  // maps.source_tokens labels (the end token's too)
  std::vector<std::string> target_tokens;  // maps.target_tokens labels
  std::string title;                       // above every picture
};

// OK, or why this program cannot draw: built without PLplot (-DXLATE_PLOTS=OFF, as the server
// images are), or PLplot without its pngcairo driver (Debian: plplot-driver-cairo).
absl::Status attention_pictures_available();

// Writes `<path_prefix>layer<L>.png` for each layer L (0-based) of `maps`; returns their paths.
// A pair without target tokens draws nothing. Errors: as attention_pictures_available, and a
// file that cannot be written (named).
absl::StatusOr<std::vector<std::string>> draw_attention(const AttentionMaps& maps,
                                                       const AttentionLabels& labels,
                                                       const std::string& path_prefix);

}  // namespace xlate::tools
