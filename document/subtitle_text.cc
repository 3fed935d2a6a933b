#include "document/subtitle_text.h"

#include <cstdlib>
#include <stdexcept>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "document/text_lines.h"

namespace xlate {
namespace {

bool is_blank(const std::string& source, const LineSpan& line) {
  return absl::StripAsciiWhitespace(
             absl::string_view(source).substr(line.begin, line.end - line.begin))
      .empty();
}

// WebVTT's character references in cue text, as the characters (others stay as they are).
void append_decoded(absl::string_view text, std::string& out, size_t& at) {
  static const std::pair<const char*, const char*> kReferences[] = {
      {"&amp;", "&"}, {"&lt;", "<"}, {"&gt;", ">"}, {"&nbsp;", "\u00a0"},
      {"&lrm;", "\u200e"}, {"&rlm;", "\u200f"}};
  for (const auto& [reference, character] : kReferences) {
    if (absl::StartsWith(text.substr(at), reference)) {
      out += character;
      at += std::string_view(reference).size();
      return;
    }
  }
  out += text[at++];
}

std::string escaped_for_webvtt(absl::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '&') {
      out += "&amp;";
    } else if (c == '<') {
      out += "&lt;";
    } else if (c == '>') {
      out += "&gt;";
    } else {
      out += c;
    }
  }
  return out;
}

std::string as_is(absl::string_view text) { return std::string(text); }

// The name of a tag's element: "i" of <i> and </i>, "c" of <c.yellow>, "v" of <v Bob>.
std::string tag_name(absl::string_view tag) {
  size_t at = tag[1] == '/' ? 2 : 1;
  size_t end = at;
  while (end < tag.size() && absl::ascii_isalnum(static_cast<unsigned char>(tag[end]))) ++end;
  return absl::AsciiStrToLower(tag.substr(at, end - at));
}

// `placed` broken onto `lines` lines at the spaces outside tags nearest to equal visible
// lengths, joined by `ending`.
std::string wrapped(const std::string& placed, size_t lines, const std::string& ending) {
  if (lines <= 1) return placed;
  std::vector<size_t> spaces, visible_at;  // candidates, and the visible length before each
  size_t visible = 0;
  bool in_tag = false;
  for (size_t i = 0; i < placed.size(); ++i) {
    if (placed[i] == '<') in_tag = true;
    if (!in_tag) {
      if (placed[i] == ' ') {
        spaces.push_back(i);
        visible_at.push_back(visible);
      }
      ++visible;
    }
    if (placed[i] == '>') in_tag = false;
  }
  std::vector<size_t> breaks;
  size_t next = 0;
  for (size_t k = 1; k < lines && next < spaces.size(); ++k) {
    const double target = static_cast<double>(visible) * k / lines;
    size_t best = next;
    for (size_t c = next; c < spaces.size(); ++c) {
      if (std::abs(visible_at[c] - target) < std::abs(visible_at[best] - target)) best = c;
    }
    breaks.push_back(spaces[best]);
    next = best + 1;
  }
  std::string out;
  size_t from = 0;
  for (const size_t at : breaks) {
    out += placed.substr(from, at - from) + ending;
    from = at + 1;
  }
  return out + placed.substr(from);
}

}  // namespace

absl::StatusOr<SubtitleText> SubtitleText::Parse(std::string source, SubtitleFormat format) {
  SubtitleText subtitles;
  subtitles.format_ = format;
  subtitles.source_ = std::move(source);
  const std::string& text = subtitles.source_;
  const std::vector<LineSpan> lines = line_spans(text);
  if (format == SubtitleFormat::kWebVtt) {
    const size_t bom = absl::StartsWith(text, "\xEF\xBB\xBF") ? 3 : 0;
    if (lines.empty() || !absl::StartsWith(absl::string_view(text).substr(bom), "WEBVTT")) {
      return absl::InvalidArgumentError("not WebVTT: line 1 does not start with \"WEBVTT\"");
    }
  }
  size_t i = 0;
  while (i < lines.size()) {
    if (is_blank(text, lines[i])) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < lines.size() && !is_blank(text, lines[end])) ++end;
    // The block's timing line; the lines after it are the cue's text.
    size_t timing = i;
    while (timing < end && text.substr(lines[timing].begin, lines[timing].end - lines[timing].begin)
                                   .find("-->") == std::string::npos) {
      ++timing;
    }
    if (timing == end && format == SubtitleFormat::kSubRip) {
      return absl::InvalidArgumentError(absl::StrCat(
          "not SubRip: the block at line ", i + 1, " has no timing line (start --> end)"));
    }
    if (timing + 1 < end) {
      Cue cue;
      cue.begin = lines[timing + 1].begin;
      cue.end = lines[end - 1].end;
      cue.lines = end - timing - 1;
      cue.line_ending = lines[timing + 1].ending;
      std::string cue_text;
      std::vector<int> open;  // elements not closed yet, innermost last
      const absl::string_view raw = absl::string_view(text).substr(cue.begin, cue.end - cue.begin);
      size_t at = 0;
      while (at < raw.size()) {
        const char c = raw[at];
        if (c == '\r' || c == '\n') {
          if (c == '\n' || at + 1 >= raw.size() || raw[at + 1] != '\n') cue_text += ' ';
          ++at;
          continue;
        }
        const size_t close = c == '<' ? raw.find('>', at) : absl::string_view::npos;
        if (close == absl::string_view::npos) {
          if (format == SubtitleFormat::kWebVtt && c == '&') {
            append_decoded(raw, cue_text, at);
          } else {
            cue_text += c;
            ++at;
          }
          continue;
        }
        const std::string tag(raw.substr(at, close + 1 - at));
        at = close + 1;
        if (tag.size() > 2 && tag[1] == '/') {
          // Closes the innermost open element of its name (and any left open inside it).
          for (size_t o = open.size(); o-- > 0;) {
            if (tag_name(cue.elements[open[o]].open) != tag_name(tag)) continue;
            cue.elements[open[o]].close = tag;
            cue.elements[open[o]].span.end = cue_text.size();
            open.resize(o);
            break;
          }
          continue;
        }
        InlineElement element;
        element.span = {cue_text.size(), cue_text.size()};
        element.open = tag;
        element.parent = open.empty() ? -1 : open.back();
        cue.elements.push_back(std::move(element));
        // A timestamp (<00:01.500>) holds no text.
        if (!absl::ascii_isdigit(static_cast<unsigned char>(tag[1]))) {
          open.push_back(static_cast<int>(cue.elements.size()) - 1);
        }
      }
      for (const int o : open) cue.elements[o].span.end = cue_text.size();
      // A cue of tags and white space alone has nothing to translate: it stays as it is.
      if (absl::StripAsciiWhitespace(cue_text).empty()) {
        i = end;
        continue;
      }
      subtitles.needs_word_links_ = subtitles.needs_word_links_ || !cue.elements.empty();
      subtitles.texts_.push_back(std::move(cue_text));
      subtitles.cues_.push_back(std::move(cue));
    }
    i = end;
  }
  return subtitles;
}

std::string SubtitleText::Rebuild(const std::vector<std::string>& translations,
                                  const std::vector<WordLinks>& links) const {
  CheckRebuild("SubtitleText", translations, links);
  std::string (*escape)(absl::string_view) =
      format_ == SubtitleFormat::kWebVtt ? escaped_for_webvtt : as_is;
  std::string out;
  size_t from = 0;
  for (size_t c = 0; c < cues_.size(); ++c) {
    const Cue& cue = cues_[c];
    const std::string placed =
        cue.elements.empty()
            ? escape(translations[c])
            : place_inline_markup(texts_[c], translations[c], cue.elements, links[c], escape);
    out += source_.substr(from, cue.begin - from);
    out += wrapped(placed, cue.lines, cue.line_ending);
    from = cue.end;
  }
  return out + source_.substr(from);
}

}  // namespace xlate
