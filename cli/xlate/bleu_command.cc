// xlate bleu --ref REF [--hyp HYP] [--lowercase] [--json]: corpus BLEU of HYP (default stdin)
// against REF, one sentence per line, as two scores (docs/bleu.md):
//   sacreBLEU: BLEU = ...        sacreBLEU's default (13a, exp smoothing, cased)
//   tokenised BLEU: BLEU = ...   13a-tokenised, no smoothing; lowercased with --lowercase
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/xlate/commands.h"
#include "evaluation/bleu.h"

ABSL_FLAG(std::string, ref, "", "reference translations, one per line (required)");
ABSL_FLAG(std::string, hyp, "", "hypotheses (system output), one per line (default: stdin)");
ABSL_FLAG(bool, lowercase, false, "lowercase the tokenised BLEU (the sacreBLEU score stays cased)");
ABSL_FLAG(bool, json, false, "print one JSON object with both scores instead of two lines");

namespace xlate::tools {
namespace {

using evaluation::BleuOptions;
using evaluation::BleuScore;

// The lines of `in`, split at '\n' only (a '\r' stays, as in sacreBLEU, and counts as space).
std::vector<std::string> read_lines(std::istream& in) {
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

absl::StatusOr<std::vector<std::string>> read_file_lines(const std::string& flag,
                                                         const std::string& path) {
  std::ifstream file(path);
  if (!file) return absl::NotFoundError(absl::StrCat("cannot open --", flag, " ", path));
  std::vector<std::string> lines = read_lines(file);
  if (file.bad()) return absl::DataLossError(absl::StrCat("error reading --", flag, " ", path));
  return lines;
}

std::string json_number(double value) { return absl::StrFormat("%.17g", value); }

std::string score_json(const BleuScore& score, const BleuOptions& options) {
  std::vector<std::string> precisions;
  for (double p : score.precisions) precisions.push_back(json_number(p));
  return absl::StrCat(
      "{\"score\": ", json_number(score.score), ", \"precisions\": [",
      absl::StrJoin(precisions, ", "), "], \"brevity_penalty\": ",
      json_number(score.brevity_penalty), ", \"ratio\": ", json_number(score.ratio),
      ", \"hyp_len\": ", score.hypothesis_length, ", \"ref_len\": ", score.reference_length,
      ", \"matches\": [", absl::StrJoin(score.matches, ", "), "], \"totals\": [",
      absl::StrJoin(score.totals, ", "), "], \"signature\": \"",
      evaluation::bleu_signature(options), "\", \"text\": \"", evaluation::format_bleu(score),
      "\"}");
}

}  // namespace

int run_bleu() {
  const std::string ref_path = absl::GetFlag(FLAGS_ref);
  if (ref_path.empty()) {
    std::cerr << "xlate bleu: --ref is required\n";
    return 2;
  }
  auto references = read_file_lines("ref", ref_path);
  if (!references.ok()) {
    std::cerr << "xlate bleu: " << references.status().message() << "\n";
    return 1;
  }
  absl::StatusOr<std::vector<std::string>> hypotheses;
  const std::string hyp_path = absl::GetFlag(FLAGS_hyp);
  if (hyp_path.empty()) {
    hypotheses = read_lines(std::cin);
  } else {
    hypotheses = read_file_lines("hyp", hyp_path);
  }
  if (!hypotheses.ok()) {
    std::cerr << "xlate bleu: " << hypotheses.status().message() << "\n";
    return 1;
  }

  const BleuOptions sacrebleu_options = BleuOptions::sacrebleu();
  const BleuOptions tokenised_options = BleuOptions::tokenised(absl::GetFlag(FLAGS_lowercase));
  auto sacrebleu = evaluation::corpus_bleu(*hypotheses, *references, sacrebleu_options);
  if (!sacrebleu.ok()) {
    std::cerr << "xlate bleu: " << sacrebleu.status().message() << "\n";
    return 1;
  }
  auto tokenised = evaluation::corpus_bleu(*hypotheses, *references, tokenised_options);
  if (!tokenised.ok()) {
    std::cerr << "xlate bleu: " << tokenised.status().message() << "\n";
    return 1;
  }
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << "{\"sentences\": " << hypotheses->size()
              << ", \"sacrebleu\": " << score_json(*sacrebleu, sacrebleu_options)
              << ", \"tokenised\": " << score_json(*tokenised, tokenised_options) << "}\n";
  } else {
    std::cout << "sacreBLEU: " << evaluation::format_bleu(*sacrebleu) << "\n"
              << "tokenised BLEU" << (tokenised_options.lowercase ? " (lowercased)" : "")
              << ": " << evaluation::format_bleu(*tokenised) << "\n";
  }
  return 0;
}

}  // namespace xlate::tools
