#include "server/caller_admission.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"

namespace xlate::server {

std::string presented_api_key(const grpc::ServerContextBase& context) {
  const auto& metadata = context.client_metadata();
  if (const auto found = metadata.find("authorization"); found != metadata.end()) {
    const absl::string_view value(found->second.data(), found->second.size());
    constexpr absl::string_view kBearer = "bearer ";
    if (value.size() > kBearer.size() && absl::StartsWithIgnoreCase(value, kBearer)) {
      return std::string(absl::StripAsciiWhitespace(value.substr(kBearer.size())));
    }
  }
  if (const auto found = metadata.find("x-api-key"); found != metadata.end()) {
    return std::string(absl::StripAsciiWhitespace(
        absl::string_view(found->second.data(), found->second.size())));
  }
  return std::string();
}

grpc::Status admit_caller(ApiKeys* keys, const grpc::ServerContextBase& context,
                          int64_t characters, std::string* key_name) {
  if (keys == nullptr) return grpc::Status::OK;
  const auto admitted = keys->Admit(presented_api_key(context), characters);
  if (admitted.ok()) {
    if (key_name != nullptr) *key_name = *admitted;
    return grpc::Status::OK;
  }
  return grpc::Status(static_cast<grpc::StatusCode>(admitted.status().code()),
                      std::string(admitted.status().message()));
}

}  // namespace xlate::server
