// The HTTP/1.1 server under the gateway (server/http_gateway.h): GNU libmicrohttpd's event loop
// reads requests and writes responses, and a pool of workers runs the handlers of requests that
// have arrived in full. A connection holds no thread while it is idle or sending its request,
// so that idle keep-alive connections and clients trickling their requests cost a socket and a
// few kilobytes each, not a worker:
//   - a connection may wait `idle_seconds` for its next request line (after it opens, or after
//     its last response) and then has `request_seconds` to send the rest of the request;
//     past either it is closed, with a 408 when a request had begun (HTTPS: closed only);
//   - past `max_connections` open at once, a new connection is closed at once (refused, not
//     queued);
//   - a body over `max_body_bytes` is refused with 413 before it is read (by its
//     Content-Length) or as soon as it passes the limit (chunked);
//   - a route may look at a request's headers before its body is read (`head_check`: an API
//     key), and answer it then.
// Form bodies (URL-encoded and multipart) are parsed by libmicrohttpd's post processor into
// `HttpRequest::fields`.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace xlate::server {

// A form field: a value, or an uploaded file (multipart) with its name and type.
struct HttpField {
  std::string value;
  std::string file_name;  // empty: not a file
  std::string content_type;
};

struct HttpRequest {
  std::string method;       // "GET", "POST", ...
  std::string path;         // percent-decoded, without the query
  std::string remote_addr;  // the client's IP address
  // Header names lower-cased; a repeated header keeps its first value.
  std::map<std::string, std::string> headers;
  std::string body;  // as sent (a form's too, whose fields are also in `fields`)
  // Form fields (of the body, then of the query string) in the order they came.
  std::vector<std::pair<std::string, HttpField>> fields;
  // The route pattern's groups: matches[1] is the first.
  std::vector<std::string> matches;

  bool has_header(absl::string_view name) const;
  // The header's value; empty when it is absent.
  std::string header_value(absl::string_view name) const;
  // The first field named `name`; null when there is none.
  const HttpField* field(absl::string_view name) const;
};

// Writes a streamed (chunked) response's body from the worker that runs it.
class HttpStreamWriter {
 public:
  virtual ~HttpStreamWriter() = default;
  // Queues `data` for the client; false once the client has gone (stop producing then).
  virtual bool Write(absl::string_view data) = 0;
};

struct HttpResponse {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  // When set, the body is streamed with chunked encoding: called on the worker after the status
  // and headers are sent; the body ends when it returns.
  std::function<void(HttpStreamWriter&)> stream;

  void set_header(std::string name, std::string value) {
    headers.emplace_back(std::move(name), std::move(value));
  }
  void set_content(std::string content, std::string content_type);
};

using HttpHandler = std::function<void(const HttpRequest&, HttpResponse&)>;
// Looks at a request whose headers (not body) have arrived: true lets it go on; false answers
// it with `response` at once, and its body is not read.
using HttpHeadCheck = std::function<bool(const HttpRequest&, HttpResponse&)>;

struct HttpServerOptions {
  std::string host = "0.0.0.0";
  int port = 0;      // 0: any free port (HttpServer::port() tells which)
  int workers = 64;  // requests handled at once
  int64_t max_body_bytes = 4 << 20;
  int request_seconds = 10;
  int idle_seconds = 30;
  // Capped by the process's open-file limit (raised to its hard limit at start), less a margin
  // for the rest of the server.
  int max_connections = 16384;
  // HTTPS with these PEM texts (a certificate chain and its key) when both are set.
  std::string tls_cert_pem, tls_key_pem;
  // Formats an error the server answers itself (404, 405 are the router's; 413; 500 for a
  // handler that threw): its status and a message naming what is wrong.
  std::function<void(int status, const std::string& message, HttpResponse&)> error;
  // Runs on every response before it is sent (CORS headers).
  std::function<void(const HttpRequest&, HttpResponse&)> decorate;
};

class HttpServer {
 public:
  struct Route {
    std::string method;
    std::regex pattern;  // the whole path must match
    HttpHandler handler;
    HttpHeadCheck head_check;  // may be empty
  };

  // Listens and serves `routes` (the first that matches a request's method and path; HEAD takes
  // GET's) until Stop(). A request no route matches gets 404.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(HttpServerOptions options,
                                                           std::vector<Route> routes);
  ~HttpServer();

  int port() const;
  // Connections open now, and the limit new ones are refused at.
  int open_connections() const;
  int max_connections() const;

  // Stops accepting connections, waits until `deadline` for the requests being handled to be
  // answered, then closes every connection (idle, and still sending, too). False when requests
  // were still being handled then; the connections stay open, and the object must not be
  // destroyed (the caller exits).
  bool Stop(absl::Time deadline = absl::InfiniteFuture());

  struct State;

 private:
  HttpServer() = default;
  std::shared_ptr<State> state_;
};

}  // namespace xlate::server
