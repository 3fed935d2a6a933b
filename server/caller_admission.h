// Who may call the gRPC services when --api_keys_file is given: the key a call presents in its
// metadata ("authorization: Bearer KEY", or "x-api-key: KEY"; the HTTP gateway forwards its
// clients' headers and LibreTranslate's api_key field as these), admitted by ApiKeys with the
// request's size against the key's quotas. One check for Translator's methods and ModelAdmin's.
#pragma once

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "server/api_keys.h"

namespace xlate::server {

// The key a call presents (empty when none): a bearer token of "authorization", else
// "x-api-key".
std::string presented_api_key(const grpc::ServerContextBase& context);
// The same from the two values (HTTP headers, before a call is made).
std::string presented_api_key(std::optional<absl::string_view> authorization,
                              std::optional<absl::string_view> x_api_key);

// OK when `keys` is null or knows the call's key, taking no quota: a call is checked for its
// key before its request is looked at, and charged (admit_caller) only once it is found valid.
grpc::Status verify_caller(ApiKeys* keys, const grpc::ServerContextBase& context);

// OK when `keys` is null (no --api_keys_file) or admits the call's key for a request of
// `characters` code points (its name, when `key_name` is given, goes there); else
// UNAUTHENTICATED or RESOURCE_EXHAUSTED saying why.
grpc::Status admit_caller(ApiKeys* keys, const grpc::ServerContextBase& context,
                          int64_t characters, std::string* key_name = nullptr);

}  // namespace xlate::server
