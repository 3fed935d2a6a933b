// xlate-trainer: trains the models that xlate-server and `xlate translate` load.
//   xlate-trainer prepare --train_source F --train_target F [--valid_source F ...] --output D
//   xlate-trainer train --data D --output RUN [--preset base] [--max_tokens 50000] ...
//   mpirun -np N xlate-trainer train ...          (data parallel over N ranks)
//   xlate-trainer average --output MODEL [--last 5] RUN | CHECKPOINT...
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "trainer/tools/commands.h"

namespace {

constexpr char kUsage[] =
    "usage: xlate-trainer <command> [flags]\n"
    "commands:\n"
    "  prepare  train a shared SentencePiece vocabulary and write the binary token corpus\n"
    "  train    train a Transformer (the paper's recipe); resumes from the latest checkpoint\n"
    "           of --output; run under `mpirun -np N` for N data-parallel ranks\n"
    "  average  average the last checkpoints into a model directory the engine loads\n"
    "Run `xlate-trainer <command> --help` for the flags.";

}  // namespace

int main(int argc, char** argv) {
  absl::FlagsUsageConfig usage;
  usage.contains_help_flags = [](absl::string_view file) {
    return absl::StrContains(file, "trainer/tools/");
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
  std::vector<char*> positional = absl::ParseCommandLine(static_cast<int>(rest.size()), rest.data());
  xlate::trainer::tools::set_positional_arguments({positional.begin() + 1, positional.end()});
  if (command == "prepare") return xlate::trainer::tools::run_prepare();
  if (command == "train") return xlate::trainer::tools::run_train();
  if (command == "average") return xlate::trainer::tools::run_average();
  std::cerr << "xlate-trainer: unknown command \"" << command << "\"\n" << kUsage << "\n";
  return 2;
}
