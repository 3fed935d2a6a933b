// What the subcommands share: the --output flag and the non-flag arguments.
#include "absl/flags/flag.h"
#include "cli/trainer/commands.h"

ABSL_FLAG(std::string, output, "",
          "prepare: the data directory to write; train: the run directory (checkpoints/, "
          "train_log.jsonl; an existing run resumes from its latest checkpoint); average: the "
          "model directory to write");

namespace xlate::trainer::tools {

std::vector<std::string>& positional_arguments() {
  static std::vector<std::string> arguments;
  return arguments;
}

}  // namespace xlate::trainer::tools
