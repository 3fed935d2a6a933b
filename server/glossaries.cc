#include "server/glossaries.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace xlate::server {

absl::StatusOr<std::unique_ptr<Glossaries>> Glossaries::Load(
    const std::vector<std::string>& specs, const std::string& source_language,
    const std::string& target_language) {
  auto glossaries = std::make_unique<Glossaries>();
  glossaries->source_language_ = source_language;
  glossaries->target_language_ = target_language;
  for (const std::string& spec : specs) {
    const size_t equals = spec.find('=');
    if (equals == std::string::npos || equals == 0 || equals + 1 == spec.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--glossary \"", spec, "\" is not NAME=FILE"));
    }
    const std::string name = spec.substr(0, equals), path = spec.substr(equals + 1);
    if (!glossaries->files_.emplace(name, path).second) {
      return absl::InvalidArgumentError(absl::StrCat("--glossary names \"", name, "\" twice"));
    }
    auto glossary = Glossary::Load(path, source_language, target_language);
    if (!glossary.ok()) return glossary.status();
    absl::MutexLock lock(&glossaries->mutex_);
    glossaries->glossaries_[name] = std::make_shared<const Glossary>(*std::move(glossary));
  }
  return glossaries;
}

absl::Status Glossaries::Reload() {
  std::vector<std::string> failures;
  for (const auto& [name, path] : files_) {
    auto glossary = Glossary::Load(path, source_language_, target_language_);
    if (!glossary.ok()) {
      failures.push_back(absl::StrCat("glossary \"", name, "\" kept: ", glossary.status().message()));
      continue;
    }
    absl::MutexLock lock(&mutex_);
    glossaries_[name] = std::make_shared<const Glossary>(*std::move(glossary));
  }
  if (failures.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrJoin(failures, "; "));
}

std::shared_ptr<const Glossary> Glossaries::Find(const std::string& name) const {
  absl::MutexLock lock(&mutex_);
  const auto found = glossaries_.find(name);
  return found == glossaries_.end() ? nullptr : found->second;
}

std::vector<std::string> Glossaries::names() const {
  std::vector<std::string> names;
  for (const auto& [name, path] : files_) names.push_back(name);
  return names;
}

}  // namespace xlate::server
