#include "server/caller_admission.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "server/grpc_status.h"

namespace xlate::server {

std::string presented_api_key(std::optional<absl::string_view> authorization,
                              std::optional<absl::string_view> x_api_key) {
  if (authorization) {
    constexpr absl::string_view kBearer = "bearer ";
    if (authorization->size() > kBearer.size() &&
        absl::StartsWithIgnoreCase(*authorization, kBearer)) {
      return std::string(absl::StripAsciiWhitespace(authorization->substr(kBearer.size())));
    }
  }
  if (x_api_key) return std::string(absl::StripAsciiWhitespace(*x_api_key));
  return std::string();
}

std::string presented_api_key(const grpc::ServerContextBase& context) {
  const auto& metadata = context.client_metadata();
  const auto value = [&metadata](const char* name) -> std::optional<absl::string_view> {
    const auto found = metadata.find(name);
    if (found == metadata.end()) return std::nullopt;
    return absl::string_view(found->second.data(), found->second.size());
  };
  return presented_api_key(value("authorization"), value("x-api-key"));
}

grpc::Status verify_caller(ApiKeys* keys, const grpc::ServerContextBase& context) {
  if (keys == nullptr) return grpc::Status::OK;
  return to_grpc(keys->Verify(presented_api_key(context)));
}

grpc::Status admit_caller(ApiKeys* keys, const grpc::ServerContextBase& context,
                          int64_t characters, std::string* key_name) {
  if (keys == nullptr) return grpc::Status::OK;
  const auto admitted = keys->Admit(presented_api_key(context), characters);
  if (admitted.ok()) {
    if (key_name != nullptr) *key_name = *admitted;
    return grpc::Status::OK;
  }
  return to_grpc(admitted.status());
}

}  // namespace xlate::server
