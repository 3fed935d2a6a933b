// attention_pictures.h in a build without PLplot (-DXLATE_PLOTS=OFF, or PLplot not found):
// every call says so.
#include "cli/xlate/attention_pictures.h"

namespace xlate::tools {

absl::Status attention_pictures_available() {
  return absl::UnimplementedError(
      "this build of xlate draws no pictures: it was built without PLplot (-DXLATE_PLOTS=OFF or "
      "libplplot-dev missing; the server images are built so); rebuild with PLplot and its "
      "pngcairo driver (Debian: libplplot-dev plplot-driver-cairo)");
}

absl::StatusOr<std::vector<std::string>> draw_attention(const AttentionMaps&,
                                                       const AttentionLabels&,
                                                       const std::string&) {
  return attention_pictures_available();
}

}  // namespace xlate::tools
