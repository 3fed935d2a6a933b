// Subtitles whose cue text a translation replaces: SubRip (.srt) and WebVTT (.vtt). Each cue's
// text is one text (its lines joined by spaces: a cue is shown, and read, at once), translated
// whole and written back on as many lines as it had, broken at the spaces nearest to equal
// lengths. Everything else comes back as it was, byte for byte: cue numbers, identifiers and
// timings with their settings, in their order; the WebVTT header and its NOTE, STYLE and
// REGION blocks; blank lines and line endings.
//
// Tags in a cue (<i>, <b>, <u>, <font color=...> in SubRip; <c.class>, <v Speaker>, <lang>,
// <ruby> and timestamps in WebVTT) go back around the target words aligned to the words they
// held (document/inline_markup.h); a WebVTT cue's character references (&amp; &lt; &gt; ...)
// are read as the characters and written back escaped.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "document/inline_markup.h"
#include "document/text_runs.h"

namespace xlate {

enum class SubtitleFormat { kSubRip, kWebVtt };

class SubtitleText : public TextRuns {
 public:
  // INVALID_ARGUMENT naming the line: a SubRip block without a timing line ("-->"), a WebVTT
  // file that does not start with "WEBVTT"; `source` must be UTF-8 (checked when its cues are
  // translated).
  static absl::StatusOr<SubtitleText> Parse(std::string source, SubtitleFormat format);

  // Each cue's text: its lines joined by one space, tags taken out.
  const std::vector<std::string>& texts() const override { return texts_; }
  bool needs_word_links() const override { return needs_word_links_; }
  std::string Rebuild(const std::vector<std::string>& translations,
                      const std::vector<WordLinks>& links) const override;

 private:
  struct Cue {
    size_t begin = 0, end = 0;  // the bytes of its text lines in source_, line endings inside
    size_t lines = 1;
    std::string line_ending;  // between its lines ("\n" or "\r\n")
    std::vector<InlineElement> elements;  // its tags
  };
  SubtitleFormat format_ = SubtitleFormat::kSubRip;
  std::string source_;
  std::vector<Cue> cues_;
  std::vector<std::string> texts_;
  bool needs_word_links_ = false;
};

}  // namespace xlate
