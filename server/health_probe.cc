// xlate-health: asks a server's standard health service whether it serves, for container
// health checks (Docker HEALTHCHECK, compose) where no gRPC probe is built in. Exit status 0:
// SERVING; 1: anything else (NOT_SERVING while loading or draining, no answer, an error), with
// the reason on stderr.
#include <fstream>
#include <iostream>
#include <sstream>

#include <grpcpp/grpcpp.h>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "proto/grpc/health/v1/health.grpc.pb.h"

ABSL_FLAG(std::string, target, "127.0.0.1:50051", "the server's gRPC address");
ABSL_FLAG(std::string, service, "", "the service to ask about (\"\": the whole server; or "
          "xlate.v1.Translator)");
ABSL_FLAG(int, timeout_ms, 2000, "how long to wait for the answer, in ms");
ABSL_FLAG(std::string, tls_ca, "",
          "PEM root certificates to verify a TLS server with (its own certificate when it is "
          "self-signed); set, the probe speaks TLS, as a server started with --tls_cert needs");
ABSL_FLAG(std::string, tls_server_name, "",
          "with --tls_ca: the name the server's certificate must carry, when it is not the "
          "target's host (a probe of 127.0.0.1 against a certificate for the service's DNS "
          "name)");

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("xlate-health [--target HOST:PORT] [--service NAME] "
                               "[--tls_ca PEM [--tls_server_name NAME]]\n"
                               "Exits 0 when the server's health service answers SERVING.");
  absl::ParseCommandLine(argc, argv);
  if (absl::GetFlag(FLAGS_timeout_ms) < 1) {
    std::cerr << "xlate-health: --timeout_ms must be >= 1\n";
    return 2;
  }
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  grpc::ChannelArguments arguments;
  if (const std::string ca = absl::GetFlag(FLAGS_tls_ca); !ca.empty()) {
    std::ifstream file(ca);
    std::stringstream roots;
    roots << file.rdbuf();
    if (!file || roots.str().empty()) {
      std::cerr << "xlate-health: cannot read --tls_ca " << ca << "\n";
      return 2;
    }
    grpc::SslCredentialsOptions options;
    options.pem_root_certs = roots.str();
    credentials = grpc::SslCredentials(options);
    if (const std::string name = absl::GetFlag(FLAGS_tls_server_name); !name.empty()) {
      arguments.SetSslTargetNameOverride(name);
    }
  } else if (!absl::GetFlag(FLAGS_tls_server_name).empty()) {
    std::cerr << "xlate-health: --tls_server_name goes with --tls_ca\n";
    return 2;
  }
  auto channel =
      grpc::CreateCustomChannel(absl::GetFlag(FLAGS_target), credentials, arguments);
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
