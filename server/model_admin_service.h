// xlate.v1.ModelAdmin (proto/model_admin.proto): operators reload a served model without
// downtime. Served on --admin_address only, never on the clients' port.
#pragma once

#include "proto/model_admin.grpc.pb.h"
#include "server/model_registry.h"

namespace xlate::server {

class ModelAdminService final : public xlate::v1::ModelAdmin::Service {
 public:
  // `models` must outlive the service.
  explicit ModelAdminService(ModelRegistry* models) : models_(models) {}

  // Blocks one of the admin server's threads while the model loads and warms up.
  grpc::Status ReloadModel(grpc::ServerContext* context,
                           const xlate::v1::ReloadModelRequest* request,
                           xlate::v1::ReloadModelResponse* response) override;

 private:
  ModelRegistry* const models_;
};

}  // namespace xlate::server
