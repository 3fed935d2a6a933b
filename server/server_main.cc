// xlate-server: serves a model directory over gRPC (xlate.v1.Translator, grpc.health.v1.Health,
// server reflection) with Prometheus metrics on their own port.
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <cstring>
#include <memory>
#include <optional>
#include <sstream>
#include <vector>

#include <grpc/grpc.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <prometheus/exposer.h>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "engine/continuous_decoder.h"
#include "engine/placement_flags.h"
#include "server/api_keys.h"
#include "server/http_gateway.h"
#include "server/metrics.h"
#include "server/listen_address.h"
#include "server/model_admin_service.h"
#include "server/model_registry.h"
#include "server/reflection_v1.h"
#include "server/served_model.h"
#include "server/translation_service.h"

ABSL_FLAG(std::vector<std::string>, model, {},
          "NAME=DIR: serve the model directory DIR (config.json, model.safetensors, spm.model) "
          "as NAME, the name clients give in TranslateRequest.model (DIR alone: named after "
          "its directory). Repeat the flag (or separate with commas) to serve several models; "
          "a request naming no model goes to the first whose languages match its language "
          "codes, and without codes to the first given");
ABSL_FLAG(std::string, model_dir, "", "the one model directory to serve (as --model DIR)");
ABSL_FLAG(std::string, model_name, "", "with --model_dir: the name clients may give in "
          "TranslateRequest.model (default: the model directory's name)");
ABSL_FLAG(std::string, admin_address, "",
          "HOST:PORT to serve xlate.v1.ModelAdmin (ReloadModel) on, apart from the clients' "
          "port (PORT 0 = any free port, printed at start); empty = no admin service. Keep it "
          "on a private address: it has no authentication");
ABSL_FLAG(std::string, host, "0.0.0.0", "address to listen on");
ABSL_FLAG(int, port, 50051, "gRPC port (0 = any free port, printed at start)");
ABSL_FLAG(std::string, api_keys_file, "",
          "file of API keys (a key per line, optionally a tab and its requests per minute and a "
          "tab and its characters per day; reloaded on SIGHUP): when given, Translate, "
          "TranslateStream, DetectLanguage and ModelAdmin calls must present one "
          "(authorization: Bearer KEY or x-api-key: KEY); ListModels, health and metrics stay "
          "open");
ABSL_FLAG(std::vector<std::string>, glossary, {},
          "NAME=FILE[,NAME=FILE...]: glossaries requests may name in glossary_config.glossary "
          "(TSV, or Cloud Translation's CSV layouts; an equivalent-term-sets CSV's columns of the "
          "first model's languages); re-read on SIGHUP, keeping one that no longer parses");
ABSL_FLAG(int, http_port, 0,
          "HTTP/JSON port (0 = off): /v1/translate, /v1/translate:stream, /v1/models and "
          "LibreTranslate's /translate and /languages (docs/server.md)");
ABSL_FLAG(std::vector<std::string>, http_cors_origins, {},
          "origins whose pages may call the HTTP API from a browser (CORS), comma-separated "
          "(e.g. https://example.org), or * for any; default none but the server's own page");
ABSL_FLAG(int, http_threads, 64,
          "HTTP requests handled at once (each holds a worker thread while its call runs; "
          "connections idle or still sending hold none); more wait for a worker");
ABSL_FLAG(int, http_max_connections, 16384,
          "HTTP connections open at once (within the open-file limit, less 512); past it a new "
          "one is closed at once");
ABSL_FLAG(int, http_request_seconds, 10,
          "seconds an HTTP request may take to arrive in full after its request line; past it "
          "the connection gets 408 and is closed");
ABSL_FLAG(int, http_idle_seconds, 30,
          "seconds an HTTP connection may wait for its next request (keep-alive) before it is "
          "closed");
ABSL_FLAG(int64_t, translated_files_mib, 256,
          "MiB of translated files (LibreTranslate's /translate_file) kept for /download_file; "
          "the oldest go first");
ABSL_FLAG(int64_t, translated_files_minutes, 30,
          "minutes a translated file stays downloadable");
ABSL_FLAG(std::string, jobs_dir, "",
          "directory where document jobs (POST /v1/documents) are kept, so that they survive a "
          "restart (created if missing); empty: in memory");
ABSL_FLAG(int64_t, jobs_hours, 24,
          "hours a document job (its file and result) is kept after it was created");
ABSL_FLAG(int, metrics_port, 9464, "Prometheus /metrics port (0 = any free port, printed)");
ABSL_FLAG(std::string, device, "auto", "auto, cpu or cuda (auto picks CUDA when present)");
ABSL_FLAG(std::string, compute_type, "auto",
          "auto, float32, float16, bfloat16 or int8 (auto: float16 on CUDA, float32 on the "
          "CPU; int8: int8 weights and products on the CPU)");
ABSL_FLAG(int, threads, 0, "engine CPU threads (0 = the cores this process gets: all of them "
          "(or OMP_NUM_THREADS) on an idle machine, fewer while other processes keep cores "
          "busy, re-decided every 0.5 s)");
ABSL_FLAG(int64_t, max_batch_tokens, 8192, "padded source tokens per engine batch");
ABSL_FLAG(int, max_batch_sentences, 64, "sentences per engine batch");
ABSL_FLAG(int, max_queue_delay_ms, 5, "longest a sentence waits for its batch to fill, in ms");
ABSL_FLAG(int64_t, queue_capacity, 4096, "sentences waiting at most; more get RESOURCE_EXHAUSTED");
ABSL_FLAG(int64_t, translation_cache_mib, 0,
          "MiB of finished translations each model keeps (least recently used first), so that "
          "a sentence sent again with the same options is answered without decoding and one "
          "already decoding for another request is decoded once; 0 (the default, until its "
          "memory is understood: docs/server.md) = no cache");
ABSL_FLAG(std::string, translation_cache_scope, "auto",
          "whose requests share cached translations: shared (everyone), per_key (each API "
          "key, or each peer without keys) or auto (per_key with --api_keys_file, else "
          "shared)");
ABSL_FLAG(int64_t, max_queued_sentences_per_client, 2048,
          "sentences one client (one connection) may have waiting; more get RESOURCE_EXHAUSTED, "
          "so that one client's flood leaves room in the queue for the others (who are also "
          "served fairly: the engine's turns go round the clients)");
ABSL_FLAG(int64_t, max_receive_message_bytes, 4 << 20,
          "largest serialized TranslateRequest accepted, in bytes; a larger one gets "
          "RESOURCE_EXHAUSTED naming this limit");
ABSL_FLAG(int64_t, max_entry_code_points, 10000,
          "longest entry of contents (a text of any number of sentences), in Unicode code points");
ABSL_FLAG(int64_t, max_request_code_points, 30000,
          "most Unicode code points in all the contents of one request");
ABSL_FLAG(int, max_sentences_per_request, 256,
          "most sentences in one request, after its texts are cut into sentences");
ABSL_FLAG(int64_t, max_document_code_points, 200000,
          "most Unicode code points in the text of one TranslateDocument file (each paragraph "
          "also within --max_entry_code_points)");
ABSL_FLAG(int, max_document_sentences, 2000,
          "most sentences in one TranslateDocument file (<= --max_queued_sentences_per_client, "
          "which its sentences queue under)");
ABSL_FLAG(int64_t, max_entries_per_request, 256,
          "most entries in a request's contents, blank ones included (counted before the "
          "request is parsed)");
ABSL_FLAG(int, max_beam_size, xlate::server::kDefaultMaxBeamSize,
          "largest beam_size a request may ask for, <= 15");
ABSL_FLAG(int64_t, kv_cache_mib, 0,
          "MiB each model's KV cache may grow to (it starts empty, grows with the sentences "
          "decoding and keeps what it took; when full, new sentences wait for others to "
          "finish); 0 = the memory the process may use (its cgroup's limit, else the "
          "machine's; on a GPU the device's free memory) less the weights and a margin");
ABSL_FLAG(int, decoding_sentences, 64, "sentences decoded together at most; new ones join "
          "between decoding steps as others finish");
ABSL_FLAG(int, express_sentences, 4,
          "sentences of light clients decoded in a second, small decoder that steps first "
          "while the main one is busy, so that a short call under another client's flood "
          "decodes at about its idle pace (0 = no express decoder)");
ABSL_FLAG(int, max_input_tokens, 256, "longest sentence accepted, in SentencePiece tokens "
          "(end token included; at most the model's max_position_embeddings)");
ABSL_FLAG(int, max_output_tokens, 306, "output tokens per sentence at most (caps max_extra_length)");
ABSL_FLAG(int, grace_period_seconds, 30, "on SIGTERM/SIGINT, how long in-flight calls may finish");
ABSL_FLAG(std::string, tls_cert, "", "PEM certificate chain; with --tls_key, serve over TLS");
ABSL_FLAG(std::string, tls_key, "", "PEM private key for --tls_cert");

namespace xlate::server {
namespace {

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

// The TLS pair as OpenSSL reads it: a PEM certificate, a PEM private key, and the key the
// certificate's. gRPC would refuse a bad pair only when the server starts, as a failure to
// listen that blames the port.
absl::Status check_tls_pair(const std::string& cert_pem, const std::string& key_pem) {
  std::unique_ptr<BIO, decltype(&BIO_free)> cert_bio(
      BIO_new_mem_buf(cert_pem.data(), static_cast<int>(cert_pem.size())), BIO_free);
  std::unique_ptr<X509, decltype(&X509_free)> certificate(
      PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr), X509_free);
  std::unique_ptr<BIO, decltype(&BIO_free)> key_bio(
      BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size())), BIO_free);
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> private_key(
      PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr), EVP_PKEY_free);
  ERR_clear_error();
  if (!certificate) return absl::InvalidArgumentError("the certificate is not a PEM certificate");
  if (!private_key) {
    return absl::InvalidArgumentError(
        "the key is not an unencrypted PEM private key");
  }
  if (X509_check_private_key(certificate.get(), private_key.get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError("the key is not the certificate's private key");
  }
  return absl::OkStatus();
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
  if (auto pair = check_tls_pair(*cert_text, *key_text); !pair.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--tls_cert ", cert, " and --tls_key ", key,
                                                   ": ", pair.message()));
  }
  grpc::SslServerCredentialsOptions options;
  options.pem_key_cert_pairs.push_back({*key_text, *cert_text});
  return grpc::SslServerCredentials(options);
}

// The admin service has no authentication: it must never share the clients' port. gRPC's own
// SO_REUSEPORT (turned off below) would let two servers bind one port and split connections
// between them.
absl::Status check_admin_apart(const ListenAddress& admin, int serving_port) {
  const std::string host = absl::GetFlag(FLAGS_host);
  if (admin.port != 0 && admin.port == serving_port && hosts_overlap(admin.host, host)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--admin_address ", admin.host, ":", admin.port, " overlaps the clients' address ", host,
        ":", serving_port, " (--host, --port): the unauthenticated admin service must listen "
        "on another port (or 0 for any free one)"));
  }
  return absl::OkStatus();
}

absl::Status check_flags() {
  const std::pair<const char*, int64_t> positive[] = {
      {"--max_batch_tokens", absl::GetFlag(FLAGS_max_batch_tokens)},
      {"--max_batch_sentences", absl::GetFlag(FLAGS_max_batch_sentences)},
      {"--queue_capacity", absl::GetFlag(FLAGS_queue_capacity)},
      {"--max_queued_sentences_per_client", absl::GetFlag(FLAGS_max_queued_sentences_per_client)},
      {"--max_entry_code_points", absl::GetFlag(FLAGS_max_entry_code_points)},
      {"--max_request_code_points", absl::GetFlag(FLAGS_max_request_code_points)},
      {"--max_receive_message_bytes", absl::GetFlag(FLAGS_max_receive_message_bytes)},
      {"--max_sentences_per_request", absl::GetFlag(FLAGS_max_sentences_per_request)},
      {"--max_entries_per_request", absl::GetFlag(FLAGS_max_entries_per_request)},
      {"--max_document_code_points", absl::GetFlag(FLAGS_max_document_code_points)},
      {"--max_document_sentences", absl::GetFlag(FLAGS_max_document_sentences)},
      {"--translated_files_mib", absl::GetFlag(FLAGS_translated_files_mib)},
      {"--translated_files_minutes", absl::GetFlag(FLAGS_translated_files_minutes)},
      {"--jobs_hours", absl::GetFlag(FLAGS_jobs_hours)},
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
  if (absl::GetFlag(FLAGS_translated_files_mib) > (int64_t{1} << 30) ||
      absl::GetFlag(FLAGS_translated_files_minutes) > 1440 * 365) {
    return absl::InvalidArgumentError(
        "--translated_files_mib must be <= 2^30 and --translated_files_minutes <= a year");
  }
  return absl::OkStatus();
}

// A model to serve, as --model NAME=DIR (or DIR) or --model_dir/--model_name give it.
struct ModelSpec {
  std::string name, dir;
};

std::string name_of_directory(const std::string& dir) {
  const std::filesystem::path path = std::filesystem::path(dir).lexically_normal();
  std::string name = path.filename().string();
  if (name.empty()) name = path.parent_path().filename().string();
  return name;
}

// `repeated`: every value given to --model, in order (absl keeps only the last occurrence of a
// flag, so main() collects them from argv).
absl::StatusOr<std::vector<ModelSpec>> model_specs(const std::vector<std::string>& repeated) {
  std::vector<std::string> values;
  for (const std::string& value : repeated) {
    for (absl::string_view part : absl::StrSplit(value, ',', absl::SkipEmpty())) {
      values.emplace_back(part);
    }
  }
  const std::string model_dir = absl::GetFlag(FLAGS_model_dir);
  if (!model_dir.empty() && !values.empty()) {
    return absl::InvalidArgumentError("give either --model_dir or --model, not both");
  }
  if (!absl::GetFlag(FLAGS_model_name).empty() && model_dir.empty()) {
    return absl::InvalidArgumentError(
        "--model_name goes with --model_dir; with --model, write NAME=DIR");
  }
  std::vector<ModelSpec> specs;
  if (!model_dir.empty()) {
    std::string name = absl::GetFlag(FLAGS_model_name);
    specs.push_back({name.empty() ? name_of_directory(model_dir) : name, model_dir});
  }
  for (const std::string& value : values) {
    const size_t equals = value.find('=');
    ModelSpec spec;
    if (equals == std::string::npos) {
      spec = {name_of_directory(value), value};
    } else {
      spec = {value.substr(0, equals), value.substr(equals + 1)};
    }
    if (spec.name.empty() || spec.dir.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--model \"", value, "\": write NAME=DIR (or DIR, named after its directory)"));
    }
    specs.push_back(spec);
  }
  if (specs.empty()) {
    return absl::InvalidArgumentError("name a model to serve: --model NAME=DIR or --model_dir DIR");
  }
  return specs;
}

// Each model that starts serving and each reload, in the log and the metrics.
class RegistryReporter : public ModelRegistry::Observer {
 public:
  RegistryReporter(ServerMetrics* metrics, const Placement& placement)
      : metrics_(metrics), placement_(placement) {}
  void on_serving(const ServedModel& model) override {
    const ModelConfig& config = model.config();
    metrics_->SetModelInfo({model.name(), model.dir(), device_label(placement_.device),
                            compute_type_label(placement_), config.source_lang,
                            config.target_lang});
    std::cerr << "xlate-server: model \"" << model.name() << "\" loaded from " << model.dir()
              << " (" << config.source_lang << " to " << config.target_lang << ") in "
              << absl::FormatDuration(model.load_time()) << "; KV cache up to "
              << (model.kv_cache_usage().max_blocks * model.kv_cache_usage().block_bytes >> 20)
              << " MiB, taken as sentences decode" << std::endl;
  }
  void on_reload(const std::string& name, const absl::Status& outcome) override {
    metrics_->on_reload(name, outcome.ok());
    if (outcome.ok()) {
      std::cerr << "xlate-server: model \"" << name << "\" reloaded; calls from now on use it"
                << std::endl;
    } else {
      std::cerr << "xlate-server: reload refused: " << outcome.message() << std::endl;
    }
  }

 private:
  ServerMetrics* const metrics_;
  const Placement placement_;
};

int serve(const std::vector<std::string>& model_flags) {
  // SIGTERM/SIGINT (stop) and SIGHUP (reload) are taken by sigwait() below, never by a handler on
  // a random thread. Blocked before anything starts a thread (gRPC's credentials start its
  // core's threads, the CUDA runtime its own): a thread made earlier keeps them unblocked, and
  // the kernel may deliver a SIGTERM there and end the process with it (seen once in CI, exit
  // -15).
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  if (auto status = check_flags(); !status.ok()) return fail(std::string(status.message()), 2);
  auto specs = model_specs(model_flags);
  if (!specs.ok()) return fail(std::string(specs.status().message()), 2);
  auto server_credentials = credentials();
  if (!server_credentials.ok()) return fail(std::string(server_credentials.status().message()), 2);
  const std::string admin_address = absl::GetFlag(FLAGS_admin_address);
  std::optional<ListenAddress> admin_listen;
  if (!admin_address.empty()) {
    auto parsed = parse_listen_address(admin_address, "--admin_address");
    if (!parsed.ok()) return fail(std::string(parsed.status().message()), 2);
    if (auto overlap = check_admin_apart(*parsed, absl::GetFlag(FLAGS_port)); !overlap.ok()) {
      return fail(std::string(overlap.message()), 2);
    }
    if (!is_loopback_host(parsed->host) && absl::GetFlag(FLAGS_tls_cert).empty()) {
      std::cerr << "xlate-server: warning: --admin_address " << admin_address
                << " is not a loopback address and there is no TLS: anyone who reaches it can "
                   "reload models, unauthenticated\n";
    }
    admin_listen = *parsed;
  }
  auto placement =
      resolve_placement(absl::GetFlag(FLAGS_device), absl::GetFlag(FLAGS_compute_type));
  if (!placement.ok()) return fail(std::string(placement.status().message()), 2);
  if (!placement->note.empty()) std::cerr << "xlate-server: " << placement->note << "\n";

  ServingSettings settings;
  settings.placement = placement->placement;
  settings.threads = absl::GetFlag(FLAGS_threads);
  settings.scheduler.limits.max_batch_tokens = absl::GetFlag(FLAGS_max_batch_tokens);
  settings.scheduler.limits.max_batch_sentences = absl::GetFlag(FLAGS_max_batch_sentences);
  settings.scheduler.limits.max_queue_delay =
      absl::Milliseconds(absl::GetFlag(FLAGS_max_queue_delay_ms));
  settings.scheduler.queue_capacity = absl::GetFlag(FLAGS_queue_capacity);
  const int64_t translation_cache_mib = absl::GetFlag(FLAGS_translation_cache_mib);
  if (translation_cache_mib < 0 || translation_cache_mib > (int64_t{1} << 30)) {
    return fail("--translation_cache_mib must be in [0, 2^30] (0 = no cache)", 2);
  }
  settings.scheduler.translation_cache_bytes = translation_cache_mib << 20;
  const std::string cache_scope = absl::GetFlag(FLAGS_translation_cache_scope);
  if (cache_scope != "auto" && cache_scope != "shared" && cache_scope != "per_key") {
    return fail("--translation_cache_scope must be auto, shared or per_key, not \"" +
                    cache_scope.substr(0, 40) + "\"",
                2);
  }
  settings.scheduler.translation_cache_per_client =
      cache_scope == "per_key" ||
      (cache_scope == "auto" && !absl::GetFlag(FLAGS_api_keys_file).empty());
  settings.scheduler.max_queued_per_client = absl::GetFlag(FLAGS_max_queued_sentences_per_client);
  settings.decoder.max_sentences = absl::GetFlag(FLAGS_decoding_sentences);
  settings.decoder.max_beam_size = absl::GetFlag(FLAGS_max_beam_size);
  settings.decoder.max_source_tokens = absl::GetFlag(FLAGS_max_input_tokens);
  settings.decoder.max_target_tokens = absl::GetFlag(FLAGS_max_output_tokens);
  settings.express_sentences = absl::GetFlag(FLAGS_express_sentences);
  const int64_t kv_cache_mib = absl::GetFlag(FLAGS_kv_cache_mib);
  if (kv_cache_mib < 0 || kv_cache_mib > (int64_t{1} << 30)) {
    return fail("--kv_cache_mib must be in [0, 2^30] (0 = from the memory the process may use)",
                2);
  }
  settings.kv_cache_bytes = kv_cache_mib << 20;
  if (settings.express_sentences < 0 || settings.express_sentences > 64) {
    return fail("--express_sentences must be in [0, 64]", 2);
  }
  if (settings.decoder.max_sentences < 1 || settings.decoder.max_beam_size < 1 ||
      settings.decoder.max_source_tokens < 2 || settings.decoder.max_target_tokens < 1) {
    return fail("--decoding_sentences, --max_beam_size and --max_output_tokens must be >= 1 "
                "and --max_input_tokens >= 2", 2);
  }

  ServerMetrics metrics;
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

  RegistryReporter reporter(&metrics, settings.placement);
  auto models = std::make_unique<ModelRegistry>(
      [&](const std::string& name, const std::string& dir) {
        return ServedModel::Load(name, dir, settings,
                                 metrics.ForModel(name, settings.scheduler.queue_capacity));
      },
      &reporter);
  for (const ModelSpec& spec : *specs) {
    if (auto added = models->Add(spec.name, spec.dir); !added.ok()) {
      return fail(std::string(added.message()));
    }
  }

  RequestLimits limits;
  limits.max_request_bytes = absl::GetFlag(FLAGS_max_receive_message_bytes);
  limits.max_sentences_per_request = absl::GetFlag(FLAGS_max_sentences_per_request);
  limits.max_entries_per_request = absl::GetFlag(FLAGS_max_entries_per_request);
  limits.max_entry_code_points = absl::GetFlag(FLAGS_max_entry_code_points);
  limits.max_request_code_points = absl::GetFlag(FLAGS_max_request_code_points);
  limits.max_beam_size = absl::GetFlag(FLAGS_max_beam_size);
  limits.max_document_code_points = absl::GetFlag(FLAGS_max_document_code_points);
  limits.max_document_sentences = absl::GetFlag(FLAGS_max_document_sentences);
  std::unique_ptr<ApiKeys> api_keys;
  if (const std::string keys_file = absl::GetFlag(FLAGS_api_keys_file); !keys_file.empty()) {
    auto loaded = ApiKeys::Load(keys_file);
    if (!loaded.ok()) return fail(std::string(loaded.status().message()), 2);
    api_keys = *std::move(loaded);
  }
  std::unique_ptr<Glossaries> glossaries;
  if (const std::vector<std::string> specs = absl::GetFlag(FLAGS_glossary); !specs.empty()) {
    const ServedModel& first = **models->Route(models->names().front(), "", "");
    auto loaded = Glossaries::Load(specs, first.config().source_lang, first.config().target_lang);
    if (!loaded.ok()) return fail(std::string(loaded.status().message()), 2);
    glossaries = *std::move(loaded);
  }
  TranslationService service(models.get(), &metrics, limits, api_keys.get(), glossaries.get());

  ReflectionV1Service reflection_v1(
      {kTranslatorServiceName, "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection",
       "grpc.reflection.v1alpha.ServerReflection"});
  ReflectionV1AlphaService reflection_v1alpha(&reflection_v1);
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(absl::StrCat(absl::GetFlag(FLAGS_host), ":", absl::GetFlag(FLAGS_port)),
                           *server_credentials, &port);
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.RegisterService(&service);
  builder.RegisterService(&reflection_v1);
  builder.RegisterService(&reflection_v1alpha);
  // The service, not gRPC, enforces --max_receive_message_bytes: gRPC's own refusal happens
  // before any handler (so it could not be counted or name the flag), and it saves no memory,
  // since gRPC 1.51 receives the whole message before comparing its size with its limit.
  builder.SetMaxReceiveMessageSize(-1);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) {
    return fail(absl::StrCat("cannot listen on ", absl::GetFlag(FLAGS_host), ":",
                             absl::GetFlag(FLAGS_port)));
  }
  // The admin service on a server of its own, so that it never answers on the clients' port.
  ModelAdminService admin(models.get(), api_keys.get());
  std::unique_ptr<grpc::Server> admin_server;
  if (admin_listen) {
    // With --port 0 the clients' port is known only now.
    if (auto overlap = check_admin_apart(*admin_listen, port); !overlap.ok()) {
      server->Shutdown(std::chrono::system_clock::now());
      return fail(std::string(overlap.message()), 2);
    }
    grpc::ServerBuilder admin_builder;
    admin_builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    int admin_port = 0;
    admin_builder.AddListeningPort(admin_address, *server_credentials, &admin_port);
    admin_builder.RegisterService(&admin);
    admin_server = admin_builder.BuildAndStart();
    if (!admin_server || admin_port == 0) {
      server->Shutdown(std::chrono::system_clock::now());
      return fail(absl::StrCat("cannot listen on --admin_address ", admin_address), 2);
    }
    std::cerr << "xlate-server: ModelAdmin on "
              << admin_address.substr(0, admin_address.rfind(':')) << ":" << admin_port
              << std::endl;
  }
  // HTTP/JSON: in-process calls to the service above (server/http_gateway.h).
  std::unique_ptr<HttpGateway> http_gateway;
  if (const int http_port = absl::GetFlag(FLAGS_http_port); http_port != 0) {
    if (http_port < 0 || http_port > 65535 || http_port == port) {
      server->Shutdown(std::chrono::system_clock::now());
      return fail(absl::StrCat("--http_port ", http_port,
                               " must be a port in 1..65535 other than the gRPC port ", port),
                  2);
    }
    HttpGatewayOptions http_options;
    http_options.host = absl::GetFlag(FLAGS_host);
    http_options.port = http_port;
    http_options.max_body_bytes = absl::GetFlag(FLAGS_max_receive_message_bytes);
    http_options.max_texts = limits.max_entries_per_request;
    http_options.api_keys = api_keys.get();
    http_options.threads = absl::GetFlag(FLAGS_http_threads);
    http_options.translated_files_bytes = absl::GetFlag(FLAGS_translated_files_mib) << 20;
    http_options.translated_files_kept_for =
        absl::Minutes(absl::GetFlag(FLAGS_translated_files_minutes));
    http_options.jobs_dir = absl::GetFlag(FLAGS_jobs_dir);
    http_options.jobs_kept_for = absl::Hours(absl::GetFlag(FLAGS_jobs_hours));
    http_options.max_connections = absl::GetFlag(FLAGS_http_max_connections);
    http_options.read_timeout_seconds = absl::GetFlag(FLAGS_http_request_seconds);
    http_options.idle_seconds = absl::GetFlag(FLAGS_http_idle_seconds);
    const std::pair<const char*, std::pair<int, std::pair<int, int>>> http_bounds[] = {
        {"--http_threads", {http_options.threads, {1, 4096}}},
        {"--http_max_connections", {http_options.max_connections, {1, 1 << 20}}},
        {"--http_request_seconds", {http_options.read_timeout_seconds, {1, 3600}}},
        {"--http_idle_seconds", {http_options.idle_seconds, {1, 86400}}}};
    for (const auto& [flag, bound] : http_bounds) {
      const auto& [value, range] = bound;
      if (value < range.first || value > range.second) {
        server->Shutdown(std::chrono::system_clock::now());
        return fail(absl::StrCat(flag, " ", value, " must be in ", range.first, "..",
                                 range.second), 2);
      }
    }
    http_options.tls_cert = absl::GetFlag(FLAGS_tls_cert);
    http_options.tls_key = absl::GetFlag(FLAGS_tls_key);
    http_options.cors_origins = absl::GetFlag(FLAGS_http_cors_origins);
    grpc::ChannelArguments channel_arguments;
    channel_arguments.SetMaxReceiveMessageSize(-1);
    auto started =
        HttpGateway::Start(server->InProcessChannel(channel_arguments), http_options);
    if (!started.ok()) {
      server->Shutdown(std::chrono::system_clock::now());
      return fail(std::string(started.status().message()), 2);
    }
    http_gateway = std::move(*started);
    std::cerr << "xlate-server: " << (http_options.tls_cert.empty() ? "HTTP" : "HTTPS") << " on "
              << http_options.host << ":" << http_gateway->port() << std::endl;
  }
  grpc::HealthCheckServiceInterface* health = server->GetHealthCheckService();
  health->SetServingStatus(kTranslatorServiceName, true);
  health->SetServingStatus(true);
  std::vector<std::string> quoted;
  for (const std::string& name : models->names()) quoted.push_back("\"" + name + "\"");
  std::cerr << "xlate-server: serving model" << (quoted.size() > 1 ? "s " : " ")
            << absl::StrJoin(quoted, ", ") << " on " << absl::GetFlag(FLAGS_host) << ":" << port
            << ", metrics on port " << exposer->GetListeningPorts().front() << std::endl;

  int received = 0;
  for (;;) {
    sigwait(&signals, &received);
    if (received != SIGHUP) break;
    std::cerr << "xlate-server: SIGHUP: reloading every model from its directory" << std::endl;
    models->ReloadAllInBackground([](const std::string&, const absl::Status&) {});
    if (glossaries) {
      const absl::Status reloaded = glossaries->Reload();
      std::cerr << "xlate-server: SIGHUP: "
                << (reloaded.ok() ? std::string("glossaries reloaded")
                                  : std::string(reloaded.message()))
                << std::endl;
    }
    if (api_keys) {
      const absl::Status reloaded = api_keys->Reload();
      std::cerr << "xlate-server: SIGHUP: "
                << (reloaded.ok() ? std::string("API keys reloaded")
                                  : absl::StrCat("API keys kept: ", reloaded.message()))
                << std::endl;
    }
  }
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
  // Document jobs first: a running one stays unfinished, taken up again on the next start.
  if (http_gateway) http_gateway->StopJobs();
  service.StartDrain();
  if (!service.WaitUntilIdle(grace_end)) {
    std::cerr << "xlate-server: grace period over; cancelling the calls still in flight"
              << std::endl;
  }
  // Waits for every call to end (their jobs are cancelled, and each model's scheduler still
  // runs), so that no call holds a model afterwards.
  server->Shutdown(std::chrono::system_clock::now());
  // Then HTTP, whose requests still in flight were in-process calls just cancelled (a later
  // one finds the server shut down): their workers end, and the connections left (idle, or
  // clients still sending) are closed. A worker still busy a second past the grace period is
  // not waited for: the process exits.
  if (http_gateway && !http_gateway->Stop(std::max(grace_end, absl::Now()) + absl::Seconds(1))) {
    std::cerr << "xlate-server: HTTP requests still being handled after the grace period; "
                 "exiting with them open"
              << std::endl;
    if (admin_server) admin_server->Shutdown(std::chrono::system_clock::now());
    std::cerr << "xlate-server: stopped" << std::endl;
    std::_Exit(0);
  }
  if (admin_server) admin_server->Shutdown(std::chrono::system_clock::now());
  // Destroys every model (each scheduler finishes what it holds, and runs its last completions
  // while the service they answer through still exists).
  models.reset();
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
      "xlate-server --model NAME=DIR [--model NAME=DIR ...] [--port 50051] "
      "[--metrics_port 9464] [--admin_address HOST:PORT] [flags]\n"
      "Serves xlate.v1.Translator (Translate, TranslateStream), grpc.health.v1.Health and "
      "server reflection; SIGHUP reloads every model without downtime.");
  std::vector<std::string> model_flags;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;
    for (const char* prefix : {"--model=", "-model="}) {
      if (absl::StartsWith(arg, prefix)) model_flags.push_back(arg.substr(strlen(prefix)));
    }
    if ((arg == "--model" || arg == "-model") && i + 1 < argc) model_flags.push_back(argv[++i]);
  }
  absl::ParseCommandLine(argc, argv);
  return xlate::server::serve(model_flags);
}
