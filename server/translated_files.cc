#include "server/translated_files.h"

#include "server/random_id.h"

namespace xlate::server {

TranslatedFiles::TranslatedFiles(int64_t max_bytes, absl::Duration keep_for,
                                 std::function<absl::Time()> clock)
    : max_bytes_(max_bytes), keep_for_(keep_for), clock_(std::move(clock)) {}

std::optional<std::string> TranslatedFiles::Put(File file) {
  const int64_t size = static_cast<int64_t>(file.content.size());
  if (size > max_bytes_) return std::nullopt;
  std::string id = random_id();
  absl::MutexLock lock(&mutex_);
  const absl::Time now = clock_();
  DropExpiredLocked(now);
  while (bytes_ + size > max_bytes_) DropOldestLocked();
  bytes_ += size;
  order_.push_back(id);
  files_[id] = {std::move(file), now + keep_for_};
  return id;
}

std::optional<TranslatedFiles::File> TranslatedFiles::Get(const std::string& id) {
  absl::MutexLock lock(&mutex_);
  DropExpiredLocked(clock_());
  const auto found = files_.find(id);
  if (found == files_.end()) return std::nullopt;
  return found->second.file;
}

int64_t TranslatedFiles::bytes() const {
  absl::MutexLock lock(&mutex_);
  return bytes_;
}

void TranslatedFiles::DropExpiredLocked(absl::Time now) {
  // Files expire in the order they came.
  while (!order_.empty() && files_.at(order_.front()).expires <= now) DropOldestLocked();
}

void TranslatedFiles::DropOldestLocked() {
  const auto oldest = files_.find(order_.front());
  bytes_ -= static_cast<int64_t>(oldest->second.file.content.size());
  files_.erase(oldest);
  order_.pop_front();
}

}  // namespace xlate::server
