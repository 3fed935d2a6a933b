#include "server/reflection_v1.h"

#include <algorithm>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <grpcpp/impl/codegen/method_handler.h>
#include <grpcpp/impl/codegen/rpc_service_method.h>

#include "absl/strings/str_cat.h"
#include "text/utf8.h"

namespace xlate::server {
namespace {

using google::protobuf::DescriptorPool;
using google::protobuf::FileDescriptor;
using grpc::reflection::v1::ServerReflectionRequest;
using grpc::reflection::v1::ServerReflectionResponse;

void set_error(ServerReflectionResponse& response, grpc::StatusCode code,
               const std::string& message) {
  response.mutable_error_response()->set_error_code(code);
  response.mutable_error_response()->set_error_message(message);
}

// `file`, then its dependencies depth first, each once per stream (`sent`), serialized.
void add_file(const FileDescriptor* file, std::vector<std::string>& sent,
              ServerReflectionResponse& response) {
  if (std::find(sent.begin(), sent.end(), file->name()) != sent.end()) return;
  sent.push_back(file->name());
  google::protobuf::FileDescriptorProto proto;
  file->CopyTo(&proto);
  proto.SerializeToString(
      response.mutable_file_descriptor_response()->add_file_descriptor_proto());
  for (int i = 0; i < file->dependency_count(); ++i) add_file(file->dependency(i), sent, response);
}

}  // namespace

// `file` and everything it imports, directly or not, into `files`.
void add_with_imports(const FileDescriptor* file, std::set<std::string>& files) {
  if (!files.insert(file->name()).second) return;
  for (int i = 0; i < file->dependency_count(); ++i) add_with_imports(file->dependency(i), files);
}

ReflectionV1Service::ReflectionV1Service(std::vector<std::string> services)
    : services_(std::move(services)) {
  for (const std::string& name : services_) {
    if (const auto* service = DescriptorPool::generated_pool()->FindServiceByName(name)) {
      add_with_imports(service->file(), shown_files_);
    }
  }
}

ReflectionV1AlphaService::ReflectionV1AlphaService(ReflectionV1Service* v1) {
  using Request = grpc::reflection::v1::ServerReflectionRequest;
  using Response = grpc::reflection::v1::ServerReflectionResponse;
  AddMethod(new grpc::internal::RpcServiceMethod(
      "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
      grpc::internal::RpcMethod::BIDI_STREAMING,
      new grpc::internal::BidiStreamingHandler<ReflectionV1Service, Request, Response>(
          [](ReflectionV1Service* service, grpc::ServerContext* context,
             grpc::ServerReaderWriter<Response, Request>* stream) {
            return service->ServerReflectionInfo(context, stream);
          },
          v1)));
}

grpc::Status ReflectionV1Service::ServerReflectionInfo(
    grpc::ServerContext* context,
    grpc::ServerReaderWriter<ServerReflectionResponse, ServerReflectionRequest>* stream) {
  std::vector<std::string> sent;
  ServerReflectionRequest request;
  while (!context->IsCancelled() && stream->Read(&request)) {
    if (!stream->Write(Answer(request, sent))) break;
  }
  return grpc::Status::OK;
}

ServerReflectionResponse ReflectionV1Service::Answer(const ServerReflectionRequest& request,
                                                     std::vector<std::string>& sent) const {
  const DescriptorPool* pool = DescriptorPool::generated_pool();
  ServerReflectionResponse response;
  response.set_valid_host(request.host());
  *response.mutable_original_request() = request;
  // A file is sent again when asked for by name or symbol, even if an earlier answer had it.
  auto answer_with_file = [&](const FileDescriptor* file, const std::string& missing) {
    if (file == nullptr || shown_files_.count(file->name()) == 0) {
      return set_error(response, grpc::NOT_FOUND, missing);
    }
    sent.erase(std::remove(sent.begin(), sent.end(), file->name()), sent.end());
    add_file(file, sent, response);
  };
  switch (request.message_request_case()) {
    case ServerReflectionRequest::kListServices:
      for (const std::string& name : services_) {
        response.mutable_list_services_response()->add_service()->set_name(name);
      }
      break;
    case ServerReflectionRequest::kFileByFilename:
      answer_with_file(pool->FindFileByName(request.file_by_filename()),
                       absl::StrCat("no file \"", excerpt(request.file_by_filename()), "\""));
      break;
    case ServerReflectionRequest::kFileContainingSymbol:
      answer_with_file(pool->FindFileContainingSymbol(request.file_containing_symbol()),
                       absl::StrCat("no symbol \"", excerpt(request.file_containing_symbol()),
                                    "\""));
      break;
    case ServerReflectionRequest::kFileContainingExtension: {
      const auto& wanted = request.file_containing_extension();
      const auto* type = pool->FindMessageTypeByName(wanted.containing_type());
      const auto* extension =
          type ? pool->FindExtensionByNumber(type, wanted.extension_number()) : nullptr;
      answer_with_file(extension ? extension->file() : nullptr,
                       absl::StrCat("no extension ", wanted.extension_number(), " of \"",
                                    excerpt(wanted.containing_type()), "\""));
      break;
    }
    case ServerReflectionRequest::kAllExtensionNumbersOfType: {
      const auto* type = pool->FindMessageTypeByName(request.all_extension_numbers_of_type());
      if (type == nullptr || shown_files_.count(type->file()->name()) == 0) {
        set_error(response, grpc::NOT_FOUND,
                  absl::StrCat("no type \"",
                               excerpt(request.all_extension_numbers_of_type()), "\""));
        break;
      }
      std::vector<const google::protobuf::FieldDescriptor*> extensions;
      pool->FindAllExtensions(type, &extensions);
      auto* numbers = response.mutable_all_extension_numbers_response();
      numbers->set_base_type_name(type->full_name());
      for (const auto* extension : extensions) numbers->add_extension_number(extension->number());
      break;
    }
    case ServerReflectionRequest::MESSAGE_REQUEST_NOT_SET:
      set_error(response, grpc::INVALID_ARGUMENT, "the request names no reflection query");
      break;
  }
  return response;
}

}  // namespace xlate::server
