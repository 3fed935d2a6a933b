// xlate-health: asks a server's standard health service whether it serves, for container
// health checks (Docker HEALTHCHECK, compose) where no gRPC probe is built in. Exit status 0:
// SERVING; 1: anything else (NOT_SERVING while loading or draining, no answer, an error), with
// the reason on stderr.
#include <iostream>

#include <grpcpp/grpcpp.h>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "proto/grpc/health/v1/health.grpc.pb.h"

ABSL_FLAG(std::string, target, "127.0.0.1:50051", "the server's gRPC address");
ABSL_FLAG(std::string, service, "", "the service to ask about (\"\": the whole server; or "
          "xlate.v1.Translator)");
ABSL_FLAG(int, timeout_ms, 2000, "how long to wait for the answer, in ms");

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("xlate-health [--target HOST:PORT] [--service NAME]\n"
                               "Exits 0 when the server's health service answers SERVING.");
  absl::ParseCommandLine(argc, argv);
  if (absl::GetFlag(FLAGS_timeout_ms) < 1) {
    std::cerr << "xlate-health: --timeout_ms must be >= 1\n";
    return 2;
  }
  auto channel =
      grpc::CreateChannel(absl::GetFlag(FLAGS_target), grpc::InsecureChannelCredentials());
  auto health = grpc::health::v1::Health::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::milliseconds(absl::GetFlag(FLAGS_timeout_ms)));
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(absl::GetFlag(FLAGS_service));
  grpc::health::v1::HealthCheckResponse response;
  const grpc::Status status = health->Check(&context, request, &response);
  if (!status.ok()) {
    std::cerr << "xlate-health: " << absl::GetFlag(FLAGS_target) << ": " << status.error_message()
              << " (gRPC code " << status.error_code() << ")\n";
    return 1;
  }
  const std::string name = grpc::health::v1::HealthCheckResponse::ServingStatus_Name(
      response.status());
  if (response.status() != grpc::health::v1::HealthCheckResponse::SERVING) {
    std::cerr << "xlate-health: " << absl::GetFlag(FLAGS_target) << " is " << name << "\n";
    return 1;
  }
  std::cout << name << "\n";
  return 0;
}
