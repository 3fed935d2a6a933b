#include "evaluation/bleu.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "evaluation/tokenizer_13a.h"
#include "evaluation/unicode_text.h"

namespace xlate::evaluation {
namespace {

// sacreBLEU's my_log: log, with log(0) floored to a large negative number (so BLEU is 0).
double floored_log(double x) { return x == 0.0 ? -9999999999.0 : std::log(x); }

// sacreBLEU's preprocessing: lowercase (optional), strip trailing whitespace, tokenise. The
// result's words are separated by single spaces.
std::string preprocess(std::string_view line, const BleuOptions& options) {
  std::string lowered;
  if (options.lowercase) {
    lowered = lowercase(line);
    line = lowered;
  }
  line = rstrip_whitespace(line);
  switch (options.tokenization) {
    case BleuOptions::Tokenization::k13a:
      return tokenize_13a(line);
    case BleuOptions::Tokenization::kNone:
      break;
  }
  return join_words(split_whitespace(line));
}

// The n-grams (n = 1..4) of a space-joined word sequence, as views into it: an n-gram is the
// substring from its first word's start to its last word's end, so one map holds all orders.
class NGrams {
 public:
  explicit NGrams(std::string_view text) : text_(text) {
    size_t start = 0;
    while (start < text.size()) {
      size_t end = text.find(' ', start);
      if (end == std::string_view::npos) end = text.size();
      starts_.push_back(start);
      ends_.push_back(end);
      start = end + 1;
    }
  }
  int64_t num_words() const { return static_cast<int64_t>(starts_.size()); }
  // Calls f(order_index, ngram) for every n-gram, order_index = n - 1.
  template <typename F>
  void for_each(F&& f) const {
    for (size_t n = 1; n <= static_cast<size_t>(kBleuMaxOrder); ++n) {
      for (size_t i = 0; i + n <= starts_.size(); ++i) {
        f(n - 1, text_.substr(starts_[i], ends_[i + n - 1] - starts_[i]));
      }
    }
  }

 private:
  std::string_view text_;
  std::vector<size_t> starts_;
  std::vector<size_t> ends_;
};

BleuStatistics statistics_of_preprocessed(std::string_view hypothesis,
                                          std::string_view reference) {
  const NGrams hypothesis_ngrams(hypothesis);
  const NGrams reference_ngrams(reference);
  // Reference n-grams not yet matched: clipping min(hypothesis count, reference count) is the
  // same as letting each reference occurrence match at most one hypothesis occurrence.
  std::unordered_map<std::string_view, int64_t> unmatched;
  reference_ngrams.for_each([&](size_t, std::string_view ngram) { ++unmatched[ngram]; });
  BleuStatistics statistics;
  statistics.hypothesis_length = hypothesis_ngrams.num_words();
  statistics.reference_length = reference_ngrams.num_words();
  hypothesis_ngrams.for_each([&](size_t order, std::string_view ngram) {
    ++statistics.totals[order];
    auto it = unmatched.find(ngram);
    if (it != unmatched.end() && it->second > 0) {
      --it->second;
      ++statistics.matches[order];
    }
  });
  return statistics;
}

}  // namespace

void BleuStatistics::add(const BleuStatistics& other) {
  hypothesis_length += other.hypothesis_length;
  reference_length += other.reference_length;
  for (int n = 0; n < kBleuMaxOrder; ++n) {
    matches[n] += other.matches[n];
    totals[n] += other.totals[n];
  }
}

absl::StatusOr<BleuStatistics> sentence_bleu_statistics(std::string_view hypothesis,
                                                        std::string_view reference,
                                                        const BleuOptions& options) {
  if (absl::Status status = check_utf8(hypothesis); !status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("hypothesis: ", status.message()));
  }
  if (absl::Status status = check_utf8(reference); !status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("reference: ", status.message()));
  }
  return statistics_of_preprocessed(preprocess(hypothesis, options),
                                    preprocess(reference, options));
}

// Follows sacreBLEU's BLEU.compute_bleu step by step (same operations in the same order), so
// that the two agree to the last bits, not just to 0.01.
BleuScore bleu_from_statistics(const BleuStatistics& statistics, const BleuOptions& options) {
  BleuScore result;
  result.hypothesis_length = statistics.hypothesis_length;
  result.reference_length = statistics.reference_length;
  result.matches = statistics.matches;
  result.totals = statistics.totals;
  const double hypothesis_length = static_cast<double>(statistics.hypothesis_length);
  const double reference_length = static_cast<double>(statistics.reference_length);
  result.ratio = statistics.reference_length > 0 ? hypothesis_length / reference_length : 0.0;
  if (statistics.hypothesis_length < statistics.reference_length) {
    result.brevity_penalty = statistics.hypothesis_length > 0
                                 ? std::exp(1.0 - reference_length / hypothesis_length)
                                 : 0.0;
  }
  if (std::all_of(statistics.matches.begin(), statistics.matches.end(),
                  [](int64_t m) { return m == 0; })) {
    return result;  // score and precisions 0
  }
  double exp_smoothing = 1.0;
  for (int n = 0; n < kBleuMaxOrder; ++n) {
    const double total = static_cast<double>(statistics.totals[n]);
    if (statistics.totals[n] == 0) break;  // the remaining precisions stay 0
    if (statistics.matches[n] > 0) {
      result.precisions[n] = 100.0 * static_cast<double>(statistics.matches[n]) / total;
      continue;
    }
    switch (options.smoothing) {
      case BleuOptions::Smoothing::kExp:
        exp_smoothing *= 2.0;
        result.precisions[n] = 100.0 / (exp_smoothing * total);
        break;
      case BleuOptions::Smoothing::kFloor:
        result.precisions[n] = 100.0 * options.floor_value / total;
        break;
      case BleuOptions::Smoothing::kNone:
        break;
    }
  }
  double log_sum = 0.0;
  for (double precision : result.precisions) log_sum += floored_log(precision);
  result.score = result.brevity_penalty * std::exp(log_sum / kBleuMaxOrder);
  return result;
}

absl::StatusOr<BleuScore> corpus_bleu(const std::vector<std::string>& hypotheses,
                                      const std::vector<std::string>& references,
                                      const BleuOptions& options) {
  if (hypotheses.size() != references.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the hypotheses have ", hypotheses.size(), " lines but the references have ",
                     references.size()));
  }
  BleuStatistics corpus;
  for (size_t i = 0; i < hypotheses.size(); ++i) {
    const char* side = "hypothesis";
    absl::Status status = check_utf8(hypotheses[i]);
    if (status.ok()) {
      side = "reference";
      status = check_utf8(references[i]);
    }
    if (!status.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(side, " line ", i + 1, ": ", status.message()));
    }
    corpus.add(statistics_of_preprocessed(preprocess(hypotheses[i], options),
                                          preprocess(references[i], options)));
  }
  return bleu_from_statistics(corpus, options);
}

std::string format_bleu(const BleuScore& score) {
  return absl::StrFormat(
      "BLEU = %.2f %.1f/%.1f/%.1f/%.1f (BP = %.3f ratio = %.3f hyp_len = %d ref_len = %d)",
      score.score, score.precisions[0], score.precisions[1], score.precisions[2],
      score.precisions[3], score.brevity_penalty, score.ratio, score.hypothesis_length,
      score.reference_length);
}

std::string bleu_signature(const BleuOptions& options) {
  std::string smoothing;
  switch (options.smoothing) {
    case BleuOptions::Smoothing::kExp:
      smoothing = "exp";
      break;
    case BleuOptions::Smoothing::kNone:
      smoothing = "none";
      break;
    case BleuOptions::Smoothing::kFloor:
      smoothing = absl::StrFormat("floor[%.2f]", options.floor_value);
      break;
  }
  return absl::StrCat("case:", options.lowercase ? "lc" : "mixed", "|tok:",
                      options.tokenization == BleuOptions::Tokenization::k13a ? "13a" : "none",
                      "|smooth:", smoothing);
}

}  // namespace xlate::evaluation
