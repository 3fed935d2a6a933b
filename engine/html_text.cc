#include "engine/html_text.h"

#include <gumbo.h>

#include <cstring>
#include <limits>
#include <stdexcept>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace xlate {
namespace {

bool keeps_its_text(const GumboElement& element) {
  switch (element.tag) {
    case GUMBO_TAG_SCRIPT: case GUMBO_TAG_STYLE: case GUMBO_TAG_NOSCRIPT:
    case GUMBO_TAG_TEMPLATE: case GUMBO_TAG_TEXTAREA: case GUMBO_TAG_CODE:
    case GUMBO_TAG_KBD: case GUMBO_TAG_SAMP: case GUMBO_TAG_VAR: case GUMBO_TAG_PRE:
      return true;
    default:
      break;
  }
  if (const GumboAttribute* translate = gumbo_get_attribute(&element.attributes, "translate");
      translate != nullptr && absl::EqualsIgnoreCase(translate->value, "no")) {
    return true;
  }
  if (const GumboAttribute* classes = gumbo_get_attribute(&element.attributes, "class")) {
    for (absl::string_view name : absl::StrSplit(classes->value, ' ', absl::SkipEmpty())) {
      if (name == "notranslate") return true;
    }
  }
  return false;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'; }

}  // namespace

absl::StatusOr<HtmlText> HtmlText::Parse(std::string source) {
  if (source.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return absl::InvalidArgumentError("an HTML text over 2 GiB");
  }
  HtmlText html;
  html.source_ = std::move(source);
  GumboOutput* output = gumbo_parse_with_options(&kGumboDefaultOptions, html.source_.data(),
                                                 html.source_.size());
  // Depth-first, in document order, skipping the subtrees whose text stays.
  std::vector<const GumboNode*> pending = {output->root};
  while (!pending.empty()) {
    const GumboNode* node = pending.back();
    pending.pop_back();
    if (node->type == GUMBO_NODE_ELEMENT || node->type == GUMBO_NODE_TEMPLATE) {
      if (keeps_its_text(node->v.element)) continue;
      const GumboVector& children = node->v.element.children;
      for (unsigned i = children.length; i-- > 0;) {
        pending.push_back(static_cast<const GumboNode*>(children.data[i]));
      }
      continue;
    }
    if (node->type != GUMBO_NODE_TEXT) continue;  // whitespace, comments, CDATA stay
    const GumboText& text = node->v.text;
    if (text.original_text.data == nullptr || text.original_text.length == 0) continue;
    size_t begin = static_cast<size_t>(text.original_text.data - html.source_.data());
    size_t end = begin + text.original_text.length;
    if (end > html.source_.size()) continue;  // not from the source (never seen; kept as is)
    while (begin < end && is_space(html.source_[begin])) ++begin;
    while (end > begin && is_space(html.source_[end - 1])) --end;
    if (begin == end) continue;
    html.runs_.push_back(Run{begin, end});
    html.texts_.emplace_back(absl::StripAsciiWhitespace(text.text));
  }
  gumbo_destroy_output(&kGumboDefaultOptions, output);
  // Document order: the stack visits it so already; runs never overlap.
  return html;
}

std::string HtmlText::Rebuild(const std::vector<std::string>& translations) const {
  if (translations.size() != runs_.size()) {
    throw std::logic_error("HtmlText::Rebuild: one translation per text run");
  }
  std::string out;
  out.reserve(source_.size() + source_.size() / 4);
  size_t copied = 0;
  for (size_t i = 0; i < runs_.size(); ++i) {
    out.append(source_, copied, runs_[i].begin - copied);
    for (const char c : translations[i]) {
      switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        default: out += c;
      }
    }
    copied = runs_[i].end;
  }
  out.append(source_, copied, std::string::npos);
  return out;
}

}  // namespace xlate
