#include "document/placeholder_text.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "absl/strings/ascii.h"
#include "document/inline_markup.h"

namespace xlate {
namespace {

// The end of the brace group that starts at `open` (source[open] == '{'), or npos when it has
// no matching '}'.
size_t brace_group_end(absl::string_view source, size_t open) {
  int depth = 0;
  for (size_t i = open; i < source.size(); ++i) {
    if (source[i] == '{') ++depth;
    if (source[i] == '}' && --depth == 0) return i + 1;
  }
  return std::string::npos;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// The end of the printf conversion that starts at `percent` (source[percent] == '%'), or npos.
size_t conversion_end(absl::string_view source, size_t percent) {
  size_t i = percent + 1;
  const auto at = [&](size_t k) { return k < source.size() ? source[k] : '\0'; };
  if (at(i) == '%') return i + 1;
  if (at(i) == '(') {  // Python's %(name)s
    const size_t close = source.find(')', i);
    if (close == absl::string_view::npos || close == i + 1) return std::string::npos;
    i = close + 1;
  } else {
    size_t digits = i;
    while (is_digit(at(digits))) ++digits;
    if (digits > i && at(digits) == '$') i = digits + 1;  // POSIX %1$s
  }
  // No space flag: "50 % off" is prose, not "% o".
  while (at(i) != '\0' && std::strchr("-+#0", at(i)) != nullptr) ++i;
  if (at(i) == '*') {
    ++i;
  } else {
    while (is_digit(at(i))) ++i;
  }
  if (at(i) == '.') {
    ++i;
    if (at(i) == '*') {
      ++i;
    } else {
      while (is_digit(at(i))) ++i;
    }
  }
  while (at(i) != '\0' && std::strchr("hlLqjzt", at(i)) != nullptr) ++i;
  if (at(i) != '\0' && std::strchr("diouxXeEfFgGaAcspn@", at(i)) != nullptr) return i + 1;
  return std::string::npos;
}

}  // namespace

std::vector<ByteRange> find_placeholders(absl::string_view text) {
  std::vector<ByteRange> found;
  for (size_t i = 0; i < text.size();) {
    size_t end = std::string::npos;
    if (text[i] == '{') {
      end = brace_group_end(text, i);
    } else if (text[i] == '$' && i + 1 < text.size() && text[i + 1] == '{') {
      end = brace_group_end(text, i + 1);
    } else if (text[i] == '%') {
      end = conversion_end(text, i);
    }
    if (end == std::string::npos) {
      ++i;
      continue;
    }
    found.push_back({i, end});
    i = end;
  }
  return found;
}

void append_without_placeholders(absl::string_view text, int parent,
                                 std::string (*escape)(absl::string_view),
                                 const std::function<void(absl::string_view)>& append,
                                 std::string& block_text, std::vector<InlineElement>& elements,
                                 bool text_may_follow) {
  const auto is_space = [](char c) { return absl::ascii_isspace(static_cast<unsigned char>(c)); };
  size_t from = 0;
  for (const ByteRange& placeholder : find_placeholders(text)) {
    append(text.substr(from, placeholder.begin - from));
    from = placeholder.end;
    InlineElement point;
    point.open = escape(text.substr(placeholder.begin, placeholder.end - placeholder.begin));
    point.parent = parent;
    const bool space_follows = from < text.size() && is_space(text[from]);
    const bool run_ends = from == text.size() && text_may_follow;
    if (run_ends && !block_text.empty() && block_text.back() == ' ') {
      point.space_before = true;  // the next run decides what follows (HtmlBlocks)
    } else if (!space_follows && !block_text.empty() && block_text.back() == ' ') {
      // "Hello {name}, you": the text reads "Hello, you", the placeholder after "Hello".
      block_text.pop_back();
      point.space_before = true;
    } else if (space_follows && (block_text.empty() || block_text.back() == ' ' ||
                                 block_text.back() == '\n')) {
      // "have {n} new": the text reads "have new", the placeholder before "new" (or, when no
      // word follows, after "have").
      while (from < text.size() && is_space(text[from]) && text[from] != '\n') ++from;
      point.space_before = !block_text.empty() && block_text.back() == ' ';
      point.space_after = true;
    } else if (space_follows) {
      point.space_after = true;  // "x{n} y": after "x", the space stays in the text
    }
    point.span = {block_text.size(), block_text.size()};
    elements.push_back(std::move(point));
  }
  append(text.substr(from));
}

namespace {
std::string verbatim(absl::string_view text) { return std::string(text); }
}  // namespace

PlaceholderText::PlaceholderText(std::string source) : source_(std::move(source)) {
  std::string text;
  append_without_placeholders(
      source_, -1, verbatim, [&](absl::string_view run) { text.append(run.data(), run.size()); },
      text, elements_);
  for (const InlineElement& point : elements_) placeholders_.push_back(point.open);
  // The white space at either end stays outside the translation.
  size_t begin = 0, end = text.size();
  while (begin < end && absl::ascii_isspace(static_cast<unsigned char>(text[begin]))) ++begin;
  while (end > begin && absl::ascii_isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  leading_ = text.substr(0, begin);
  trailing_ = text.substr(end);
  // A placeholder at the end with a space before it ("words %s\n") writes that space itself.
  if (!elements_.empty() && elements_.back().space_before && elements_.back().span.begin >= end &&
      !trailing_.empty() && trailing_[0] == ' ') {
    trailing_.erase(0, 1);
  }
  if (begin < end) texts_.push_back(text.substr(begin, end - begin));
  for (InlineElement& point : elements_) {
    point.span.begin = point.span.end = std::clamp(point.span.begin, begin, end) - begin;
  }
  if (texts_.empty()) {
    // Nothing to translate: the source comes back as it is.
    leading_ = source_;
    trailing_.clear();
    elements_.clear();
  }
}

std::string PlaceholderText::Rebuild(const std::vector<std::string>& translations,
                                     const std::vector<WordLinks>& links) const {
  CheckRebuild("PlaceholderText", translations, links);
  if (texts_.empty()) return leading_;
  return leading_ +
         (elements_.empty() ? translations[0]
                            : place_inline_markup(texts_[0], translations[0], elements_, links[0], verbatim)) +
         trailing_;
}

}  // namespace xlate
