// Typed fields of a JSON object read from a file that anyone may have written (a model's
// config.json, a checkpoint's trainer_state.json). A value of another type ("has the wrong
// type"), or one outside the stated range, which is never wider than the C++ type ("is out of
// range"; converting it would be undefined behaviour: a fuzzed config held "d_model": 5.5e27),
// is refused with an error naming the file and the key.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "absl/status/status.h"

namespace xlate {

// A value as an error message quotes it: its JSON, cut to the first 80 bytes with its size said
// ("\"aaaa...\" ... (52428802 bytes)"), so that a 50 MB value does not become a 50 MB message.
std::string json_excerpt(const nlohmann::json& value);

// An absent optional key leaves *value as it was; an absent required one is an error.
enum class JsonField { kOptional, kRequired };

// An integer in [min, max]; `what` names the range in the error ("a 32-bit integer").
absl::Status read_json_integer(const nlohmann::json& object, const char* key, int64_t min,
                               int64_t max, const char* what, JsonField presence,
                               const std::string& origin, int64_t* value);

// An integer in [0, 2^64).
absl::Status read_json_unsigned(const nlohmann::json& object, const char* key, JsonField presence,
                                const std::string& origin, uint64_t* value);

// A finite number in [min, max].
absl::Status read_json_number(const nlohmann::json& object, const char* key, double min,
                              double max, const char* what, JsonField presence,
                              const std::string& origin, double* value);

absl::Status read_json_string(const nlohmann::json& object, const char* key, JsonField presence,
                              const std::string& origin, std::string* value);

}  // namespace xlate
