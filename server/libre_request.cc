#include "server/libre_request.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "text/utf8.h"

namespace xlate::server {
namespace {

using Json = nlohmann::json;

absl::Status invalid(absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("Invalid request: ", why));
}

// A field as sent, before its type is checked.
struct SentField {
  enum class Kind { kAbsent, kNull, kString, kNumber, kList, kOther };
  Kind kind = Kind::kAbsent;
  std::string text;
  double number = 0;
};

// The fields this server reads; q's texts are kept apart, as they arrive.
struct SentFields {
  SentField q, source, target, format, api_key, alternatives;
  std::vector<std::string> texts;

  SentField* Named(absl::string_view name) {
    if (name == "q") return &q;
    if (name == "source") return &source;
    if (name == "target") return &target;
    if (name == "format") return &format;
    if (name == "api_key") return &api_key;
    if (name == "alternatives") return &alternatives;
    return nullptr;
  }
};

std::string too_many_texts(int64_t max_texts) {
  return absl::StrCat("q holds more than ", max_texts, " texts; the limit is ", max_texts,
                      " (--max_entries_per_request)");
}

// The events of one JSON body into SentFields, refusing at the first event past a bound.
class LibreJsonEvents final : public nlohmann::json_sax<Json> {
 public:
  LibreJsonEvents(int64_t max_texts, SentFields& fields)
      : max_texts_(max_texts), fields_(fields) {}

  const absl::Status& refusal() const { return refusal_; }

  bool null() override { return Scalar(SentField::Kind::kNull, std::string(), 0); }
  bool boolean(bool) override { return Scalar(SentField::Kind::kOther, std::string(), 0); }
  bool number_integer(number_integer_t value) override {
    return Scalar(SentField::Kind::kNumber, std::string(), static_cast<double>(value));
  }
  bool number_unsigned(number_unsigned_t value) override {
    return Scalar(SentField::Kind::kNumber, std::string(), static_cast<double>(value));
  }
  bool number_float(number_float_t value, const string_t&) override {
    return Scalar(SentField::Kind::kNumber, std::string(), value);
  }
  bool string(string_t& value) override {
    return Scalar(SentField::Kind::kString, std::move(value), 0);
  }
  bool binary(binary_t&) override { return Scalar(SentField::Kind::kOther, std::string(), 0); }

  bool start_object(std::size_t) override {
    if (depth_ > 0 && !Container(SentField::Kind::kOther)) return false;
    return Open();
  }
  bool start_array(std::size_t) override {
    if (depth_ == 0) return Refuse(invalid("the body is not a JSON object"));
    if (!Container(SentField::Kind::kList)) return false;
    return Open();
  }
  bool end_object() override { return Close(); }
  bool end_array() override { return Close(); }
  bool key(string_t& name) override {
    if (depth_ == 1) field_ = fields_.Named(name);
    return true;
  }
  bool parse_error(std::size_t, const std::string&,
                   const nlohmann::detail::exception& error) override {
    // The message quotes the input near the error: cut to whole characters.
    return Refuse(invalid(absl::StrCat("the body is not JSON: ", excerpt(error.what(), 200))));
  }

 private:
  bool Refuse(absl::Status status) {
    refusal_ = std::move(status);
    return false;
  }

  bool Open() {
    if (++depth_ > kMaxLibreJsonDepth) {
      return Refuse(invalid(absl::StrCat("the body's values nest deeper than ",
                                         kMaxLibreJsonDepth, " levels (the limit)")));
    }
    return true;
  }
  bool Close() {
    --depth_;
    if (depth_ == 1) in_q_list_ = false;
    return true;
  }

  // An object or array starting as a value: a field's (depth 1), or inside one.
  bool Container(SentField::Kind kind) {
    if (in_q_list_) return Refuse(invalid("q must be a string or strings"));
    if (depth_ != 1 || field_ == nullptr) return true;
    field_->kind = kind;
    if (field_ == &fields_.q && kind == SentField::Kind::kList) {
      fields_.texts.clear();
      in_q_list_ = true;
    }
    return true;
  }

  bool Scalar(SentField::Kind kind, std::string text, double number) {
    if (depth_ == 0) return Refuse(invalid("the body is not a JSON object"));
    if (in_q_list_ && depth_ == 2) {
      if (kind != SentField::Kind::kString) return Refuse(invalid("q must be a string or strings"));
      if (static_cast<int64_t>(fields_.texts.size()) >= max_texts_) {
        return Refuse(invalid(too_many_texts(max_texts_)));
      }
      fields_.texts.push_back(std::move(text));
      return true;
    }
    if (depth_ != 1 || field_ == nullptr) return true;  // a field this server does not read
    field_->kind = kind;
    field_->number = number;
    if (field_ == &fields_.q) {  // q's text is kept with the texts alone
      fields_.texts.clear();
      if (kind == SentField::Kind::kString) fields_.texts.push_back(std::move(text));
    } else {
      field_->text = std::move(text);
    }
    return true;
  }

  const int64_t max_texts_;
  SentFields& fields_;
  int depth_ = 0;                 // objects and arrays open
  SentField* field_ = nullptr;    // the field of the body's last key (nullptr: one not read)
  bool in_q_list_ = false;        // inside q's list
  absl::Status refusal_;
};

// The checked request, with LibreTranslate's messages.
absl::StatusOr<LibreRequest> check_fields(SentFields sent, bool with_languages) {
  LibreRequest parsed;
  const auto text_field = [](const char* name, const SentField& field,
                             std::string& out) -> absl::Status {
    if (field.kind == SentField::Kind::kAbsent || field.kind == SentField::Kind::kNull) {
      return invalid(absl::StrCat("missing ", name, " parameter"));
    }
    if (field.kind != SentField::Kind::kString) {
      return invalid(absl::StrCat(name, " must be a string"));
    }
    out = field.text;
    return absl::OkStatus();
  };
  if (sent.api_key.kind == SentField::Kind::kString) parsed.api_key = sent.api_key.text;
  switch (sent.q.kind) {
    case SentField::Kind::kAbsent:
    case SentField::Kind::kNull:
      return invalid("missing q parameter");
    case SentField::Kind::kList:
      parsed.q_is_list = true;
      break;
    case SentField::Kind::kString:
      break;
    default:
      return invalid("q must be a string or strings");
  }
  parsed.texts = std::move(sent.texts);
  if (!with_languages) return parsed;
  if (auto status = text_field("source", sent.source, parsed.source); !status.ok()) return status;
  if (auto status = text_field("target", sent.target, parsed.target); !status.ok()) return status;
  if (sent.format.kind != SentField::Kind::kAbsent) {
    if (auto status = text_field("format", sent.format, parsed.format); !status.ok()) {
      return status;
    }
    if (parsed.format != "text" && parsed.format != "html") {
      return invalid(absl::StrCat("format must be text or html, not \"",
                                  parsed.format.substr(0, 32), "\""));
    }
  }
  if (sent.alternatives.kind != SentField::Kind::kAbsent) {
    double count = -1;
    if (sent.alternatives.kind == SentField::Kind::kNumber) {
      count = sent.alternatives.number;
    } else if (sent.alternatives.kind != SentField::Kind::kString ||
               !absl::SimpleAtod(sent.alternatives.text, &count)) {
      count = -1;
    }
    if (!(count >= 0 && count <= 16 && count == std::floor(count))) {
      return invalid("alternatives must be a whole number from 0 to 16");
    }
    parsed.alternatives = static_cast<int>(count);
  }
  return parsed;
}

}  // namespace

absl::StatusOr<LibreRequest> read_libre_json(absl::string_view body, int64_t max_texts,
                                             bool with_languages) {
  if (size_t bad = 0; !is_valid_utf8(std::string_view(body.data(), body.size()), &bad)) {
    return invalid(absl::StrCat("the body is not valid UTF-8 (byte ", bad, ")"));
  }
  SentFields sent;
  LibreJsonEvents events(max_texts, sent);
  if (!Json::sax_parse(body.begin(), body.end(), &events)) {
    if (!events.refusal().ok()) return events.refusal();
    return invalid("the body is not JSON");
  }
  return check_fields(std::move(sent), with_languages);
}

absl::StatusOr<LibreRequest> read_libre_form(
    const std::vector<std::pair<absl::string_view, absl::string_view>>& pairs,
    int64_t max_texts, bool with_languages) {
  const auto texts = std::count_if(pairs.begin(), pairs.end(),
                                   [](const auto& pair) { return pair.first == "q"; });
  if (texts > max_texts) return invalid(too_many_texts(max_texts));
  SentFields sent;
  for (const auto& [name, value] : pairs) {
    SentField* field = sent.Named(name);
    if (field == nullptr) continue;
    field->kind = field == &sent.q && texts > 1 ? SentField::Kind::kList : SentField::Kind::kString;
    field->text = std::string(value);
    if (field == &sent.q) sent.texts.emplace_back(value);
  }
  return check_fields(std::move(sent), with_languages);
}

}  // namespace xlate::server
