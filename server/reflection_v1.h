// grpc.reflection.v1.ServerReflection (proto/grpc/reflection/v1/reflection.proto) beside gRPC's
// own v1alpha plugin: current clients (grpcurl, Postman) ask v1 first, and gRPC 1.51 serves only
// v1alpha. Descriptors come from the protobuf descriptor pool that the generated code of this
// binary fills (xlate.v1 and the reflection protos themselves); the health service, which gRPC
// implements without generated protobuf code, is listed but has no descriptor (as in v1alpha).
#pragma once

#include <string>
#include <vector>

#include "proto/grpc/reflection/v1/reflection.grpc.pb.h"

namespace xlate::server {

class ReflectionV1Service final : public grpc::reflection::v1::ServerReflection::Service {
 public:
  // `services`: the fully qualified names list_services answers with.
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
};

}  // namespace xlate::server
