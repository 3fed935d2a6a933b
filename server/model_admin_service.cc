#include "server/model_admin_service.h"

#include <string>

#include "server/caller_admission.h"
#include "server/grpc_status.h"

namespace xlate::server {

grpc::Status ModelAdminService::ReloadModel(grpc::ServerContext* context,
                                            const xlate::v1::ReloadModelRequest* request,
                                            xlate::v1::ReloadModelResponse* response) {
  if (grpc::Status admitted = admit_caller(keys_, *context, 0); !admitted.ok()) return admitted;
  auto model = models_->Reload(request->model(), request->model_dir());
  if (!model.ok()) {
    return to_grpc(model.status());
  }
  const ServedModel& served = **model;
  response->set_model(served.name());
  response->set_model_dir(served.dir());
  response->set_source_language(served.config().source_lang);
  response->set_target_language(served.config().target_lang);
  response->set_load_seconds(absl::ToDoubleSeconds(served.load_time()));
  return grpc::Status::OK;
}

}  // namespace xlate::server
