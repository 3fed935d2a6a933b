#include "evaluation/unicode_text.h"

#include <algorithm>
#include <cstdint>
#include <iterator>

#include "absl/strings/str_cat.h"

namespace xlate::evaluation {
namespace {

// Code points [first, last] taken `stride` apart lowercase to code_point + delta. The ranges are
// sorted and disjoint. This is every single-code-point lowercase mapping of Unicode 14.0 (what
// Python 3.11's str.lower() applies); evaluation/make_lowercase_table.py regenerates it, and
// tests/evaluation/test_bleu_vs_sacrebleu.py checks every entry against Python.
struct LowercaseRange {
  char32_t first;
  char32_t last;
  int32_t stride;
  int32_t delta;
};

constexpr LowercaseRange kLowercaseRanges[] = {
    {0x0041, 0x005A, 1, 32},
    {0x00C0, 0x00D6, 1, 32},
    {0x00D8, 0x00DE, 1, 32},
    {0x0100, 0x012E, 2, 1},
    {0x0132, 0x0136, 2, 1},
    {0x0139, 0x0147, 2, 1},
    {0x014A, 0x0176, 2, 1},
    {0x0178, 0x0178, 1, -121},
    {0x0179, 0x017D, 2, 1},
    {0x0181, 0x0181, 1, 210},
    {0x0182, 0x0184, 2, 1},
    {0x0186, 0x0186, 1, 206},
    {0x0187, 0x0187, 1, 1},
    {0x0189, 0x018A, 1, 205},
    {0x018B, 0x018B, 1, 1},
    {0x018E, 0x018E, 1, 79},
    {0x018F, 0x018F, 1, 202},
    {0x0190, 0x0190, 1, 203},
    {0x0191, 0x0191, 1, 1},
    {0x0193, 0x0193, 1, 205},
    {0x0194, 0x0194, 1, 207},
    {0x0196, 0x0196, 1, 211},
    {0x0197, 0x0197, 1, 209},
    {0x0198, 0x0198, 1, 1},
    {0x019C, 0x019C, 1, 211},
    {0x019D, 0x019D, 1, 213},
    {0x019F, 0x019F, 1, 214},
    {0x01A0, 0x01A4, 2, 1},
    {0x01A6, 0x01A6, 1, 218},
    {0x01A7, 0x01A7, 1, 1},
    {0x01A9, 0x01A9, 1, 218},
    {0x01AC, 0x01AC, 1, 1},
    {0x01AE, 0x01AE, 1, 218},
    {0x01AF, 0x01AF, 1, 1},
    {0x01B1, 0x01B2, 1, 217},
    {0x01B3, 0x01B5, 2, 1},
    {0x01B7, 0x01B7, 1, 219},
    {0x01B8, 0x01B8, 1, 1},
    {0x01BC, 0x01BC, 1, 1},
    {0x01C4, 0x01C4, 1, 2},
    {0x01C5, 0x01C5, 1, 1},
    {0x01C7, 0x01C7, 1, 2},
    {0x01C8, 0x01C8, 1, 1},
    {0x01CA, 0x01CA, 1, 2},
    {0x01CB, 0x01DB, 2, 1},
    {0x01DE, 0x01EE, 2, 1},
    {0x01F1, 0x01F1, 1, 2},
    {0x01F2, 0x01F4, 2, 1},
    {0x01F6, 0x01F6, 1, -97},
    {0x01F7, 0x01F7, 1, -56},
    {0x01F8, 0x021E, 2, 1},
    {0x0220, 0x0220, 1, -130},
    {0x0222, 0x0232, 2, 1},
    {0x023A, 0x023A, 1, 10795},
    {0x023B, 0x023B, 1, 1},
    {0x023D, 0x023D, 1, -163},
    {0x023E, 0x023E, 1, 10792},
    {0x0241, 0x0241, 1, 1},
    {0x0243, 0x0243, 1, -195},
    {0x0244, 0x0244, 1, 69},
    {0x0245, 0x0245, 1, 71},
    {0x0246, 0x024E, 2, 1},
    {0x0370, 0x0372, 2, 1},
    {0x0376, 0x0376, 1, 1},
    {0x037F, 0x037F, 1, 116},
    {0x0386, 0x0386, 1, 38},
    {0x0388, 0x038A, 1, 37},
    {0x038C, 0x038C, 1, 64},
    {0x038E, 0x038F, 1, 63},
    {0x0391, 0x03A1, 1, 32},
    {0x03A3, 0x03AB, 1, 32},
    {0x03CF, 0x03CF, 1, 8},
    {0x03D8, 0x03EE, 2, 1},
    {0x03F4, 0x03F4, 1, -60},
    {0x03F7, 0x03F7, 1, 1},
    {0x03F9, 0x03F9, 1, -7},
    {0x03FA, 0x03FA, 1, 1},
    {0x03FD, 0x03FF, 1, -130},
    {0x0400, 0x040F, 1, 80},
    {0x0410, 0x042F, 1, 32},
    {0x0460, 0x0480, 2, 1},
    {0x048A, 0x04BE, 2, 1},
    {0x04C0, 0x04C0, 1, 15},
    {0x04C1, 0x04CD, 2, 1},
    {0x04D0, 0x052E, 2, 1},
    {0x0531, 0x0556, 1, 48},
    {0x10A0, 0x10C5, 1, 7264},
    {0x10C7, 0x10C7, 1, 7264},
    {0x10CD, 0x10CD, 1, 7264},
    {0x13A0, 0x13EF, 1, 38864},
    {0x13F0, 0x13F5, 1, 8},
    {0x1C90, 0x1CBA, 1, -3008},
    {0x1CBD, 0x1CBF, 1, -3008},
    {0x1E00, 0x1E94, 2, 1},
    {0x1E9E, 0x1E9E, 1, -7615},
    {0x1EA0, 0x1EFE, 2, 1},
    {0x1F08, 0x1F0F, 1, -8},
    {0x1F18, 0x1F1D, 1, -8},
    {0x1F28, 0x1F2F, 1, -8},
    {0x1F38, 0x1F3F, 1, -8},
    {0x1F48, 0x1F4D, 1, -8},
    {0x1F59, 0x1F5F, 2, -8},
    {0x1F68, 0x1F6F, 1, -8},
    {0x1F88, 0x1F8F, 1, -8},
    {0x1F98, 0x1F9F, 1, -8},
    {0x1FA8, 0x1FAF, 1, -8},
    {0x1FB8, 0x1FB9, 1, -8},
    {0x1FBA, 0x1FBB, 1, -74},
    {0x1FBC, 0x1FBC, 1, -9},
    {0x1FC8, 0x1FCB, 1, -86},
    {0x1FCC, 0x1FCC, 1, -9},
    {0x1FD8, 0x1FD9, 1, -8},
    {0x1FDA, 0x1FDB, 1, -100},
    {0x1FE8, 0x1FE9, 1, -8},
    {0x1FEA, 0x1FEB, 1, -112},
    {0x1FEC, 0x1FEC, 1, -7},
    {0x1FF8, 0x1FF9, 1, -128},
    {0x1FFA, 0x1FFB, 1, -126},
    {0x1FFC, 0x1FFC, 1, -9},
    {0x2126, 0x2126, 1, -7517},
    {0x212A, 0x212A, 1, -8383},
    {0x212B, 0x212B, 1, -8262},
    {0x2132, 0x2132, 1, 28},
    {0x2160, 0x216F, 1, 16},
    {0x2183, 0x2183, 1, 1},
    {0x24B6, 0x24CF, 1, 26},
    {0x2C00, 0x2C2F, 1, 48},
    {0x2C60, 0x2C60, 1, 1},
    {0x2C62, 0x2C62, 1, -10743},
    {0x2C63, 0x2C63, 1, -3814},
    {0x2C64, 0x2C64, 1, -10727},
    {0x2C67, 0x2C6B, 2, 1},
    {0x2C6D, 0x2C6D, 1, -10780},
    {0x2C6E, 0x2C6E, 1, -10749},
    {0x2C6F, 0x2C6F, 1, -10783},
    {0x2C70, 0x2C70, 1, -10782},
    {0x2C72, 0x2C72, 1, 1},
    {0x2C75, 0x2C75, 1, 1},
    {0x2C7E, 0x2C7F, 1, -10815},
    {0x2C80, 0x2CE2, 2, 1},
    {0x2CEB, 0x2CED, 2, 1},
    {0x2CF2, 0x2CF2, 1, 1},
    {0xA640, 0xA66C, 2, 1},
    {0xA680, 0xA69A, 2, 1},
    {0xA722, 0xA72E, 2, 1},
    {0xA732, 0xA76E, 2, 1},
    {0xA779, 0xA77B, 2, 1},
    {0xA77D, 0xA77D, 1, -35332},
    {0xA77E, 0xA786, 2, 1},
    {0xA78B, 0xA78B, 1, 1},
    {0xA78D, 0xA78D, 1, -42280},
    {0xA790, 0xA792, 2, 1},
    {0xA796, 0xA7A8, 2, 1},
    {0xA7AA, 0xA7AA, 1, -42308},
    {0xA7AB, 0xA7AB, 1, -42319},
    {0xA7AC, 0xA7AC, 1, -42315},
    {0xA7AD, 0xA7AD, 1, -42305},
    {0xA7AE, 0xA7AE, 1, -42308},
    {0xA7B0, 0xA7B0, 1, -42258},
    {0xA7B1, 0xA7B1, 1, -42282},
    {0xA7B2, 0xA7B2, 1, -42261},
    {0xA7B3, 0xA7B3, 1, 928},
    {0xA7B4, 0xA7C2, 2, 1},
    {0xA7C4, 0xA7C4, 1, -48},
    {0xA7C5, 0xA7C5, 1, -42307},
    {0xA7C6, 0xA7C6, 1, -35384},
    {0xA7C7, 0xA7C9, 2, 1},
    {0xA7D0, 0xA7D0, 1, 1},
    {0xA7D6, 0xA7D8, 2, 1},
    {0xA7F5, 0xA7F5, 1, 1},
    {0xFF21, 0xFF3A, 1, 32},
    {0x10400, 0x10427, 1, 40},
    {0x104B0, 0x104D3, 1, 40},
    {0x10570, 0x1057A, 1, 39},
    {0x1057C, 0x1058A, 1, 39},
    {0x1058C, 0x10592, 1, 39},
    {0x10594, 0x10595, 1, 39},
    {0x10C80, 0x10CB2, 1, 64},
    {0x118A0, 0x118BF, 1, 32},
    {0x16E40, 0x16E5F, 1, 32},
    {0x1E900, 0x1E921, 1, 34},
};

char32_t simple_lowercase(char32_t c) {
  if (c < 0x80) return (c >= 'A' && c <= 'Z') ? c + 32 : c;
  const LowercaseRange* end = std::end(kLowercaseRanges);
  // The last range whose first code point is <= c.
  const LowercaseRange* range = std::upper_bound(
      std::begin(kLowercaseRanges), end, c,
      [](char32_t value, const LowercaseRange& r) { return value < r.first; });
  if (range == std::begin(kLowercaseRanges)) return c;
  --range;
  if (c > range->last || (c - range->first) % range->stride != 0) return c;
  return static_cast<char32_t>(static_cast<int32_t>(c) + range->delta);
}

// Greek Extended spacing accents (category Sk) among the letters of U+1F00-U+1FFF.
bool is_greek_extended_accent(char32_t c) {
  return c == 0x1FBD || (c >= 0x1FBF && c <= 0x1FC1) || (c >= 0x1FCD && c <= 0x1FCF) ||
         (c >= 0x1FDD && c <= 0x1FDF) || (c >= 0x1FED && c <= 0x1FEF) || c == 0x1FFD ||
         c == 0x1FFE;
}

// Approximates Unicode's Case_Ignorable for the Final_Sigma context (see the header).
bool is_case_ignorable(char32_t c) {
  switch (c) {
    case '\'': case '.': case ':': case '^': case '`':
    case 0x00A8: case 0x00AD: case 0x00AF: case 0x00B4: case 0x00B7: case 0x00B8:
    case 0x0374: case 0x0375: case 0x037A: case 0x0384: case 0x0385: case 0x0387:
    case 0x2018: case 0x2019: case 0x2024: case 0x2027: case 0xFEFF:
      return true;
    default:
      break;
  }
  return (c >= 0x02B0 && c <= 0x036F) ||  // modifier letters, combining diacritics
         (c >= 0x0483 && c <= 0x0489) ||  // Cyrillic combining marks
         (c >= 0x1AB0 && c <= 0x1AFF) || (c >= 0x1DC0 && c <= 0x1DFF) ||
         is_greek_extended_accent(c) ||
         (c >= 0x200B && c <= 0x200F) || (c >= 0x202A && c <= 0x202E) ||
         (c >= 0x2060 && c <= 0x2064) || (c >= 0x20D0 && c <= 0x20FF) ||
         (c >= 0xFE00 && c <= 0xFE0F) || (c >= 0xFE20 && c <= 0xFE2F);
}

// Approximates Unicode's Cased for the Final_Sigma context (see the header).
bool is_cased(char32_t c) {
  if (simple_lowercase(c) != c) return true;
  return (c >= 'a' && c <= 'z') || c == 0x00AA || c == 0x00B5 || c == 0x00BA ||
         (c >= 0x00DF && c <= 0x024F && c != 0x00F7) ||  // Latin-1 lower, Latin Extended
         (c >= 0x0250 && c <= 0x02AF) ||                 // IPA
         (c >= 0x0370 && c <= 0x03FF && c != 0x0374 && c != 0x0375 && c != 0x037E &&
          !(c >= 0x0384 && c <= 0x0387) && c != 0x03F6) ||  // Greek
         (c >= 0x0430 && c <= 0x0481) || (c >= 0x048A && c <= 0x052F) ||  // Cyrillic
         (c >= 0x0560 && c <= 0x0588) ||                                    // Armenian
         (c >= 0x1E00 && c <= 0x1FFF && !is_greek_extended_accent(c)) ||
         (c >= 0x2160 && c <= 0x217F) ||  // Roman numerals
         (c >= 0x24B6 && c <= 0x24E9) ||  // circled letters
         (c >= 0x2C00 && c <= 0x2C7F) ||  // Glagolitic, Latin Extended-C
         (c >= 0xA640 && c <= 0xA66D) || (c >= 0xA680 && c <= 0xA69B) ||  // Cyrillic Ext-B
         (c >= 0xA722 && c <= 0xA76F) || (c >= 0xA771 && c <= 0xA787) ||  // Latin Ext-D
         (c >= 0xFB00 && c <= 0xFB06) || (c >= 0xFB13 && c <= 0xFB17) ||  // ligatures
         (c >= 0xFF41 && c <= 0xFF5A);  // fullwidth Latin
}

constexpr char32_t kCapitalSigma = 0x03A3;

// Python's Final_Sigma rule: Σ preceded by a cased letter (skipping case-ignorable ones) and not
// followed by one lowercases to ς, otherwise to σ.
char32_t lowercase_sigma(const std::vector<char32_t>& text, size_t i) {
  size_t j = i;
  while (j > 0 && is_case_ignorable(text[j - 1])) --j;
  if (j == 0 || !is_cased(text[j - 1])) return 0x03C3;
  j = i + 1;
  while (j < text.size() && is_case_ignorable(text[j])) ++j;
  return (j < text.size() && is_cased(text[j])) ? 0x03C3 : 0x03C2;
}

}  // namespace

absl::Status check_utf8(std::string_view text) {
  size_t offset = 0;
  if (!is_valid_utf8(text, &offset)) {
    return absl::InvalidArgumentError(absl::StrCat("invalid UTF-8 at byte ", offset));
  }
  return absl::OkStatus();
}

bool is_python_whitespace(char32_t c) {
  if (c < 0x80) return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20);
  return c == 0x0085 || c == 0x00A0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) ||
         c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

std::vector<std::string_view> split_whitespace(std::string_view text) {
  std::vector<std::string_view> words;
  size_t word_start = std::string_view::npos;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t here = pos;
    char32_t c;
    if (!decode_utf8(text, &pos, &c)) c = 0, pos = here + 1;  // not reached on valid UTF-8
    if (is_python_whitespace(c)) {
      if (word_start != std::string_view::npos) {
        words.push_back(text.substr(word_start, here - word_start));
        word_start = std::string_view::npos;
      }
    } else if (word_start == std::string_view::npos) {
      word_start = here;
    }
  }
  if (word_start != std::string_view::npos) words.push_back(text.substr(word_start));
  return words;
}

std::string join_words(const std::vector<std::string_view>& words) {
  size_t size = words.empty() ? 0 : words.size() - 1;
  for (std::string_view word : words) size += word.size();
  std::string joined;
  joined.reserve(size);
  for (size_t i = 0; i < words.size(); ++i) {
    if (i > 0) joined += ' ';
    joined.append(words[i]);
  }
  return joined;
}

std::string_view rstrip_whitespace(std::string_view text) {
  size_t end = 0;  // one past the last non-whitespace code point
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t here = pos;
    char32_t c;
    if (!decode_utf8(text, &pos, &c)) c = 0, pos = here + 1;
    if (!is_python_whitespace(c)) end = pos;
  }
  return text.substr(0, end);
}

std::string lowercase(std::string_view text) {
  std::vector<char32_t> code_points;
  code_points.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    char32_t c;
    if (!decode_utf8(text, &pos, &c)) c = 0xFFFD, ++pos;  // not reached on valid UTF-8
    code_points.push_back(c);
  }
  std::string lowered;
  lowered.reserve(text.size() + 8);
  for (size_t i = 0; i < code_points.size(); ++i) {
    const char32_t c = code_points[i];
    if (c == 0x0130) {  // İ: the one unconditional two-code-point mapping
      lowered.push_back('i');
      append_utf8(0x0307, &lowered);
    } else if (c == kCapitalSigma) {
      append_utf8(lowercase_sigma(code_points, i), &lowered);
    } else {
      append_utf8(simple_lowercase(c), &lowered);
    }
  }
  return lowered;
}

}  // namespace xlate::evaluation
