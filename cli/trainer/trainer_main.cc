// xlate-trainer: trains the models that xlate-server and `xlate translate` load.
//   xlate-trainer prepare --train_source F --train_target F [--valid_source F ...] --output D
//   xlate-trainer train --data D --output RUN [--preset base] [--max_tokens 50000] ...
//   mpirun -np N xlate-trainer train ...          (data parallel over N ranks)
//   xlate-trainer average --output MODEL [--last 5] RUN | CHECKPOINT...

#include "cli/subcommand_main.h"
#include "cli/trainer/commands.h"

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
  namespace tools = xlate::trainer::tools;
  const xlate::tools::SubcommandTool tool{"xlate-trainer", kUsage, "cli/trainer/",
                                          {{"prepare", tools::run_prepare},
                                           {"train", tools::run_train},
                                           {"average", tools::run_average}}};
  return xlate::tools::run_subcommand_main(tool, argc, argv, &tools::positional_arguments());
}
