// HTTP/JSON in front of the xlate.v1.Translator service, on --http_port: every route is an
// in-process gRPC call to the same service (grpc::Server::InProcessChannel), so an HTTP request
// gets the limits, batching, deadlines, metrics (counted under the gRPC code it ends with) and
// drain of a gRPC one, and nothing about a request is checked twice.
//
// Routes (server/http_server.h, on libmicrohttpd; bodies through Protobuf's JSON mapping):
//   POST /v1/translate          TranslateRequest JSON -> TranslateResponse JSON
//   POST /v1/translate:stream   the same request -> TranslateStreamResponse messages as
//                               newline-delimited JSON (application/x-ndjson), one per line
//   POST /v1/detect             DetectLanguageRequest JSON -> DetectLanguageResponse JSON
//   GET  /v1/models             ListModelsResponse JSON
//   POST /translate             LibreTranslate's: q (string or array), source ("auto":
//                               detected), target, format (text or html: mime_type
//                               text/html), alternatives; JSON or form body ->
//                               {translatedText, alternatives?, detectedLanguage?}; errors
//                               {"error": message}
//   POST /detect                LibreTranslate's: q -> [{language, confidence (percent)}]
//   GET  /                      a page to try it (server/web/index.html)
//   GET  /languages             LibreTranslate's: [{code, name, targets}] from the served models
//   POST /v1/translateDocument  TranslateDocumentRequest JSON (content in base64) ->
//                               TranslateDocumentResponse JSON
//   POST /translate_file        LibreTranslate's: a multipart form of file, source, target,
//                               api_key -> {translatedFileUrl}, by TranslateDocument
//   GET  /download_file/<id>/<name>  that file, while the server keeps it
//                               (server/translated_files.h)
//   POST /v1/documents          TranslateDocumentRequest JSON -> 202 and the new job's status
//                               (server/document_jobs.h): {id, state, sentencesDone,
//                               sentencesTotal, error?, fileName?, mimeType?, createTime}
//   GET  /v1/documents/{id}     its status; GET /v1/documents/{id}/content its file once DONE;
//                               DELETE /v1/documents/{id} (or POST .../{id}:cancel) cancels it
// A gRPC status becomes its HTTP status (INVALID_ARGUMENT 400, NOT_FOUND 404,
// RESOURCE_EXHAUSTED 429, UNAVAILABLE 503, DEADLINE_EXCEEDED 504, ...); a v1 error body is
// {"code": <gRPC code>, "message": ...}. The header X-Request-Timeout (seconds) sets the call's
// deadline. The HTTP client's address is forwarded as the call's client, so the scheduler's
// per-client share holds across HTTP clients too.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/channel.h"

namespace xlate::server {

class ApiKeys;
class DocumentJobs;
class HttpServer;

struct HttpGatewayOptions {
  std::string host = "0.0.0.0";
  int port = 0;  // 0: any free port (HttpGateway::port() tells which)
  // Bodies larger than this get 413 naming --max_receive_message_bytes.
  int64_t max_body_bytes = 4 << 20;
  // Texts a request may hold (--max_entries_per_request): a LibreTranslate body is refused at
  // the first text past it, while it is read (server/libre_request.h).
  int64_t max_texts = 256;
  // The server's keys (--api_keys_file; null: none): a request's header key is checked before
  // its body is read.
  ApiKeys* api_keys = nullptr;
  // Seconds a request may take to arrive in full after its request line (slow clients are cut
  // off with 408), and seconds a connection may wait for its next request line
  // (--http_request_seconds, --http_idle_seconds).
  int read_timeout_seconds = 10;
  int idle_seconds = 30;
  // Requests handled at once (--http_threads): a request's worker waits for its in-process gRPC
  // call. Connections, idle or sending, hold no worker.
  int threads = 64;
  // Connections open at once (--http_max_connections), within the open-file limit: past it a new
  // one is closed at once.
  int max_connections = 16384;
  // HTTPS with this PEM certificate chain and key (--tls_cert, --tls_key), when both are set.
  std::string tls_cert, tls_key;
  // Translated files kept for /download_file: bytes in all (the oldest go first) and for how
  // long (--translated_files_mib, --translated_files_minutes).
  int64_t translated_files_bytes = int64_t{256} << 20;
  absl::Duration translated_files_kept_for = absl::Minutes(30);
  // Document jobs (server/document_jobs.h): kept in this directory across restarts (empty: in
  // memory), each for this long (--jobs_dir, --jobs_hours).
  std::string jobs_dir;
  absl::Duration jobs_kept_for = absl::Hours(24);
  // Origins whose pages may call the API from a browser (CORS): exact origins such as
  // "https://example.org", or "*" for any; empty: none but the server's own page.
  std::vector<std::string> cors_origins;
};

class HttpGateway {
 public:
  // Listens on options.host:options.port and serves from a thread of its own until Stop().
  // `channel` reaches the Translator service (the server's in-process channel).
  static absl::StatusOr<std::unique_ptr<HttpGateway>> Start(
      std::shared_ptr<grpc::Channel> channel, const HttpGatewayOptions& options);
  ~HttpGateway();

  int port() const;
  // Stops listening, waits until `deadline` for the requests being handled to be answered (their
  // gRPC calls end with the service's own drain or deadline), then closes every connection,
  // idle or still sending. False when requests were still being handled then: the caller bounds
  // its shutdown by exiting (the object must then not be destroyed).
  bool Stop(absl::Time deadline = absl::InfiniteFuture());
  // Stops the document jobs' worker (the running job stays unfinished, to be taken up again on
  // the next start), so that no job holds the server's drain up.
  void StopJobs();

 private:
  HttpGateway() = default;
  std::unique_ptr<HttpServer> http_;
  std::shared_ptr<DocumentJobs> jobs_;
};

}  // namespace xlate::server
