#include "engine/json_fields.h"

#include <limits>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"

namespace xlate {
namespace {

using Json = nlohmann::json;

constexpr size_t kExcerptBytes = 80;

absl::Status wrong_type(const std::string& origin, const char* key, const Json& value,
                        const char* expected) {
  return absl::InvalidArgumentError(absl::StrCat(origin, ": key \"", key,
                                                 "\" has the wrong type: ", json_excerpt(value),
                                                 " (expected ", expected, ")"));
}

absl::Status out_of_range(const std::string& origin, const char* key, const Json& value,
                          const char* expected) {
  return absl::InvalidArgumentError(absl::StrCat(origin, ": key \"", key, "\" = ", json_excerpt(value),
                                                 " is out of range (expected ", expected, ")"));
}

// The key's value, or null when it is absent (an error if it is required).
absl::Status find(const Json& object, const char* key, JsonField presence,
                  const std::string& origin, const Json** found) {
  *found = nullptr;
  const auto it = object.find(key);
  if (it != object.end()) {
    *found = &*it;
  } else if (presence == JsonField::kRequired) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": key \"", key, "\" is missing"));
  }
  return absl::OkStatus();
}

}  // namespace

std::string json_excerpt(const Json& value) {
  std::string text = value.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (text.size() <= kExcerptBytes) return text;
  const size_t bytes = text.size();
  // Cut at a character's start, not inside a UTF-8 sequence.
  size_t cut = kExcerptBytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  text.resize(cut);
  return absl::StrCat(text, "... (", bytes, " bytes)");
}

absl::Status read_json_integer(const Json& object, const char* key, int64_t min, int64_t max,
                               const char* what, JsonField presence, const std::string& origin,
                               int64_t* value) {
  const Json* found = nullptr;
  if (absl::Status status = find(object, key, presence, origin, &found); !found) return status;
  if (!found->is_number_integer()) return wrong_type(origin, key, *found, "an integer");
  int64_t number = 0;
  if (found->is_number_unsigned()) {  // compared as unsigned: beyond int64 is out of any range
    const uint64_t unsigned_number = found->get<uint64_t>();
    if (unsigned_number > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return out_of_range(origin, key, *found, what);
    }
    number = static_cast<int64_t>(unsigned_number);
  } else {
    number = found->get<int64_t>();
  }
  if (number < min || number > max) return out_of_range(origin, key, *found, what);
  *value = number;
  return absl::OkStatus();
}

absl::Status read_json_unsigned(const Json& object, const char* key, JsonField presence,
                                const std::string& origin, uint64_t* value) {
  const Json* found = nullptr;
  if (absl::Status status = find(object, key, presence, origin, &found); !found) return status;
  if (!found->is_number_unsigned()) {
    return wrong_type(origin, key, *found, "an integer in [0, 2^64)");
  }
  *value = found->get<uint64_t>();
  return absl::OkStatus();
}

absl::Status read_json_number(const Json& object, const char* key, double min, double max,
                              const char* what, JsonField presence, const std::string& origin,
                              double* value) {
  const Json* found = nullptr;
  if (absl::Status status = find(object, key, presence, origin, &found); !found) return status;
  if (!found->is_number()) return wrong_type(origin, key, *found, "a number");
  const double number = found->get<double>();
  if (!(number >= min && number <= max)) return out_of_range(origin, key, *found, what);
  *value = number;
  return absl::OkStatus();
}

absl::Status read_json_string(const Json& object, const char* key, JsonField presence,
                              const std::string& origin, std::string* value) {
  const Json* found = nullptr;
  if (absl::Status status = find(object, key, presence, origin, &found); !found) return status;
  if (!found->is_string()) return wrong_type(origin, key, *found, "a string");
  *value = found->get<std::string>();
  return absl::OkStatus();
}

}  // namespace xlate
