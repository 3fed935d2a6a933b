#include "cli/subcommand_main.h"

#include <iostream>

#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"

namespace xlate::tools {

int run_subcommand_main(const SubcommandTool& tool, int argc, char** argv,
                        std::vector<std::string>* positional) {
  static std::string flags_dir;
  flags_dir = tool.flags_dir;
  absl::FlagsUsageConfig usage;
  usage.contains_help_flags = [](absl::string_view file) {
    return absl::StrContains(file, flags_dir);
  };
  usage.contains_helpshort_flags = usage.contains_help_flags;
  absl::SetFlagsUsageConfig(usage);
  absl::SetProgramUsageMessage(tool.usage);
  if (argc < 2 || argv[1][0] == '-') {
    std::cerr << tool.usage << "\n";
    return 2;
  }
  const std::string command = argv[1];
  std::vector<char*> rest{argv[0]};
  for (int i = 2; i < argc; ++i) rest.push_back(argv[i]);
  const std::vector<char*> left = absl::ParseCommandLine(static_cast<int>(rest.size()), rest.data());
  if (positional != nullptr) positional->assign(left.begin() + 1, left.end());
  for (const Subcommand& subcommand : tool.commands) {
    if (command == subcommand.name) return subcommand.run();
  }
  std::cerr << tool.program << ": unknown command \"" << command << "\"\n" << tool.usage << "\n";
  return 2;
}

}  // namespace xlate::tools
