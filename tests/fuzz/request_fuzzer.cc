// A request body from a stranger through the service's path up to tokenization: the bytes are
// parsed (or refused with INVALID_ARGUMENT naming why) and the request checked against every
// limit (or refused with a status that names the field). Tokenization is not fuzzed here: the
// SentencePiece module is loaded with RTLD_DEEPBIND, which the sanitizers' runtime refuses.
#include <cstdint>
#include <optional>

#include <grpcpp/grpcpp.h>

#include "server/request_parsing.h"
#include "server/translation_service.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  grpc::Slice slice(data, size);
  grpc::ByteBuffer bytes(&slice, 1);
  xlate::v1::TranslateRequest request;
  constexpr int64_t kMaxEntries = 64;
  grpc::Status status = xlate::server::parse_request(bytes, kMaxEntries, request);
  if (status.ok() && request.contents_size() > kMaxEntries) __builtin_trap();
  if (!status.ok()) {
    if (status.error_code() != grpc::INVALID_ARGUMENT || status.error_message().empty()) {
      __builtin_trap();
    }
    return 0;
  }
  static const xlate::ModelConfig config = [] {
    xlate::ModelConfig tiny = *xlate::ModelConfig::Preset("tiny");
    tiny.source_lang = "en";
    tiny.target_lang = "de";
    return tiny;
  }();
  xlate::server::RequestLimits limits;
  limits.max_entry_code_points = 2000;
  limits.max_request_code_points = 4000;
  xlate::TranslationOptions options;
  std::optional<xlate::SegmentedTexts> texts;
  status = xlate::server::check_request_text(request, config, limits, options, texts);
  if (status.ok()) {
    if (!texts || texts->text_count() != static_cast<size_t>(request.contents_size()) ||
        static_cast<int>(texts->sentences().size()) > limits.max_sentences_per_request ||
        !options.Validate().ok() ||
        (options.alignment.has_value() &&
         !xlate::check_alignment_options(*options.alignment, config, "").ok())) {
      __builtin_trap();
    }
  } else if (status.error_message().empty()) {
    __builtin_trap();
  }
  return 0;
}
