// Corpus BLEU (Papineni et al. 2002) computed exactly as sacreBLEU 2.x computes it, with one
// reference per sentence. docs/bleu.md gives the definitions; in short:
//   BLEU = BP * exp(mean over n = 1..4 of log p_n),  p_n = 100 * matched n-grams / hypothesis
//   n-grams (clipped counts, summed over the corpus), BP = exp(1 - r/c) when c < r, else 1.
// Two presets:
//   BleuOptions::sacrebleu()    sacreBLEU's default: 13a tokenisation, exp smoothing, cased;
//                               scores detokenised text (the WMT / "sacreBLEU" number).
//   BleuOptions::tokenised(lc)  the paper's / multi-bleu.perl's number: 13a-tokenised words, no
//                               smoothing, optionally lowercased (the Multi30k literature).
//
//   auto score = corpus_bleu(hypotheses, references, BleuOptions::sacrebleu());
//   if (score.ok()) std::cout << format_bleu(*score);  // BLEU = 34.12 65.3/40.1/27.0/18.9 (...)
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace xlate::evaluation {

constexpr int kBleuMaxOrder = 4;

struct BleuOptions {
  enum class Tokenization {
    k13a,  // sacreBLEU's "13a" (mteval-v13a), evaluation/tokenizer_13a.h
    kNone, // split on whitespace only
  };
  enum class Smoothing {
    kExp,    // sacreBLEU "exp" (mteval's NIST smoothing): the k-th order with no match counts
             // as 1 / 2^k matches
    kNone,   // a zero precision gives BLEU 0
    kFloor,  // sacreBLEU "floor": a zero count of matches becomes floor_value
  };

  bool lowercase = false;  // Python's str.lower() (evaluation/unicode_text.h)
  Tokenization tokenization = Tokenization::k13a;
  Smoothing smoothing = Smoothing::kExp;
  double floor_value = 0.1;  // used by Smoothing::kFloor only

  static BleuOptions sacrebleu() { return BleuOptions{}; }
  static BleuOptions tokenised(bool lowercase) {
    BleuOptions options;
    options.lowercase = lowercase;
    options.smoothing = Smoothing::kNone;
    return options;
  }
};

// The sufficient statistics of BLEU; those of a corpus are the sums over its sentences.
struct BleuStatistics {
  int64_t hypothesis_length = 0;  // words after tokenisation
  int64_t reference_length = 0;
  std::array<int64_t, kBleuMaxOrder> matches{};  // clipped n-gram matches, n = 1..4
  std::array<int64_t, kBleuMaxOrder> totals{};   // hypothesis n-grams, n = 1..4

  void add(const BleuStatistics& other);
};

struct BleuScore {
  double score = 0;                                // 0..100
  std::array<double, kBleuMaxOrder> precisions{};  // percent, after smoothing
  double brevity_penalty = 1;
  double ratio = 0;  // hypothesis_length / reference_length (0 when the latter is 0)
  int64_t hypothesis_length = 0;
  int64_t reference_length = 0;
  std::array<int64_t, kBleuMaxOrder> matches{};
  std::array<int64_t, kBleuMaxOrder> totals{};
};

// The statistics of one sentence pair. InvalidArgument if either is not valid UTF-8.
absl::StatusOr<BleuStatistics> sentence_bleu_statistics(std::string_view hypothesis,
                                                        std::string_view reference,
                                                        const BleuOptions& options);

// BLEU from (corpus) statistics, with options.smoothing.
BleuScore bleu_from_statistics(const BleuStatistics& statistics, const BleuOptions& options);

// Corpus BLEU of hypotheses[i] against references[i]. InvalidArgument when the counts differ
// (naming both) or a line is not valid UTF-8 (naming the side and its 1-based line number).
// An empty corpus scores 0.
absl::StatusOr<BleuScore> corpus_bleu(const std::vector<std::string>& hypotheses,
                                      const std::vector<std::string>& references,
                                      const BleuOptions& options);

// sacreBLEU's format: "BLEU = 34.12 65.3/40.1/27.0/18.9 (BP = 0.981 ratio = 0.981
// hyp_len = 12345 ref_len = 12580)" (one line).
std::string format_bleu(const BleuScore& score);

// sacreBLEU's signature fields for these options, e.g. "case:mixed|tok:13a|smooth:exp".
std::string bleu_signature(const BleuOptions& options);

}  // namespace xlate::evaluation
