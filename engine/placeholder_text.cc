#include "engine/placeholder_text.h"

#include <cstring>
#include <stdexcept>

#include "absl/strings/ascii.h"

namespace xlate {
namespace {

// The end of the brace group that starts at `open` (source[open] == '{'), or npos when it has
// no matching '}'.
size_t brace_group_end(const std::string& source, size_t open) {
  int depth = 0;
  for (size_t i = open; i < source.size(); ++i) {
    if (source[i] == '{') ++depth;
    if (source[i] == '}' && --depth == 0) return i + 1;
  }
  return std::string::npos;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// The end of the printf conversion that starts at `percent` (source[percent] == '%'), or npos.
size_t conversion_end(const std::string& source, size_t percent) {
  size_t i = percent + 1;
  const auto at = [&](size_t k) { return k < source.size() ? source[k] : '\0'; };
  if (at(i) == '%') return i + 1;
  if (at(i) == '(') {  // Python's %(name)s
    const size_t close = source.find(')', i);
    if (close == std::string::npos || close == i + 1) return std::string::npos;
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

PlaceholderText::PlaceholderText(std::string source) : source_(std::move(source)) {
  size_t run_begin = 0;
  const auto end_run = [&](size_t end) {
    size_t begin = run_begin;
    while (begin < end && absl::ascii_isspace(static_cast<unsigned char>(source_[begin]))) ++begin;
    while (end > begin && absl::ascii_isspace(static_cast<unsigned char>(source_[end - 1]))) --end;
    if (begin < end) {
      runs_.push_back({begin, end});
      texts_.push_back(source_.substr(begin, end - begin));
    }
  };
  for (size_t i = 0; i < source_.size();) {
    size_t begin = i, end = std::string::npos;
    if (source_[i] == '{') {
      end = brace_group_end(source_, i);
    } else if (source_[i] == '$' && i + 1 < source_.size() && source_[i + 1] == '{') {
      end = brace_group_end(source_, i + 1);
    } else if (source_[i] == '%') {
      end = conversion_end(source_, i);
    }
    if (end == std::string::npos) {
      ++i;
      continue;
    }
    end_run(begin);
    placeholders_.push_back(source_.substr(begin, end - begin));
    run_begin = i = end;
  }
  end_run(source_.size());
}

std::string PlaceholderText::Rebuild(const std::vector<std::string>& translations,
                                     const std::vector<WordLinks>& /*links*/) const {
  return RebuildWithStarts(translations, nullptr);
}

std::string PlaceholderText::RebuildWithStarts(const std::vector<std::string>& translations,
                                               std::vector<size_t>* starts) const {
  if (translations.size() != runs_.size()) {
    throw std::logic_error("PlaceholderText::Rebuild: one translation per run");
  }
  std::string out;
  size_t copied = 0;
  for (size_t r = 0; r < runs_.size(); ++r) {
    out.append(source_, copied, runs_[r].begin - copied);
    if (starts != nullptr) starts->push_back(out.size());
    out += translations[r];
    copied = runs_[r].end;
  }
  out.append(source_, copied, std::string::npos);
  return out;
}

PlaceholdersWithin::PlaceholdersWithin(std::unique_ptr<const TextRuns> document)
    : document_(std::move(document)) {
  for (const std::string& run : document_->texts()) {
    runs_.emplace_back(run);
    first_text_.push_back(texts_.size());
    texts_.insert(texts_.end(), runs_.back().texts().begin(), runs_.back().texts().end());
  }
  first_text_.push_back(texts_.size());
}

std::string PlaceholdersWithin::Rebuild(const std::vector<std::string>& translations,
                                        const std::vector<WordLinks>& links) const {
  if (translations.size() != texts_.size() || (!links.empty() && links.size() != texts_.size())) {
    throw std::logic_error("PlaceholdersWithin::Rebuild: one translation per run");
  }
  std::vector<std::string> rebuilt;
  std::vector<WordLinks> rebuilt_links;
  for (size_t r = 0; r < runs_.size(); ++r) {
    const auto first = translations.begin() + static_cast<std::ptrdiff_t>(first_text_[r]);
    const auto end = translations.begin() + static_cast<std::ptrdiff_t>(first_text_[r + 1]);
    std::vector<size_t> starts;
    rebuilt.push_back(runs_[r].RebuildWithStarts({first, end}, &starts));
    if (links.empty()) continue;
    // The document run's links: its pieces' between the placeholders, moved to where they are.
    WordLinks& whole = rebuilt_links.emplace_back();
    whole.source_words = words_of(document_->texts()[r]);
    whole.target_words = words_of(rebuilt.back());
    for (size_t k = 0; k < starts.size(); ++k) {
      add_links(whole, links[first_text_[r] + k], runs_[r].run_begin(k), starts[k]);
    }
  }
  return document_->Rebuild(rebuilt, rebuilt_links);
}

}  // namespace xlate
