// Subcommands of the `xlate` tool. Each returns the process exit status.
#pragma once

namespace xlate::tools {

int run_translate();
int run_init_model();
int run_bleu();

}  // namespace xlate::tools
