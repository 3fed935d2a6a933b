// xlate.v1.ModelAdmin (proto/model_admin.proto): operators reload a served model without
// downtime. Served on --admin_address only, never on the clients' port.
#pragma once

#include "proto/model_admin.grpc.pb.h"
#include "server/api_keys.h"
#include "server/model_registry.h"

namespace xlate::server {

class ModelAdminService final : public xlate::v1::ModelAdmin::Service {
 public:
  // `models` (and `keys`, when given: callers must present one of them) must outlive the
  // service.
  explicit ModelAdminService(ModelRegistry* models, ApiKeys* keys = nullptr)
      : models_(models), keys_(keys) {}

  // Blocks one of the admin server's threads while the model loads and warms up.
  grpc::Status ReloadModel(grpc::ServerContext* context,
                           const xlate::v1::ReloadModelRequest* request,
                           xlate::v1::ReloadModelResponse* response) override;

 private:
  ModelRegistry* const models_;
  ApiKeys* const keys_;
};

}  // namespace xlate::server
