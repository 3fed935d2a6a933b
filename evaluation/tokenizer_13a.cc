#include "evaluation/tokenizer_13a.h"

#include <utility>

#include "evaluation/unicode_text.h"

namespace xlate::evaluation {
namespace {

// Python's text.replace(from, to): every non-overlapping occurrence, left to right.
void replace_all(std::string_view from, std::string_view to, std::string* text) {
  size_t pos = text->find(from);
  if (pos == std::string::npos) return;
  std::string out;
  size_t done = 0;
  for (; pos != std::string::npos; pos = text->find(from, done)) {
    out.append(*text, done, pos - done);
    out.append(to);
    done = pos + from.size();
  }
  out.append(*text, done, std::string::npos);
  *text = std::move(out);
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_period_or_comma(char c) { return c == '.' || c == ','; }

// The ASCII symbols that the first mteval rule surrounds with spaces.
bool is_split_symbol(char c) {
  const unsigned char u = static_cast<unsigned char>(c);
  return (u >= '{' && u <= '~') || (u >= '[' && u <= '`') || (u >= ' ' && u <= '&') ||
         (u >= '(' && u <= '+') || (u >= ':' && u <= '@') || u == '/';
}

// Each pass below is one regular-expression substitution of a two-character pattern, scanned
// left to right without overlaps (a matched pair is consumed and the scan resumes after it).
// Working on bytes gives the same result as on code points: the patterns' literal characters
// are ASCII, and a UTF-8 lead or continuation byte is, like the code point, "not a digit".

// ([^0-9])([.,]) -> "\1 \2 "
std::string split_period_comma_after_non_digit(const std::string& s) {
  std::string out;
  out.reserve(s.size() + s.size() / 4);
  size_t i = 0;
  while (i < s.size()) {
    if (i + 1 < s.size() && !is_digit(s[i]) && is_period_or_comma(s[i + 1])) {
      out += s[i];
      out += ' ';
      out += s[i + 1];
      out += ' ';
      i += 2;
    } else {
      out += s[i++];
    }
  }
  return out;
}

// ([.,])([^0-9]) -> " \1 \2"
std::string split_period_comma_before_non_digit(const std::string& s) {
  std::string out;
  out.reserve(s.size() + s.size() / 4);
  size_t i = 0;
  while (i < s.size()) {
    if (i + 1 < s.size() && is_period_or_comma(s[i]) && !is_digit(s[i + 1])) {
      out += ' ';
      out += s[i];
      out += ' ';
      out += s[i + 1];
      i += 2;
    } else {
      out += s[i++];
    }
  }
  return out;
}

// ([0-9])(-) -> "\1 \2 "
std::string split_dash_after_digit(const std::string& s) {
  std::string out;
  out.reserve(s.size() + s.size() / 4);
  size_t i = 0;
  while (i < s.size()) {
    if (i + 1 < s.size() && is_digit(s[i]) && s[i + 1] == '-') {
      out += s[i];
      out += " - ";
      i += 2;
    } else {
      out += s[i++];
    }
  }
  return out;
}

}  // namespace

std::string tokenize_13a(std::string_view line) {
  // The language-independent part. The replacements are applied one after another, as mteval
  // does ("&amp;lt;" becomes "<"), not in a single pass.
  std::string text(line);
  replace_all("<skipped>", "", &text);
  replace_all("-\n", "", &text);
  replace_all("\n", " ", &text);
  replace_all("&quot;", "\"", &text);
  replace_all("&amp;", "&", &text);
  replace_all("&lt;", "<", &text);
  replace_all("&gt;", ">", &text);

  // The language-dependent part, on the line padded with a space at each end.
  std::string spaced;
  spaced.reserve(text.size() * 2 + 2);
  spaced += ' ';
  for (char c : text) {
    if (is_split_symbol(c)) {
      spaced += ' ';
      spaced += c;
      spaced += ' ';
    } else {
      spaced += c;
    }
  }
  spaced += ' ';
  spaced = split_period_comma_after_non_digit(spaced);
  spaced = split_period_comma_before_non_digit(spaced);
  spaced = split_dash_after_digit(spaced);
  return join_words(split_whitespace(spaced));
}

}  // namespace xlate::evaluation
