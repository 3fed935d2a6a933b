// A text file whose lines a translation replaces (TranslateDocument's text/plain): each line is
// a text of its own, translated as the server translates an entry (cut into sentences, its
// white space kept), and the file is the translated lines joined with the line endings they
// had ("\n" or "\r\n"; the last line's, or its lack of one, kept).
#pragma once

#include <string>
#include <vector>

#include "document/text_runs.h"

namespace xlate {

// A line of a text: its bytes without the line ending, and the ending ("\n", "\r\n", or "" for
// a last line without one).
struct LineSpan {
  size_t begin, end;
  std::string ending;
};
std::vector<LineSpan> line_spans(const std::string& text);

class TextLines : public TextRuns {
 public:
  explicit TextLines(const std::string& source);
  const std::vector<std::string>& texts() const override { return lines_; }
  std::string Rebuild(const std::vector<std::string>& translations,
                      const std::vector<WordLinks>& links) const override;

 private:
  std::vector<std::string> lines_, endings_;
};

}  // namespace xlate
