// An absl::Status (what library code returns) as the grpc::Status of the same code and message:
// absl's codes are gRPC's canonical codes, number for number.
#pragma once

#include <grpcpp/support/status.h>

#include <string>

#include "absl/status/status.h"

namespace xlate::server {

inline grpc::Status to_grpc(const absl::Status& status) {
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

}  // namespace xlate::server
