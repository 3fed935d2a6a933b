// The server's named glossaries (xlate-server --glossary NAME=FILE, document/glossary.h), which
// requests name in glossary_config.glossary. Read at start (a file that does not parse stops
// the start, naming it); re-read on SIGHUP and ReloadModel, where a file that does not parse
// keeps its glossary in use and the error says why.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "document/glossary.h"

namespace xlate::server {

class Glossaries {
 public:
  // specs: "NAME=FILE" each; the languages choose an equivalent-term-sets CSV's columns (the
  // served model's). A spec without '=' or a name given twice is INVALID_ARGUMENT.
  static absl::StatusOr<std::unique_ptr<Glossaries>> Load(const std::vector<std::string>& specs,
                                                          const std::string& source_language,
                                                          const std::string& target_language);
  // Re-reads every file; OK, or the errors of those that kept their old glossary.
  absl::Status Reload();
  // The glossary named `name`, or null.
  std::shared_ptr<const Glossary> Find(const std::string& name) const;
  std::vector<std::string> names() const;

 private:
  std::string source_language_, target_language_;
  std::map<std::string, std::string> files_;  // name -> path
  mutable absl::Mutex mutex_;
  std::map<std::string, std::shared_ptr<const Glossary>> glossaries_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace xlate::server
