#include "server/api_keys.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace xlate::server {
namespace {

ApiKeys::Digest digest_of(absl::string_view key) {
  ApiKeys::Digest digest;
  SHA256(reinterpret_cast<const unsigned char*>(key.data()), key.size(), digest.data());
  return digest;
}

std::string hex_name(const ApiKeys::Digest& digest) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string name;
  for (int i = 0; i < 6; ++i) {
    name.push_back(kHex[digest[i] >> 4]);
    name.push_back(kHex[digest[i] & 15]);
  }
  return name;
}

}  // namespace

std::string ApiKeys::Name(absl::string_view key) { return hex_name(digest_of(key)); }

absl::StatusOr<std::vector<ApiKeys::Entry>> ApiKeys::Read(const std::string& path) {
  std::ifstream file(path);
  if (!file) return absl::NotFoundError(absl::StrCat("cannot read --api_keys_file ", path));
  std::vector<Entry> entries;
  std::string line;
  for (int number = 1; std::getline(file, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (absl::StripAsciiWhitespace(line).empty() || line[0] == '#') continue;
    // Spaces around a field are an editor's, not the key's (a key holds none).
    std::vector<std::string> fields = absl::StrSplit(line, '\t');
    for (std::string& field : fields) absl::StripAsciiWhitespace(&field);
    const auto bad = [&](absl::string_view why) {
      return absl::InvalidArgumentError(
          absl::StrCat("--api_keys_file ", path, " line ", number, ": ", why,
                       " (a line is KEY, optionally a tab and requests per minute, and a tab and "
                       "characters per day)"));
    };
    if (fields.size() > 3) return bad("more than three tab-separated fields");
    const std::string& key = fields[0];
    if (key.size() < 16) return bad("the key is shorter than 16 characters");
    if (key.size() > 256) return bad("the key is longer than 256 characters");
    if (key.find(' ') != std::string::npos) {
      return bad("the key holds a space (a key is printable ASCII without spaces)");
    }
    if (std::any_of(key.begin(), key.end(), [](unsigned char c) { return c < ' ' || c > '~'; })) {
      return bad("the key has a character outside printable ASCII");
    }
    Entry entry;
    entry.digest = digest_of(key);
    entry.name = hex_name(entry.digest);
    int64_t* limits[] = {&entry.limits.requests_per_minute, &entry.limits.characters_per_day};
    for (size_t i = 1; i < fields.size(); ++i) {
      if (!absl::SimpleAtoi(fields[i], limits[i - 1]) || *limits[i - 1] < 0) {
        return bad(absl::StrCat(i == 1 ? "requests per minute" : "characters per day",
                                " is not a whole number >= 0"));
      }
    }
    if (std::any_of(entries.begin(), entries.end(),
                    [&](const Entry& other) { return other.digest == entry.digest; })) {
      return bad(absl::StrCat("key ", entry.name, " is listed twice"));
    }
    entries.push_back(std::move(entry));
  }
  if (entries.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--api_keys_file ", path, " lists no key: every call would be refused"));
  }
  return entries;
}

absl::StatusOr<std::unique_ptr<ApiKeys>> ApiKeys::Load(const std::string& path, Clock clock) {
  std::unique_ptr<ApiKeys> keys(new ApiKeys(path, std::move(clock)));
  if (absl::Status loaded = keys->Reload(); !loaded.ok()) return loaded;
  return keys;
}

absl::Status ApiKeys::Reload() {
  auto entries = Read(path_);
  if (!entries.ok()) return entries.status();
  absl::MutexLock lock(&mutex_);
  std::map<std::string, ApiKeyLimits> previous;
  for (const Entry& entry : entries_) previous[entry.name] = entry.limits;
  entries_ = *std::move(entries);
  // Quotas used stay with the keys that stay; those of removed keys go. A raised limit adds
  // what it raises to what is left (a key that had used all of 10 a minute has 90 left of 100),
  // and a limit where there was none starts full; a lowered one caps what is left at the next
  // request.
  const auto carry = [](int64_t before, int64_t now, double& left) {
    if (before == 0) {
      left = static_cast<double>(now);
    } else if (now > before) {
      left += static_cast<double>(now - before);
    }
  };
  std::map<std::string, Bucket> kept;
  for (const Entry& entry : entries_) {
    auto found = buckets_.find(entry.name);
    if (found == buckets_.end()) continue;
    Bucket bucket = found->second;
    const ApiKeyLimits& before = previous[entry.name];
    carry(before.requests_per_minute, entry.limits.requests_per_minute, bucket.requests);
    carry(before.characters_per_day, entry.limits.characters_per_day, bucket.characters);
    kept.emplace(entry.name, bucket);
  }
  buckets_ = std::move(kept);
  return absl::OkStatus();
}

namespace {

absl::Status no_key() {
  return absl::UnauthenticatedError(
      "this server needs an API key: send it as the metadata or header \"authorization: "
      "Bearer KEY\" or \"x-api-key: KEY\" (LibreTranslate's api_key field over HTTP)");
}

}  // namespace

const ApiKeys::Entry* ApiKeys::Find(absl::string_view key) const {
  const Digest presented = digest_of(key);
  // Every digest is compared, whichever matches: the time taken says nothing about the keys.
  const Entry* match = nullptr;
  for (const Entry& entry : entries_) {
    const bool equal = CRYPTO_memcmp(entry.digest.data(), presented.data(), presented.size()) == 0;
    if (equal) match = &entry;
  }
  return match;
}

absl::Status ApiKeys::Verify(absl::string_view key) {
  if (key.empty()) return no_key();
  absl::MutexLock lock(&mutex_);
  if (Find(key) == nullptr) return absl::UnauthenticatedError("the API key is not valid");
  return absl::OkStatus();
}

absl::StatusOr<std::string> ApiKeys::Admit(absl::string_view key, int64_t characters) {
  if (key.empty()) return no_key();
  absl::MutexLock lock(&mutex_);
  const Entry* match = Find(key);
  if (match == nullptr) return absl::UnauthenticatedError("the API key is not valid");
  const ApiKeyLimits& limits = match->limits;
  const absl::Time now = clock_();
  auto [bucket, created] = buckets_.try_emplace(match->name);
  Bucket& quota = bucket->second;
  if (created) {
    quota.requests = static_cast<double>(limits.requests_per_minute);
    quota.characters = static_cast<double>(limits.characters_per_day);
    quota.refilled = now;
  }
  // Refill for the time since the last request, up to each bucket's size.
  const double seconds = std::max(0.0, absl::ToDoubleSeconds(now - quota.refilled));
  quota.refilled = now;
  quota.requests = std::min<double>(limits.requests_per_minute,
                                    quota.requests + seconds * limits.requests_per_minute / 60.0);
  quota.characters =
      std::min<double>(limits.characters_per_day,
                       quota.characters + seconds * limits.characters_per_day / 86400.0);
  if (limits.requests_per_minute > 0 && quota.requests < 1.0) {
    const double wait = (1.0 - quota.requests) * 60.0 / limits.requests_per_minute;
    return absl::ResourceExhaustedError(absl::StrCat(
        "API key ", match->name, " is over its ", limits.requests_per_minute,
        " requests per minute; retry in ", std::ceil(wait), " s"));
  }
  if (limits.characters_per_day > 0) {
    if (characters > limits.characters_per_day) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "the request has ", characters, " characters; API key ", match->name,
          " may send at most ", limits.characters_per_day, " a day"));
    }
    if (quota.characters < static_cast<double>(characters)) {
      const double wait =
          (characters - quota.characters) * 86400.0 / limits.characters_per_day;
      return absl::ResourceExhaustedError(absl::StrCat(
          "API key ", match->name, " is over its ", limits.characters_per_day,
          " characters per day; this request's ", characters, " fit in ", std::ceil(wait),
          " s"));
    }
    quota.characters -= static_cast<double>(characters);
  }
  if (limits.requests_per_minute > 0) quota.requests -= 1.0;
  return match->name;
}

}  // namespace xlate::server
