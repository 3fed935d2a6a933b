#include "server/http_gateway.h"

#include <unicode/locid.h>
#include <unicode/unistr.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "proto/translator.grpc.pb.h"
#include "server/caller_admission.h"
#include "server/document_jobs.h"
#include "server/grpc_status.h"
#include "server/http_server.h"
#include "server/libre_request.h"
#include "server/translated_files.h"
#include "server/translation_service.h"
#include "server/web_page.h"
#include "text/utf8.h"

namespace xlate::server {
namespace {

using google::protobuf::ListValue;
using google::protobuf::Struct;
using google::protobuf::Value;
using Stub = xlate::v1::Translator::Stub;

constexpr char kJson[] = "application/json";

// The HTTP status a gRPC status becomes (as grpc-gateway and Google's REST APIs map them).
int http_status(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK: return 200;
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::FAILED_PRECONDITION:
    case grpc::StatusCode::OUT_OF_RANGE: return 400;
    case grpc::StatusCode::UNAUTHENTICATED: return 401;
    case grpc::StatusCode::PERMISSION_DENIED: return 403;
    case grpc::StatusCode::NOT_FOUND: return 404;
    case grpc::StatusCode::ALREADY_EXISTS:
    case grpc::StatusCode::ABORTED: return 409;
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return 429;
    case grpc::StatusCode::CANCELLED: return 499;
    case grpc::StatusCode::UNIMPLEMENTED: return 501;
    case grpc::StatusCode::UNAVAILABLE: return 503;
    case grpc::StatusCode::DEADLINE_EXCEEDED: return 504;
    default: return 500;
  }
}

std::string to_json(const google::protobuf::Message& message) {
  std::string json;
  // Every message here comes from the service or is built below: printing cannot fail.
  (void)google::protobuf::util::MessageToJsonString(message, &json);
  return json;
}

Value string_value(const std::string& text) {
  Value value;
  value.set_string_value(text);
  return value;
}

// A v1 error body: {"code": <gRPC code>, "message": ...}, google.rpc.Status's JSON shape.
void v1_error(HttpResponse& response, grpc::StatusCode code, const std::string& message) {
  Struct body;
  (*body.mutable_fields())["code"].set_number_value(static_cast<int>(code));
  (*body.mutable_fields())["message"] = string_value(message);
  response.status = http_status(code);
  response.set_content(to_json(body), kJson);
}

// LibreTranslate's error body: {"error": message}.
void libre_error(HttpResponse& response, int status, const std::string& message) {
  Struct body;
  (*body.mutable_fields())["error"] = string_value(message);
  response.status = status;
  response.set_content(to_json(body), kJson);
}

// The call's deadline from X-Request-Timeout (seconds, > 0), the HTTP client's address, and
// its API key (the Authorization or X-API-Key header, else `form_key`: LibreTranslate's
// api_key field) as the metadata the service reads (server/caller_admission.h).
grpc::Status prepare_call(const HttpRequest& request, grpc::ClientContext& context,
                          const std::string& form_key = std::string()) {
  context.AddMetadata(kHttpClientMetadata, request.remote_addr);
  if (request.has_header("Authorization")) {
    context.AddMetadata("authorization", request.header_value("Authorization"));
  } else if (request.has_header("X-API-Key")) {
    context.AddMetadata("x-api-key", request.header_value("X-API-Key"));
  } else if (!form_key.empty()) {
    context.AddMetadata("x-api-key", form_key);
  }
  if (!request.has_header("X-Request-Timeout")) return grpc::Status::OK;
  const std::string text = request.header_value("X-Request-Timeout");
  double seconds = 0;
  if (!absl::SimpleAtod(text, &seconds) || !std::isfinite(seconds) || seconds <= 0 ||
      seconds > 86400) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "header X-Request-Timeout must be a number of seconds in (0, 86400], "
                        "not \"" + text.substr(0, 64) + "\"");
  }
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6)));
  return grpc::Status::OK;
}

// The API key of the request's headers (Authorization's bearer token, else X-API-Key; empty for
// a header without one); nullopt without either header.
std::optional<std::string> header_key(const HttpRequest& request) {
  const auto header = [&request](const char* name) -> std::optional<std::string> {
    if (!request.has_header(name)) return std::nullopt;
    return request.header_value(name);
  };
  const std::optional<std::string> authorization = header("Authorization");
  const std::optional<std::string> x_api_key = header("X-API-Key");
  if (!authorization && !x_api_key) return std::nullopt;
  const auto view = [](const std::optional<std::string>& value) {
    return value ? std::optional<absl::string_view>(*value) : std::nullopt;
  };
  return presented_api_key(view(authorization), view(x_api_key));
}

// The API key of the request's headers, checked before its body is read, so that a caller
// without a valid key costs no parse (the service admits it again, with its quotas). A
// LibreTranslate body may carry the key itself (api_key): `key_may_be_in_body` lets a request
// without the headers through to its bounded parse.
absl::Status verify_key_first(ApiKeys* keys, const HttpRequest& request, bool key_may_be_in_body) {
  if (keys == nullptr) return absl::OkStatus();
  const std::optional<std::string> key = header_key(request);
  if (!key && key_may_be_in_body) return absl::OkStatus();
  return keys->Verify(key.value_or(std::string()));
}

// Refuses a LibreTranslate request: 400, or 403 for its key, as LibreTranslate does.
void libre_refusal(HttpResponse& response, const absl::Status& status) {
  libre_error(response, status.code() == absl::StatusCode::kUnauthenticated ? 403 : 400,
              std::string(status.message()));
}

// The key check of the v1 routes (a key in the headers, refused as a v1 error) and of
// LibreTranslate's (the headers' key if any, else the body's api_key, which the service checks),
// run when the headers have come; none without keys.
HttpHeadCheck v1_key_check(ApiKeys* keys) {
  if (keys == nullptr) return HttpHeadCheck();
  return [keys](const HttpRequest& request, HttpResponse& response) {
    const absl::Status key = verify_key_first(keys, request, /*key_may_be_in_body=*/false);
    if (!key.ok()) {
      v1_error(response, static_cast<grpc::StatusCode>(key.code()), std::string(key.message()));
    }
    return key.ok();
  };
}

HttpHeadCheck libre_key_check(ApiKeys* keys) {
  if (keys == nullptr) return HttpHeadCheck();
  return [keys](const HttpRequest& request, HttpResponse& response) {
    const absl::Status key = verify_key_first(keys, request, /*key_may_be_in_body=*/true);
    if (!key.ok()) libre_refusal(response, key);
    return key.ok();
  };
}

// The gateway's routes, in the order they are matched (server/http_server.h).
class Routes {
 public:
  void Get(const std::string& pattern, HttpHandler handler, HttpHeadCheck check = {}) {
    Add("GET", pattern, std::move(handler), std::move(check));
  }
  void Post(const std::string& pattern, HttpHandler handler, HttpHeadCheck check = {}) {
    Add("POST", pattern, std::move(handler), std::move(check));
  }
  void Put(const std::string& pattern, HttpHandler handler) {
    Add("PUT", pattern, std::move(handler), {});
  }
  void Delete(const std::string& pattern, HttpHandler handler, HttpHeadCheck check = {}) {
    Add("DELETE", pattern, std::move(handler), std::move(check));
  }
  void Options(const std::string& pattern, HttpHandler handler) {
    Add("OPTIONS", pattern, std::move(handler), {});
  }
  std::vector<HttpServer::Route> Take() { return std::move(routes_); }

 private:
  void Add(const char* method, const std::string& pattern, HttpHandler handler,
           HttpHeadCheck check) {
    routes_.push_back({method, std::regex(pattern), std::move(handler), std::move(check)});
  }
  std::vector<HttpServer::Route> routes_;
};

// A v1 request body: the message's JSON mapping, unknown fields refused.
grpc::Status parse_body(const HttpRequest& request, google::protobuf::Message& message) {
  // Protobuf's parser would log an ERROR line for each such body before refusing it.
  if (size_t bad = 0; !is_valid_utf8(request.body, &bad)) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("the body is not valid UTF-8 (byte ", bad, ")"));
  }
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto parsed = google::protobuf::util::JsonStringToMessage(request.body, &message, options);
  if (parsed.ok()) return grpc::Status::OK;
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                      absl::StrCat("the body is not a ", message.GetDescriptor()->full_name(),
                                   " in JSON: ", std::string(parsed.message())));
}

// One TranslateStream call whose messages the response's content provider writes as lines.
struct StreamCall {
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientReader<xlate::v1::TranslateStreamResponse>> reader;
  xlate::v1::TranslateStreamResponse first;
  bool finished = false;

  // Ends the call whatever state it is in (the client went away: cancel, drain, finish).
  void Abandon() {
    if (finished) return;
    context.TryCancel();
    xlate::v1::TranslateStreamResponse ignored;
    while (reader->Read(&ignored)) {
    }
    reader->Finish();
    finished = true;
  }
};

// A v1 unary route: the body (none for a GET) as the request's JSON, the in-process call, its
// reply as JSON or its status as a v1 error.
template <typename Request, typename Reply>
HttpHandler v1_unary(std::shared_ptr<Stub> stub,
                     grpc::Status (Stub::*method)(grpc::ClientContext*, const Request&, Reply*),
                     bool has_body) {
  return [stub, method, has_body](const HttpRequest& request, HttpResponse& response) {
    Request message;
    grpc::ClientContext context;
    grpc::Status status;
    if (has_body) status = parse_body(request, message);
    if (status.ok()) status = prepare_call(request, context);
    Reply reply;
    if (status.ok()) status = ((*stub).*method)(&context, message, &reply);
    if (!status.ok()) return v1_error(response, status.error_code(), status.error_message());
    response.set_content(to_json(reply), kJson);
  };
}

void serve_v1(Routes& http, std::shared_ptr<Stub> stub, ApiKeys* keys) {
  const HttpHeadCheck key_check = v1_key_check(keys);
  http.Post("/v1/translate", v1_unary(stub, &Stub::Translate, /*has_body=*/true), key_check);
  http.Post("/v1/translateDocument", v1_unary(stub, &Stub::TranslateDocument, /*has_body=*/true),
            key_check);
  http.Post("/v1/translate:stream", [stub](const HttpRequest& request, HttpResponse& response) {
    xlate::v1::TranslateRequest message;
    auto call = std::make_shared<StreamCall>();
    grpc::Status status = parse_body(request, message);
    if (status.ok()) status = prepare_call(request, call->context);
    if (!status.ok()) return v1_error(response, status.error_code(), status.error_message());
    call->reader = stub->TranslateStream(&call->context, message);
    // The first message is awaited here, so that a request refused at once gets its HTTP status
    // rather than a 200 whose only line is an error.
    if (!call->reader->Read(&call->first)) {
      call->finished = true;
      status = call->reader->Finish();
      if (status.ok()) {
        status = grpc::Status(grpc::StatusCode::INTERNAL, "the stream ended without a response");
      }
      return v1_error(response, status.error_code(), status.error_message());
    }
    response.set_header("Content-Type", "application/x-ndjson");
    response.stream = [call](HttpStreamWriter& writer) {
      std::string line = to_json(call->first) + "\n";
      xlate::v1::TranslateStreamResponse next;
      for (;;) {
        if (!writer.Write(line)) return call->Abandon();
        if (!call->reader->Read(&next)) break;
        line = to_json(next) + "\n";
      }
      const grpc::Status ended = call->reader->Finish();
      call->finished = true;
      if (!ended.ok()) {
        // Past the headers, an error can only be the stream's last line.
        Struct error, body;
        (*error.mutable_fields())["code"].set_number_value(ended.error_code());
        (*error.mutable_fields())["message"] = string_value(ended.error_message());
        *(*body.mutable_fields())["error"].mutable_struct_value() = error;
        writer.Write(to_json(body) + "\n");
      }
    };
  }, key_check);

  http.Post("/v1/detect", v1_unary(stub, &Stub::DetectLanguage, /*has_body=*/true), key_check);
  http.Get("/v1/models", v1_unary(stub, &Stub::ListModels, /*has_body=*/false), key_check);
}

// English names of language codes (ICU's display names), for /languages.
std::string language_name(const std::string& code) {
  UErrorCode error = U_ZERO_ERROR;
  const icu::Locale locale = icu::Locale::forLanguageTag(code, error);
  if (U_FAILURE(error) || locale.isBogus()) return code;
  icu::UnicodeString name;
  locale.getDisplayName(icu::Locale::getEnglish(), name);
  std::string utf8;
  name.toUTF8String(utf8);
  return utf8.empty() ? code : utf8;
}

// A failed call in LibreTranslate's terms: it answers 400, 403 (a missing or wrong key), 429
// and 500 only.
void libre_status(HttpResponse& response, const grpc::Status& status) {
  const int code = http_status(status.error_code());
  libre_error(response,
              code == 401   ? 403
              : code == 429 ? 429
              : code == 404 || code == 501 || code == 409 ? 400
              : code >= 500 ? 500
                            : code,
              status.error_message());
}

// {"language", "confidence" (percent)}: LibreTranslate's detection.
Struct libre_detection(const xlate::v1::DetectedLanguage& detected) {
  Struct out;
  (*out.mutable_fields())["language"] = string_value(detected.language_code());
  (*out.mutable_fields())["confidence"].set_number_value(
      std::round(detected.confidence() * 1000.0) / 10.0);
  return out;
}

// The LibreTranslate request of an HTTP one: a JSON body, or a form's fields (URL-encoded or
// multipart).
absl::StatusOr<LibreRequest> read_libre(const HttpRequest& request, int64_t max_texts,
                                        bool with_languages) {
  if (request.header_value("Content-Type").find("application/json") != std::string::npos) {
    return read_libre_json(request.body, max_texts, with_languages);
  }
  std::vector<std::pair<absl::string_view, absl::string_view>> pairs;
  for (const auto& [name, field] : request.fields) pairs.emplace_back(name, field.value);
  return read_libre_form(pairs, max_texts, with_languages);
}


void serve_libretranslate(Routes& http, std::shared_ptr<Stub> stub, ApiKeys* keys,
                          int64_t max_texts) {
  const HttpHeadCheck key_check = libre_key_check(keys);
  http.Post("/detect", [stub, max_texts](const HttpRequest& request, HttpResponse& response) {
    // /detect takes q alone: source and target are not asked for here.
    auto libre = read_libre(request, max_texts, /*with_languages=*/false);
    if (!libre.ok()) return libre_refusal(response, libre.status());
    xlate::v1::DetectLanguageRequest message;
    for (const std::string& text : libre->texts) message.add_contents(text);
    grpc::ClientContext context;
    grpc::Status status = prepare_call(request, context, libre->api_key);
    xlate::v1::DetectLanguageResponse detected;
    if (status.ok()) status = stub->DetectLanguage(&context, message, &detected);
    if (!status.ok()) return libre_status(response, status);
    ListValue per_text;
    for (const xlate::v1::LanguageDetection& detection : detected.detections()) {
      ListValue candidates;
      for (const xlate::v1::DetectedLanguage& language : detection.languages()) {
        *candidates.add_values()->mutable_struct_value() = libre_detection(language);
      }
      *per_text.add_values()->mutable_list_value() = candidates;
    }
    response.set_content(to_json(libre->q_is_list ? per_text : per_text.values(0).list_value()),
                         kJson);
   }, key_check);


  http.Post("/translate", [stub, max_texts](const HttpRequest& request, HttpResponse& response) {
    auto libre = read_libre(request, max_texts, /*with_languages=*/true);
    if (!libre.ok()) return libre_refusal(response, libre.status());
    xlate::v1::TranslateRequest message;
    for (const std::string& text : libre->texts) message.add_contents(text);
    message.set_source_language_code(libre->source);
    message.set_target_language_code(libre->target);
    if (libre->format == "html") message.set_mime_type("text/html");
    if (libre->alternatives > 0) {
      const int n_best = 1 + libre->alternatives;
      message.mutable_options()->set_n_best(n_best);
      message.mutable_options()->set_beam_size(std::max(4, n_best));
    }
    grpc::ClientContext context;
    grpc::Status status = prepare_call(request, context, libre->api_key);
    xlate::v1::TranslateResponse translated;
    if (status.ok()) status = stub->Translate(&context, message, &translated);
    if (!status.ok()) return libre_status(response, status);
    ListValue texts, alternatives;
    for (const xlate::v1::Translation& translation : translated.translations()) {
      *texts.add_values() = string_value(translation.translated_text());
      ListValue others;
      for (int i = 1; i < translation.hypotheses_size(); ++i) {
        *others.add_values() = string_value(translation.hypotheses(i).text());
      }
      *alternatives.add_values()->mutable_list_value() = others;
    }
    Struct body;
    auto& fields = *body.mutable_fields();
    if (translated.has_detected_source_language()) {
      // LibreTranslate's shape: the language and a confidence in percent.
      Value& detected = fields["detectedLanguage"];
      *detected.mutable_struct_value() =
          libre_detection(translated.detected_source_language());
      if (libre->q_is_list) {
        ListValue each;
        for (int i = 0; i < texts.values_size(); ++i) *each.add_values() = detected;
        *fields["detectedLanguage"].mutable_list_value() = each;
      }
    }
    if (libre->q_is_list) {
      *fields["translatedText"].mutable_list_value() = texts;
      if (libre->alternatives > 0) *fields["alternatives"].mutable_list_value() = alternatives;
    } else {
      fields["translatedText"] = texts.values(0);
      if (libre->alternatives > 0) {
        *fields["alternatives"].mutable_list_value() = alternatives.values(0).list_value();
      }
    }
    response.set_content(to_json(body), kJson);
  }, key_check);

  http.Get("/languages", [stub](const HttpRequest& request, HttpResponse& response) {
    grpc::ClientContext context;
    grpc::Status status = prepare_call(request, context);
    xlate::v1::ListModelsResponse models;
    if (status.ok()) status = stub->ListModels(&context, xlate::v1::ListModelsRequest(), &models);
    if (!status.ok()) return libre_status(response, status);
    // Each language a model reads, with the languages it can be translated into; a
    // multilingual model (no single source language) reads every language it writes.
    std::map<std::string, std::set<std::string>> targets;
    for (const xlate::v1::ModelInfo& model : models.models()) {
      std::set<std::string> writes(model.target_language_codes().begin(),
                                   model.target_language_codes().end());
      if (!model.target_language_code().empty()) writes.insert(model.target_language_code());
      std::set<std::string> reads;
      if (!model.source_language_code().empty()) {
        reads.insert(model.source_language_code());
      } else {
        reads = writes;
      }
      for (const std::string& source : reads) {
        for (const std::string& target : writes) {
          if (target != source) targets[source].insert(target);
        }
      }
      for (const std::string& target : writes) targets[target];
    }
    ListValue languages;
    for (const auto& [code, reachable] : targets) {
      Struct language;
      auto& fields = *language.mutable_fields();
      fields["code"] = string_value(code);
      fields["name"] = string_value(language_name(code));
      ListValue list;
      for (const std::string& target : reachable) *list.add_values() = string_value(target);
      *fields["targets"].mutable_list_value() = list;
      *languages.add_values()->mutable_struct_value() = language;
    }
    response.set_content(to_json(languages), kJson);
  });
}

// `text` with every byte outside RFC 3986's unreserved characters as %XX: a file name in a URL
// path and in Content-Disposition's filename* (RFC 6266).
std::string percent_encoded(absl::string_view text) {
  std::string out;
  for (const char c : text) {
    const unsigned char byte = static_cast<unsigned char>(c);
    if (absl::ascii_isalnum(byte) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += c;
    } else {
      absl::StrAppend(&out, "%", absl::Hex(byte, absl::kZeroPad2));
    }
  }
  return out;
}

// LibreTranslate's files: POST /translate_file (a multipart form: file, source, target,
// api_key) translates the file by TranslateDocument and answers {translatedFileUrl}, where GET
// /download_file/<id>/<name> serves it while `files` keeps it.
void serve_libretranslate_files(Routes& http, std::shared_ptr<Stub> stub, ApiKeys* keys,
                                std::shared_ptr<TranslatedFiles> files, bool https) {
  http.Post("/translate_file", [stub, files, https](const HttpRequest& request,
                                                    HttpResponse& response) {
    const HttpField* upload = request.field("file");
    if (upload == nullptr || upload->file_name.empty()) {
      return libre_error(response, 400, "Invalid request: missing file parameter");
    }
    const auto field = [&request](const char* name) {
      const HttpField* found = request.field(name);
      return found == nullptr ? std::string() : found->value;
    };
    const std::string target = field("target");
    if (target.empty()) return libre_error(response, 400, "Invalid request: missing target parameter");
    xlate::v1::TranslateDocumentRequest message;
    message.set_content(upload->value);
    message.set_file_name(upload->file_name);
    message.set_source_language_code(field("source"));
    message.set_target_language_code(target);
    grpc::ClientContext context;
    grpc::Status status = prepare_call(request, context, field("api_key"));
    xlate::v1::TranslateDocumentResponse translated;
    if (status.ok()) status = stub->TranslateDocument(&context, message, &translated);
    if (!status.ok()) return libre_status(response, status);
    // The file's own name, without a folder a client may have sent with it.
    std::string name = upload->file_name.substr(upload->file_name.find_last_of("/\\") + 1);
    const std::optional<std::string> id =
        files->Put({name, translated.mime_type(), std::move(*translated.mutable_content())});
    if (!id) {
      return libre_error(response, 500, "the translated file is larger than the server keeps");
    }
    Struct body;
    (*body.mutable_fields())["translatedFileUrl"] = string_value(absl::StrCat(
        https ? "https://" : "http://", request.header_value("Host"), "/download_file/", *id,
        "/", percent_encoded(name)));
    response.set_content(to_json(body), kJson);
  }, libre_key_check(keys));
  // The name is percent-decoded by then, and may hold anything.
  http.Get(R"(/download_file/([0-9a-f]{32})/.*)",
           [files](const HttpRequest& request, HttpResponse& response) {
             const std::optional<TranslatedFiles::File> file = files->Get(request.matches[1]);
             if (!file) {
               return libre_error(response, 404,
                                  "no such file: translated files are kept for a while only");
             }
             response.set_header("Content-Disposition",
                                 absl::StrCat("attachment; filename*=UTF-8''",
                                              percent_encoded(file->name)));
             response.set_content(file->content, file->mime_type);
           });
}

// A document job's status as JSON.
Struct job_json(const DocumentJobs::Status& status) {
  Struct out;
  auto& fields = *out.mutable_fields();
  fields["id"] = string_value(status.id);
  fields["state"] = string_value(status.state);
  fields["sentencesDone"].set_number_value(status.sentences_done);
  fields["sentencesTotal"].set_number_value(status.sentences_total);
  if (!status.error.empty()) fields["error"] = string_value(status.error);
  if (!status.file_name.empty()) fields["fileName"] = string_value(status.file_name);
  if (!status.mime_type.empty()) fields["mimeType"] = string_value(status.mime_type);
  fields["createTime"] = string_value(absl::FormatTime(absl::RFC3339_sec, status.created,
                                                       absl::UTCTimeZone()));
  return out;
}

// Asynchronous files (server/document_jobs.h): POST /v1/documents (a TranslateDocumentRequest
// in JSON) creates a job, answered 202 with its status; GET /v1/documents/{id} is its status,
// GET /v1/documents/{id}/content its file once DONE, DELETE /v1/documents/{id} (or POST
// /v1/documents/{id}:cancel) cancels it.
void serve_document_jobs(Routes& http, std::shared_ptr<DocumentJobs> jobs, ApiKeys* keys) {
  // The caller, whose key (if keys are in use) the routes' key check has found valid.
  const HttpHeadCheck key_check = v1_key_check(keys);
  const auto caller_of = [](const HttpRequest& request) {
    return DocumentJobs::Caller{header_key(request).value_or(std::string()), request.remote_addr};
  };
  const auto answer = [](HttpResponse& response,
                         const absl::StatusOr<DocumentJobs::Status>& status, int ok_code) {
    if (!status.ok()) {
      return v1_error(response, static_cast<grpc::StatusCode>(status.status().code()),
                      std::string(status.status().message()));
    }
    response.status = ok_code;
    response.set_content(to_json(job_json(*status)), kJson);
  };
  http.Post("/v1/documents", [jobs, caller_of, answer](const HttpRequest& request,
                                                        HttpResponse& response) {
    const DocumentJobs::Caller caller = caller_of(request);
    xlate::v1::TranslateDocumentRequest message;
    if (grpc::Status parsed = parse_body(request, message); !parsed.ok()) {
      return v1_error(response, parsed.error_code(), parsed.error_message());
    }
    answer(response, jobs->Create(std::move(message), caller), 202);
  }, key_check);
  http.Get(R"(/v1/documents/([^/:]+))", [jobs, caller_of, answer](const HttpRequest& request,
                                                                  HttpResponse& response) {
    const DocumentJobs::Caller caller = caller_of(request);
    answer(response, jobs->Get(request.matches[1], caller), 200);
  }, key_check);
  http.Get(R"(/v1/documents/([^/:]+)/content)", [jobs, caller_of](const HttpRequest& request,
                                                                   HttpResponse& response) {
    const DocumentJobs::Caller caller = caller_of(request);
    auto file = jobs->Content(request.matches[1], caller);
    if (!file.ok()) {
      return v1_error(response, static_cast<grpc::StatusCode>(file.status().code()),
                      std::string(file.status().message()));
    }
    if (!file->file_name.empty()) {
      response.set_header("Content-Disposition",
                          absl::StrCat("attachment; filename*=UTF-8''",
                                       percent_encoded(file->file_name)));
    }
    response.set_content(file->content, file->mime_type.empty() ? "application/octet-stream"
                                                                : file->mime_type);
  }, key_check);
  const auto cancel = [jobs, caller_of, answer](const HttpRequest& request,
                                                HttpResponse& response) {
    const DocumentJobs::Caller caller = caller_of(request);
    answer(response, jobs->Cancel(request.matches[1], caller), 200);
  };
  http.Delete(R"(/v1/documents/([^/:]+))", cancel, key_check);
  http.Post(R"(/v1/documents/([^/:]+):cancel)", cancel, key_check);
}

// A file's text, for the TLS pair.
absl::StatusOr<std::string> read_pem(const std::string& path, const char* flag) {
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) {
    return absl::InvalidArgumentError(absl::StrCat("cannot read ", flag, " ", path));
  }
  if (text.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(flag, " ", path, " is missing or empty"));
  }
  return text;
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpGateway>> HttpGateway::Start(
    std::shared_ptr<grpc::Channel> channel, const HttpGatewayOptions& options) {
  std::unique_ptr<HttpGateway> gateway(new HttpGateway());
  if (options.tls_cert.empty() != options.tls_key.empty()) {
    return absl::InvalidArgumentError("HTTPS needs both --tls_cert and --tls_key");
  }
  HttpServerOptions server_options;
  server_options.host = options.host;
  server_options.port = options.port;
  server_options.workers = options.threads;
  server_options.max_body_bytes = options.max_body_bytes;
  server_options.request_seconds = options.read_timeout_seconds;
  server_options.idle_seconds = options.idle_seconds;
  server_options.max_connections = options.max_connections;
  if (!options.tls_cert.empty()) {
    auto cert = read_pem(options.tls_cert, "--tls_cert");
    if (!cert.ok()) return cert.status();
    auto key = read_pem(options.tls_key, "--tls_key");
    if (!key.ok()) return key.status();
    server_options.tls_cert_pem = *std::move(cert);
    server_options.tls_key_pem = *std::move(key);
  }
  server_options.error = [](int status, const std::string& message, HttpResponse& response) {
    libre_error(response, status, message);
  };
  // CORS: a listed origin (or any, with "*") gets the headers that let its page read the answer;
  // a preflight (OPTIONS) is answered 204 with the methods and headers the routes take.
  const std::vector<std::string> origins = options.cors_origins;
  const auto allowed = [origins](const HttpRequest& request) -> std::string {
    if (!request.has_header("Origin")) return std::string();
    const std::string origin = request.header_value("Origin");
    for (const std::string& listed : origins) {
      if (listed == "*" || listed == origin) return origin;
    }
    return std::string();
  };
  server_options.decorate = [allowed](const HttpRequest& request, HttpResponse& response) {
    if (const std::string origin = allowed(request); !origin.empty()) {
      response.set_header("Access-Control-Allow-Origin", origin);
      response.set_header("Vary", "Origin");
    }
  };
  Routes http;
  http.Options(".*", [allowed](const HttpRequest& request, HttpResponse& response) {
    response.status = 204;
    if (allowed(request).empty()) return;
    response.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
    response.set_header("Access-Control-Allow-Headers",
                        "Content-Type, Authorization, X-API-Key, X-Request-Timeout");
    response.set_header("Access-Control-Max-Age", "600");
  });
  std::shared_ptr<Stub> stub = xlate::v1::Translator::NewStub(channel);
  serve_v1(http, stub, options.api_keys);
  serve_libretranslate(http, stub, options.api_keys, options.max_texts);
  auto jobs = DocumentJobs::Start(channel, options.jobs_dir, options.jobs_kept_for);
  if (!jobs.ok()) return jobs.status();
  gateway->jobs_ = std::shared_ptr<DocumentJobs>(*std::move(jobs));
  serve_document_jobs(http, gateway->jobs_, options.api_keys);
  serve_libretranslate_files(
      http, stub, options.api_keys,
      std::make_shared<TranslatedFiles>(options.translated_files_bytes,
                                        options.translated_files_kept_for),
      !options.tls_cert.empty());
  http.Get("/", [](const HttpRequest&, HttpResponse& response) {
    // Its script and style are inline, and it talks to this server alone.
    // Never inside another site's frame (clickjacking with the key the page holds), and the
    // key in sessionStorage, gone with the tab, not localStorage.
    response.set_header("Content-Security-Policy",
                        "default-src 'self'; script-src 'unsafe-inline'; "
                        "style-src 'unsafe-inline'; connect-src 'self'; frame-ancestors 'none'");
    response.set_header("X-Frame-Options", "DENY");
    response.set_content(kWebPage, "text/html; charset=utf-8");
  });
  // A known route asked with another method: 405 naming the one it takes.
  const std::pair<const char*, const char*> routes[] = {
      {"/v1/translate", "POST"}, {"/v1/translate:stream", "POST"}, {"/v1/detect", "POST"},
      {"/v1/models", "GET"},    {"/translate", "POST"},           {"/detect", "POST"},
      {"/languages", "GET"},    {"/translate_file", "POST"},      {"/v1/translateDocument", "POST"}};
  for (const auto& [path, method] : routes) {
    const auto refuse = [path = std::string(path), method = std::string(method)](
                            const HttpRequest& request, HttpResponse& response) {
      response.set_header("Allow", method);
      libre_error(response, 405,
                  absl::StrCat(request.method, " ", path, ": this route takes ", method));
    };
    if (std::string(method) == "POST") {
      http.Get(path, refuse);
    } else {
      http.Post(path, refuse);
    }
    http.Put(path, refuse);
    http.Delete(path, refuse);
  }
  auto server = HttpServer::Start(std::move(server_options), http.Take());
  if (!server.ok()) {
    if (!options.tls_cert.empty() && server.status().code() == absl::StatusCode::kUnavailable) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot serve HTTPS with --tls_cert ", options.tls_cert, " and --tls_key ",
          options.tls_key, " on ", options.host, ":", options.port, ": ",
          server.status().message()));
    }
    return server.status();
  }
  gateway->http_ = *std::move(server);
  return gateway;
}

int HttpGateway::port() const { return http_->port(); }

void HttpGateway::StopJobs() {
  if (jobs_) jobs_->Stop();
}

bool HttpGateway::Stop(absl::Time deadline) {
  StopJobs();
  return http_ == nullptr || http_->Stop(deadline);
}

HttpGateway::~HttpGateway() { Stop(); }

}  // namespace xlate::server
