#include "cli/xlate/attention_pictures.h"

#include <plplot/plstream.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace xlate::tools {
namespace {

constexpr char kDevice[] = "pngcairo";
// Geometry in pixels (pngcairo draws at 90 dots per inch): a weight's square, a character of
// the labels at kCharacterScale, and the room around a panel's squares.
constexpr int kCell = 26;
constexpr double kCharacterScale = 0.75;
constexpr int kCharacterWidth = 9;
constexpr int kCharacterHeight = 14;
constexpr int kPad = 14;

// PLplot reads '#' as the start of an escape sequence; "##" draws one '#'.
std::string plplot_text(const std::string& text) {
  return absl::StrReplaceAll(text, {{"#", "##"}});
}

size_t code_points(const std::string& text) {
  return static_cast<size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

size_t longest(const std::vector<std::string>& labels) {
  size_t most = 1;
  for (const std::string& label : labels) most = std::max(most, code_points(label));
  return most;
}

// PLplot ends the program on a fatal error (plexit); this names it first, and the status is
// the program's exit status.
int report_fatal_error(const char* message) {
  std::cerr << "xlate: PLplot stopped drawing the attention pictures: " << message << "\n";
  return 1;
}

// The weights of one panel (alignment_of: one head, or with head -1 the heads' average) as
// PLplot's image takes them: data[s][y], y = 0 the bottom row (the last target token).
std::vector<std::vector<PLFLT>> panel_weights(const AttentionMaps& maps, int layer, int head) {
  const int64_t targets = maps.target_tokens, sources = maps.source_tokens;
  const std::vector<float> weights = alignment_of(maps, {layer, head});  // [targets, sources]
  std::vector<std::vector<PLFLT>> data(static_cast<size_t>(sources),
                                       std::vector<PLFLT>(static_cast<size_t>(targets)));
  for (int64_t t = 0; t < targets; ++t) {
    for (int64_t s = 0; s < sources; ++s) data[s][targets - 1 - t] = weights[t * sources + s];
  }
  return data;
}

}  // namespace

absl::Status attention_pictures_available() {
  constexpr int kMaxDevices = 128;
  const char* menus[kMaxDevices];
  const char* names[kMaxDevices];
  int count = kMaxDevices;
  const char** menu_list = menus;
  const char** name_list = names;
  plgDevs(&menu_list, &name_list, &count);
  for (int i = 0; i < count; ++i) {
    if (std::strcmp(names[i], kDevice) == 0) return absl::OkStatus();
  }
  return absl::FailedPreconditionError(
      "PLplot has no pngcairo driver, which draws the attention pictures: install it "
      "(Debian: plplot-driver-cairo)");
}

absl::StatusOr<std::vector<std::string>> draw_attention(const AttentionMaps& maps,
                                                       const AttentionLabels& labels,
                                                       const std::string& path_prefix) {
  if (auto status = attention_pictures_available(); !status.ok()) return status;
  if (labels.source_tokens.size() != static_cast<size_t>(maps.source_tokens) ||
      labels.target_tokens.size() != static_cast<size_t>(maps.target_tokens)) {
    return absl::InvalidArgumentError("attention picture labels do not match the weights");
  }
  std::vector<std::string> paths;
  if (maps.target_tokens == 0) return paths;
  plsexit(report_fatal_error);

  // Panels: one per head, then the average, in a grid as square as it gets.
  const int panels = static_cast<int>(maps.heads) + 1;
  const int columns = static_cast<int>(std::ceil(std::sqrt(static_cast<double>(panels))));
  const int rows = (panels + columns - 1) / columns;
  const int left = kPad + static_cast<int>(longest(labels.target_tokens)) * kCharacterWidth;
  const int bottom = kPad + static_cast<int>(longest(labels.source_tokens)) * kCharacterWidth;
  const int top = 4 * kCharacterHeight;
  const int panel_width = left + static_cast<int>(maps.source_tokens) * kCell + kPad;
  const int panel_height = top + static_cast<int>(maps.target_tokens) * kCell + bottom;
  const PLFLT left_edge = static_cast<PLFLT>(left) / panel_width;
  const PLFLT right_edge = 1.0 - static_cast<PLFLT>(kPad) / panel_width;
  const PLFLT bottom_edge = static_cast<PLFLT>(bottom) / panel_height;
  const PLFLT top_edge = 1.0 - static_cast<PLFLT>(top) / panel_height;
  const PLFLT sources = static_cast<PLFLT>(maps.source_tokens);
  const PLFLT targets = static_cast<PLFLT>(maps.target_tokens);
  // Weight 0 white, 1 dark blue.
  const PLFLT intensity[] = {0.0, 1.0}, red[] = {1.0, 0.03}, green[] = {1.0, 0.19},
              blue[] = {1.0, 0.42};

  for (int64_t layer = 0; layer < maps.layers; ++layer) {
    const std::string path = absl::StrCat(path_prefix, "layer", layer, ".png");
    if (!std::ofstream(path, std::ios::binary)) {
      return absl::PermissionDeniedError(absl::StrCat("cannot write ", path));
    }
    {
      plstream picture;  // its destructor ends the stream and writes the file
      picture.sdev(kDevice);
      picture.sfnam(path.c_str());
      picture.spage(0, 0, columns * panel_width, rows * panel_height, 0, 0);
      picture.scolbg(255, 255, 255);
      picture.scol0(1, 0, 0, 0);
      picture.ssub(columns, rows);
      picture.init();
      picture.scmap1l(true, 2, intensity, red, green, blue, nullptr);
      picture.schr(0, kCharacterScale);
      for (int panel = 0; panel < panels; ++panel) {
        const int head = panel < maps.heads ? panel : -1;
        picture.adv(0);
        picture.vpor(left_edge, right_edge, bottom_edge, top_edge);
        picture.wind(0, sources, 0, targets);
        const std::vector<std::vector<PLFLT>> data =
            panel_weights(maps, static_cast<int>(layer), head);
        std::vector<const PLFLT*> columns_of_data;
        for (const auto& column : data) columns_of_data.push_back(column.data());
        picture.image(columns_of_data.data(), static_cast<PLINT>(maps.source_tokens),
                      static_cast<PLINT>(maps.target_tokens), 0, sources, 0, targets, 0.0, 1.0,
                      0, sources, 0, targets);
        picture.col0(1);
        picture.box("bc", 0, 0, "bc", 0, 0);
        for (int64_t s = 0; s < maps.source_tokens; ++s) {
          picture.mtex("bv", 0.5, (s + 0.5) / sources, 1.0,
                       plplot_text(labels.source_tokens[s]).c_str());
        }
        for (int64_t t = 0; t < maps.target_tokens; ++t) {
          picture.mtex("lv", 0.5, 1.0 - (t + 0.5) / targets, 1.0,
                       plplot_text(labels.target_tokens[t]).c_str());
        }
        const std::string heading =
            head < 0 ? absl::StrCat("layer ", layer, ", heads averaged")
                     : absl::StrCat("layer ", layer, ", head ", head);
        picture.mtex("t", 0.8, 0.5, 0.5, plplot_text(heading).c_str());
        if (panel == 0 && !labels.title.empty()) {
          picture.mtex("t", 2.4, 0.0, 0.0, plplot_text(labels.title).c_str());
        }
      }
    }
    paths.push_back(path);
  }
  return paths;
}

}  // namespace xlate::tools
