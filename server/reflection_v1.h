// Server reflection, v1 (grpc.reflection.v1.ServerReflection, proto/grpc/reflection/v1/
// reflection.proto: current clients (grpcurl, Postman) ask it first, and gRPC 1.51 has only
// v1alpha) and v1alpha (the same messages and wire format under another name, for older
// clients), both answered here. Descriptors come from the protobuf descriptor pool that the
// generated code of this binary fills, but only the files of the services served on this port
// and what they import are shown: the binary also holds the admin service's schema, which is
// served on another port and is nobody else's business. The health service, which gRPC
// implements without generated protobuf code, is listed but has no descriptor (as in gRPC's
// own v1alpha plugin).
#pragma once

#include <set>
#include <string>
#include <vector>

#include <grpcpp/impl/codegen/service_type.h>

#include "proto/grpc/reflection/v1/reflection.grpc.pb.h"

namespace xlate::server {

class ReflectionV1Service final : public grpc::reflection::v1::ServerReflection::Service {
 public:
  // `services`: the fully qualified names list_services answers with; the files that define
  // them (and their imports) are those shown.
  explicit ReflectionV1Service(std::vector<std::string> services);

  grpc::Status ServerReflectionInfo(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<grpc::reflection::v1::ServerReflectionResponse,
                               grpc::reflection::v1::ServerReflectionRequest>* stream) override;

  // The answer to one request; `sent` holds the files this stream has sent already.
  grpc::reflection::v1::ServerReflectionResponse Answer(
      const grpc::reflection::v1::ServerReflectionRequest& request,
      std::vector<std::string>& sent) const;

 private:
  const std::vector<std::string> services_;
  std::set<std::string> shown_files_;
};

// grpc.reflection.v1alpha.ServerReflection, answered by a v1 service (its messages read and
// write v1alpha's wire format unchanged). Replaces gRPC's own v1alpha plugin, which shows every
// file in the binary.
class ReflectionV1AlphaService final : public grpc::Service {
 public:
  explicit ReflectionV1AlphaService(ReflectionV1Service* v1);
};

}  // namespace xlate::server
