// xlate: the command-line tool of the engine.
//   xlate translate --model_dir D [--input F] [--output F] [--beam_size 4] ...
//   xlate init-model --preset tiny|base|big --spm_from TEXT[,TEXT] --vocab_size V --out D
//   xlate bleu --ref REF [--hyp HYP] [--lowercase] [--json]

#include "cli/xlate/commands.h"
#include "cli/subcommand_main.h"

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
  const xlate::tools::SubcommandTool tool{"xlate", kUsage, "cli/xlate/",
                                          {{"translate", xlate::tools::run_translate},
                                           {"init-model", xlate::tools::run_init_model},
                                           {"bleu", xlate::tools::run_bleu}}};
  return xlate::tools::run_subcommand_main(tool, argc, argv);
}
