// xlate: the command-line tool of the engine.
//   xlate translate --model_dir D [--input F] [--output F] [--beam_size 4] ...
//   xlate init-model --preset tiny|base|big --spm_from TEXT[,TEXT] --vocab_size V --out D
//   xlate bleu --ref REF [--hyp HYP] [--lowercase] [--json]
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "engine/tools/commands.h"

namespace {

constexpr char kUsage[] =
    "usage: xlate <command> [flags]\n"
    "commands:\n"
    "  translate   translate sentences (one per line) from --input or stdin\n"
    "  init-model  write a randomly initialised model directory with a trained SentencePiece\n"
    "              vocabulary (for tests and benchmarks)\n"
    "  bleu        score --hyp (or stdin) against --ref: sacreBLEU and tokenised BLEU\n"
    "Run `xlate <command> --help` for the flags.";

}  // namespace

int main(int argc, char** argv) {
  absl::FlagsUsageConfig usage;
  usage.contains_help_flags = [](absl::string_view file) {
    return absl::StrContains(file, "engine/tools/");
  };
  usage.contains_helpshort_flags = usage.contains_help_flags;
  absl::SetFlagsUsageConfig(usage);
  absl::SetProgramUsageMessage(kUsage);
  if (argc < 2 || argv[1][0] == '-') {
    std::cerr << kUsage << "\n";
    return 2;
  }
  const std::string command = argv[1];
  std::vector<char*> rest{argv[0]};
  for (int i = 2; i < argc; ++i) rest.push_back(argv[i]);
  absl::ParseCommandLine(static_cast<int>(rest.size()), rest.data());
  if (command == "translate") return xlate::tools::run_translate();
  if (command == "init-model") return xlate::tools::run_init_model();
  if (command == "bleu") return xlate::tools::run_bleu();
  std::cerr << "xlate: unknown command \"" << command << "\"\n" << kUsage << "\n";
  return 2;
}
