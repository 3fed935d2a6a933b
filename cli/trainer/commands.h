// Subcommands of `xlate-trainer`. Each returns the process exit status.
#pragma once

#include <string>
#include <vector>

#include "absl/flags/declare.h"

// Every command writes somewhere: a data directory, a run directory or a model directory.
ABSL_DECLARE_FLAG(std::string, output);

namespace xlate::trainer::tools {

// Arguments that are not flags (e.g. the checkpoints given to `average`), filled by main().
std::vector<std::string>& positional_arguments();

int run_prepare();
int run_train();
int run_average();

}  // namespace xlate::trainer::tools
