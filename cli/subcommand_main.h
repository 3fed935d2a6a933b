// The main() of a tool with subcommands (`xlate translate`, `xlate-trainer train`): the command
// name comes first, then its Abseil flags; --help lists the flags of the tool's own source files.
#pragma once

#include <string>
#include <vector>

namespace xlate::tools {

struct Subcommand {
  const char* name;
  int (*run)();  // returns the exit status
};

struct SubcommandTool {
  const char* program;    // "xlate"
  const char* usage;      // the usage text, listing the commands
  const char* flags_dir;  // --help shows flags defined in files whose path contains this
  std::vector<Subcommand> commands;
};

// Parses argv, runs the named command and returns its exit status (2 for a usage error).
// Arguments that are not flags are stored in *positional when it is not null.
int run_subcommand_main(const SubcommandTool& tool, int argc, char** argv,
                        std::vector<std::string>* positional = nullptr);

}  // namespace xlate::tools
