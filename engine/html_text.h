// The text of an HTML document or fragment that a translation replaces, and the document rebuilt
// around the translations: mime_type "text/html". Parsed by Gumbo (Debian's libgumbo, an HTML5
// parser), so that a document is read as a browser reads it; the rebuild replaces each text run's
// bytes in the source and leaves every other byte as it was sent (tags, attributes, comments,
// entities outside the text, whitespace around it).
//
// Translated: text nodes, each on its own (a run between two tags is one entry: inline markup
// such as <b> splits a sentence into runs). Not translated: script, style, noscript, template,
// textarea, code, kbd, samp, var and pre contents, and anything inside an element with
// translate="no" (HTML's attribute) or class "notranslate"; comments and attribute values.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/text_runs.h"

namespace xlate {

class HtmlText : public TextRuns {
 public:
  // INVALID_ARGUMENT when `source` is over 2^31 bytes (Gumbo's offsets); any other text parses,
  // as HTML5 defines for every input.
  static absl::StatusOr<HtmlText> Parse(std::string source);

  // Each translatable run's text: entities decoded, its leading and trailing whitespace left
  // out (they stay in the document).
  const std::vector<std::string>& texts() const override { return texts_; }

  // The source with run i's text replaced by translations[i], escaped for HTML text (&, <, >);
  // as many translations as texts().
  std::string Rebuild(const std::vector<std::string>& translations) const override;

 private:
  struct Run {
    size_t begin = 0, end = 0;  // the bytes of the run's text in the source, whitespace excluded
  };
  std::string source_;
  std::vector<std::string> texts_;
  std::vector<Run> runs_;
};

}  // namespace xlate
