// xlate-server: serves a model directory over gRPC (xlate.v1.Translator, grpc.health.v1.Health,
// server reflection) with Prometheus metrics on their own port.
#include <omp.h>
#include <pthread.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <prometheus/exposer.h>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "engine/continuous_decoder.h"
#include "engine/ops/cpu/thread_governor.h"
#include "engine/placement_flags.h"
#include "engine/translator.h"
#include "server/metrics.h"
#include "server/reflection_v1.h"
#include "server/scheduler.h"
#include "server/translation_service.h"

ABSL_FLAG(std::string, model_dir, "", "model directory (config.json, model.safetensors, spm.model)");
ABSL_FLAG(std::string, model_name, "", "name clients may give in TranslateRequest.model "
          "(default: the model directory's name)");
ABSL_FLAG(std::string, host, "0.0.0.0", "address to listen on");
ABSL_FLAG(int, port, 50051, "gRPC port (0 = any free port, printed at start)");
ABSL_FLAG(int, metrics_port, 9464, "Prometheus /metrics port (0 = any free port, printed)");
ABSL_FLAG(std::string, device, "auto", "auto, cpu or cuda (auto picks CUDA when present)");
ABSL_FLAG(std::string, compute_type, "auto",
          "auto, float32, float16 or bfloat16 (auto: float16 on CUDA, float32 on the CPU)");
ABSL_FLAG(int, threads, 0, "engine CPU threads (0 = the cores this process gets: all of them "
          "(or OMP_NUM_THREADS) on an idle machine, fewer while other processes keep cores "
          "busy, re-decided every 0.5 s)");
ABSL_FLAG(int64_t, max_batch_tokens, 8192, "padded source tokens per engine batch");
ABSL_FLAG(int, max_batch_sentences, 64, "sentences per engine batch");
ABSL_FLAG(int, max_queue_delay_ms, 5, "longest a sentence waits for its batch to fill, in ms");
ABSL_FLAG(int64_t, queue_capacity, 4096, "sentences waiting at most; more get RESOURCE_EXHAUSTED");
ABSL_FLAG(int64_t, max_receive_message_bytes, 4 << 20,
          "largest serialized TranslateRequest accepted, in bytes; a larger one gets "
          "RESOURCE_EXHAUSTED naming this limit");
ABSL_FLAG(int64_t, max_entry_code_points, 10000,
          "longest entry of contents (a text of any number of sentences), in Unicode code points");
ABSL_FLAG(int64_t, max_request_code_points, 30000,
          "most Unicode code points in all the contents of one request");
ABSL_FLAG(int, max_sentences_per_request, 256,
          "most sentences in one request, after its texts are cut into sentences");
ABSL_FLAG(int, max_beam_size, xlate::server::kDefaultMaxBeamSize,
          "largest beam_size a request may ask for, <= 15 (the decoder reserves this many "
          "KV-cache rows per decoding sentence)");
ABSL_FLAG(int, decoding_sentences, 64, "sentences decoded together at most; new ones join "
          "between decoding steps as others finish");
ABSL_FLAG(int, max_input_tokens, 256, "longest sentence accepted, in SentencePiece tokens "
          "(end token included; at most the model's max_position_embeddings)");
ABSL_FLAG(int, max_output_tokens, 306, "output tokens per sentence at most (caps max_extra_length)");
ABSL_FLAG(int, grace_period_seconds, 30, "on SIGTERM/SIGINT, how long in-flight calls may finish");
ABSL_FLAG(std::string, tls_cert, "", "PEM certificate chain; with --tls_key, serve over TLS");
ABSL_FLAG(std::string, tls_key, "", "PEM private key for --tls_cert");

namespace xlate::server {
namespace {

// The engine's continuous decoder behind the scheduler's interface.
class ContinuousEngine : public StreamingEngine {
 public:
  // `governor` (may be null) sets the CPU threads of each step.
  ContinuousEngine(std::unique_ptr<ContinuousDecoder> decoder,
                   std::unique_ptr<CpuThreadGovernor> governor)
      : decoder_(std::move(decoder)), governor_(std::move(governor)) {}
  int free_slots() const override { return decoder_->free_slots(); }
  int live_sentences() const override { return decoder_->live_sentences(); }
  absl::StatusOr<std::vector<int64_t>> Admit(const std::vector<std::vector<int32_t>>& sources,
                                             const TranslationOptions& options) override {
    return decoder_->Admit(sources, options);
  }
  std::vector<Finished> Step() override {
    // The scheduler thread runs every step, so its OpenMP setting is the one that counts.
    if (governor_) omp_set_num_threads(governor_->threads(absl::Now()));
    std::vector<Finished> finished;
    for (ContinuousDecoder::Finished& done : decoder_->Step()) {
      finished.push_back({done.handle, std::move(done.hypotheses), std::move(done.status)});
    }
    return finished;
  }
  std::vector<Progress> TakeProgress() override {
    std::vector<Progress> progress;
    for (ContinuousDecoder::Progress& sentence : decoder_->TakeProgress()) {
      progress.push_back({sentence.handle, std::move(sentence.stable_tokens)});
    }
    return progress;
  }
  int Drop(const std::vector<int64_t>& handles) override { return decoder_->Drop(handles); }

 private:
  std::unique_ptr<ContinuousDecoder> decoder_;
  std::unique_ptr<CpuThreadGovernor> governor_;
};

int fail(const std::string& message, int code = 1) {
  std::cerr << "xlate-server: " << message << "\n";
  return code;
}

absl::StatusOr<std::string> read_file(const std::string& path) {
  std::ifstream file(path);
  if (!file) return absl::NotFoundError("cannot read " + path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials() {
  const std::string cert = absl::GetFlag(FLAGS_tls_cert), key = absl::GetFlag(FLAGS_tls_key);
  if (cert.empty() != key.empty()) {
    return absl::InvalidArgumentError("--tls_cert and --tls_key must be given together");
  }
  if (cert.empty()) return grpc::InsecureServerCredentials();
  auto cert_text = read_file(cert);
  auto key_text = read_file(key);
  if (!cert_text.ok()) return cert_text.status();
  if (!key_text.ok()) return key_text.status();
  grpc::SslServerCredentialsOptions options;
  options.pem_key_cert_pairs.push_back({*key_text, *cert_text});
  return grpc::SslServerCredentials(options);
}

absl::Status check_flags() {
  const std::pair<const char*, int64_t> positive[] = {
      {"--max_batch_tokens", absl::GetFlag(FLAGS_max_batch_tokens)},
      {"--max_batch_sentences", absl::GetFlag(FLAGS_max_batch_sentences)},
      {"--queue_capacity", absl::GetFlag(FLAGS_queue_capacity)},
      {"--max_entry_code_points", absl::GetFlag(FLAGS_max_entry_code_points)},
      {"--max_request_code_points", absl::GetFlag(FLAGS_max_request_code_points)},
      {"--max_receive_message_bytes", absl::GetFlag(FLAGS_max_receive_message_bytes)},
      {"--max_sentences_per_request", absl::GetFlag(FLAGS_max_sentences_per_request)},
      {"--max_beam_size", absl::GetFlag(FLAGS_max_beam_size)}};
  for (const auto& [name, value] : positive) {
    if (value < 1) return absl::InvalidArgumentError(absl::StrCat(name, " must be >= 1"));
  }
  const std::pair<const char*, int64_t> non_negative[] = {
      {"--max_queue_delay_ms", absl::GetFlag(FLAGS_max_queue_delay_ms)},
      {"--grace_period_seconds", absl::GetFlag(FLAGS_grace_period_seconds)},
      {"--threads", absl::GetFlag(FLAGS_threads)},
      {"--port", absl::GetFlag(FLAGS_port)},
      {"--metrics_port", absl::GetFlag(FLAGS_metrics_port)}};
  for (const auto& [name, value] : non_negative) {
    if (value < 0) return absl::InvalidArgumentError(absl::StrCat(name, " must be >= 0"));
  }
  if (absl::GetFlag(FLAGS_max_beam_size) > kMaxDeviceBeam) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--max_beam_size must be <= ", kMaxDeviceBeam, " (the server's beam search runs on the "
        "model's device, up to 15 beams; `xlate translate` takes wider ones)"));
  }
  if (absl::GetFlag(FLAGS_model_dir).empty()) {
    return absl::InvalidArgumentError("--model_dir is required");
  }
  return absl::OkStatus();
}

int serve() {
  // SIGTERM/SIGINT are taken by sigwait() below, never by a handler on a random thread. Blocked
  // before anything starts a thread (gRPC's credentials start its core's threads, the CUDA
  // runtime its own): a thread made earlier keeps them unblocked, and the kernel may deliver a
  // SIGTERM there and end the process with it (seen once in CI, exit -15).
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  if (auto status = check_flags(); !status.ok()) return fail(std::string(status.message()), 2);
  auto server_credentials = credentials();
  if (!server_credentials.ok()) return fail(std::string(server_credentials.status().message()), 2);
  auto placement =
      resolve_placement(absl::GetFlag(FLAGS_device), absl::GetFlag(FLAGS_compute_type));
  if (!placement.ok()) return fail(std::string(placement.status().message()), 2);
  if (!placement->note.empty()) std::cerr << "xlate-server: " << placement->note << "\n";
  if (absl::GetFlag(FLAGS_threads) > 0) omp_set_num_threads(absl::GetFlag(FLAGS_threads));

  const std::string model_dir = absl::GetFlag(FLAGS_model_dir);
  auto translator = Translator::Load(model_dir, placement->placement);
  if (!translator.ok()) return fail(std::string(translator.status().message()));
  std::string model_name = absl::GetFlag(FLAGS_model_name);
  if (model_name.empty()) {
    model_name = std::filesystem::path(model_dir).lexically_normal().filename().string();
    if (model_name.empty()) model_name = std::filesystem::path(model_dir).parent_path().filename();
  }
  const ModelConfig& config = (*translator)->model().config();
  ServerMetrics metrics({model_name, device_label(placement->placement.device),
                        dtype_label(placement->placement.dtype), config.source_lang,
                        config.target_lang, absl::GetFlag(FLAGS_queue_capacity)});

  std::unique_ptr<prometheus::Exposer> exposer;
  try {
    exposer = std::make_unique<prometheus::Exposer>(
        absl::StrCat(absl::GetFlag(FLAGS_host), ":", absl::GetFlag(FLAGS_metrics_port)));
  } catch (const std::exception& error) {
    return fail(absl::StrCat("cannot serve metrics on port ", absl::GetFlag(FLAGS_metrics_port),
                             ": ", error.what()));
  }
  exposer->RegisterCollectable(metrics.registry());
  exposer->RegisterCollectable(metrics.process_collectable());

  Scheduler::Options scheduler_options;
  scheduler_options.limits.max_batch_tokens = absl::GetFlag(FLAGS_max_batch_tokens);
  scheduler_options.limits.max_batch_sentences = absl::GetFlag(FLAGS_max_batch_sentences);
  scheduler_options.limits.max_queue_delay =
      absl::Milliseconds(absl::GetFlag(FLAGS_max_queue_delay_ms));
  scheduler_options.queue_capacity = absl::GetFlag(FLAGS_queue_capacity);
  const Translator* engine = translator->get();
  ContinuousDecoderOptions decoder_options;
  decoder_options.max_sentences = absl::GetFlag(FLAGS_decoding_sentences);
  decoder_options.max_beam_size = absl::GetFlag(FLAGS_max_beam_size);
  decoder_options.max_source_tokens =
      std::min(absl::GetFlag(FLAGS_max_input_tokens), engine->max_input_tokens());
  decoder_options.max_target_tokens = absl::GetFlag(FLAGS_max_output_tokens);
  if (decoder_options.max_sentences < 1 || decoder_options.max_beam_size < 1 ||
      decoder_options.max_source_tokens < 2 || decoder_options.max_target_tokens < 1) {
    return fail("--decoding_sentences, --max_beam_size and --max_output_tokens must be >= 1 "
                "and --max_input_tokens >= 2", 2);
  }
  auto decoder = ContinuousDecoder::Create(engine->model(), decoder_options);
  if (!decoder.ok()) {
    return fail(absl::StrCat(decoder.status().message(), "; lower --decoding_sentences, "
                             "--max_beam_size or --max_output_tokens"), 2);
  }
  // --threads 0 on the CPU: as many threads as the cores this process gets (see
  // engine/ops/cpu/thread_governor.h); --threads N: N threads whatever the load.
  std::unique_ptr<CpuThreadGovernor> governor;
  if (placement->placement.device == Device::kCPU && absl::GetFlag(FLAGS_threads) == 0) {
    governor = std::make_unique<CpuThreadGovernor>(omp_get_max_threads());
  }
  ContinuousEngine continuous(*std::move(decoder), std::move(governor));
  auto scheduler = Scheduler::Create(scheduler_options, &continuous, &metrics);
  if (!scheduler.ok()) return fail(std::string(scheduler.status().message()), 2);

  RequestLimits limits;
  limits.max_request_bytes = absl::GetFlag(FLAGS_max_receive_message_bytes);
  limits.max_sentences_per_request = absl::GetFlag(FLAGS_max_sentences_per_request);
  limits.max_entry_code_points = absl::GetFlag(FLAGS_max_entry_code_points);
  limits.max_request_code_points = absl::GetFlag(FLAGS_max_request_code_points);
  limits.max_beam_size = absl::GetFlag(FLAGS_max_beam_size);
  limits.max_input_tokens = decoder_options.max_source_tokens;
  TranslationService service(engine, scheduler->get(), &metrics, model_name, limits);

  ReflectionV1Service reflection_v1(
      {kTranslatorServiceName, "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection",
       "grpc.reflection.v1alpha.ServerReflection"});
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(absl::StrCat(absl::GetFlag(FLAGS_host), ":", absl::GetFlag(FLAGS_port)),
                           *server_credentials, &port);
  builder.RegisterService(&service);
  builder.RegisterService(&reflection_v1);
  // The service, not gRPC, enforces --max_receive_message_bytes: gRPC's own refusal happens
  // before any handler (so it could not be counted or name the flag), and it saves no memory,
  // since gRPC 1.51 receives the whole message before comparing its size with its limit.
  builder.SetMaxReceiveMessageSize(-1);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) {
    return fail(absl::StrCat("cannot listen on ", absl::GetFlag(FLAGS_host), ":",
                             absl::GetFlag(FLAGS_port)));
  }
  grpc::HealthCheckServiceInterface* health = server->GetHealthCheckService();
  health->SetServingStatus(false);

  // Warm up through the scheduler, on the engine's own thread: primitive creation and
  // first-touch allocation happen here, not on a client's call, and no second thread competes
  // for the cores with early calls.
  auto warmup_ids = engine->tokenizer().encode("Hello world.");
  if (!warmup_ids.ok()) return fail(std::string(warmup_ids.status().message()));
  auto warmup = (*scheduler)->Submit({*warmup_ids}, TranslationOptions(), absl::InfiniteFuture());
  if (!warmup.ok() || !(*warmup)->WaitUntil(absl::InfiniteFuture()) ||
      !(*warmup)->status().ok()) {
    return fail("warm-up translation failed");
  }
  health->SetServingStatus(kTranslatorServiceName, true);
  health->SetServingStatus(true);
  std::cerr << "xlate-server: serving model \"" << model_name << "\" on "
            << absl::GetFlag(FLAGS_host) << ":" << port << ", metrics on port "
            << exposer->GetListeningPorts().front() << std::endl;

  int received = 0;
  sigwait(&signals, &received);
  const absl::Time grace_end =
      absl::Now() + absl::Seconds(absl::GetFlag(FLAGS_grace_period_seconds));
  std::cerr << "xlate-server: " << (received == SIGTERM ? "SIGTERM" : "SIGINT")
            << ": draining (grace period " << absl::GetFlag(FLAGS_grace_period_seconds) << " s)"
            << std::endl;
  // Drain: the server keeps accepting calls, so that health checks read NOT_SERVING (for "" and
  // the service's name) and new Translate calls get UNAVAILABLE, until the accepted calls are
  // answered or the grace period ends. Only then does gRPC stop, at once: what is left is
  // cancelled, health watch streams included, which would otherwise hold the process open.
  health->SetServingStatus(false);
  service.StartDrain();
  if (!service.WaitUntilIdle(grace_end)) {
    std::cerr << "xlate-server: grace period over; cancelling the calls still in flight"
              << std::endl;
  }
  server->Shutdown(std::chrono::system_clock::now());
  (*scheduler)->Shutdown();
  // Joins the engine thread and runs the last completions while the service they answer
  // through still exists.
  scheduler->reset();
  std::cerr << "xlate-server: stopped" << std::endl;
  return 0;
}

}  // namespace
}  // namespace xlate::server

int main(int argc, char** argv) {
  absl::FlagsUsageConfig usage;
  usage.contains_help_flags = [](absl::string_view file) {
    return absl::EndsWith(file, "server/server_main.cc");
  };
  usage.contains_helpshort_flags = usage.contains_help_flags;
  absl::SetFlagsUsageConfig(usage);
  absl::SetProgramUsageMessage(
      "xlate-server --model_dir DIR [--port 50051] [--metrics_port 9464] [flags]\n"
      "Serves xlate.v1.Translator/Translate, grpc.health.v1.Health and server reflection.");
  absl::ParseCommandLine(argc, argv);
  return xlate::server::serve();
}
