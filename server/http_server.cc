#include "server/http_server.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <iostream>
#include <optional>
#include <thread>
#include <unordered_map>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "server/free_memory.h"
#include "server/task_threads.h"

namespace xlate::server {

bool HttpRequest::has_header(absl::string_view name) const {
  return headers.count(absl::AsciiStrToLower(name)) > 0;
}

std::string HttpRequest::header_value(absl::string_view name) const {
  const auto found = headers.find(absl::AsciiStrToLower(name));
  return found == headers.end() ? std::string() : found->second;
}

const HttpField* HttpRequest::field(absl::string_view name) const {
  for (const auto& [key, value] : fields) {
    if (key == name) return &value;
  }
  return nullptr;
}

void HttpResponse::set_content(std::string content, std::string content_type) {
  body = std::move(content);
  for (auto& [name, value] : headers) {
    if (absl::EqualsIgnoreCase(name, "Content-Type")) {
      value = std::move(content_type);
      return;
    }
  }
  set_header("Content-Type", std::move(content_type));
}

namespace {

constexpr size_t kConnectionMemoryBytes = 16 * 1024;
constexpr int64_t kClosedConnectionsPerTrim = 1024;

// Where one request is, from its request line until it is answered.
enum class Phase {
  kHead,      // its headers have arrived: routed, checked
  kBody,      // its body is arriving
  kAnswered,  // answered before its body was read (the rest of the body is dropped)
  kRunning,   // a worker runs its handler; the connection is suspended
  kReady,     // the handler's response waits to be queued
  kSent,      // queued
};

// One request on a connection, shared by libmicrohttpd's per-request pointer, the worker that
// runs it and, for a streamed body, the response's reader.
struct Exchange {
  MHD_Connection* connection = nullptr;
  std::atomic<Phase> phase{Phase::kHead};
  HttpRequest request;
  const HttpServer::Route* route = nullptr;
  MHD_PostProcessor* form = nullptr;
  bool body_too_large = false;
  bool form_unreadable = false;  // labelled a form, but not one
  int64_t body_bytes = 0;
  HttpResponse response;

  // A streamed body between the worker writing it and libmicrohttpd reading it.
  absl::Mutex mutex;
  std::string pending ABSL_GUARDED_BY(mutex);
  size_t pending_read ABSL_GUARDED_BY(mutex) = 0;
  bool ended ABSL_GUARDED_BY(mutex) = false;      // the stream function has returned
  bool suspended ABSL_GUARDED_BY(mutex) = false;  // the reader waits for more
  bool gone ABSL_GUARDED_BY(mutex) = false;       // the request is over (client gone)

  ~Exchange() {
    if (form != nullptr) MHD_destroy_post_processor(form);
  }
};
using ExchangeRef = std::shared_ptr<Exchange>;

// An open connection, for the deadlines libmicrohttpd's inactivity timeout cannot enforce (a
// client trickling a byte at a time is never inactive).
struct OpenConnection {
  int fd = -1;
  absl::Time deadline = absl::InfiniteFuture();
  bool in_request = false;  // its request line has come, its request not yet in full
  bool expired = false;     // cut off already
};

// The text of IPv4 and IPv6 addresses, an IPv4-mapped IPv6 one as IPv4.
std::string address_text(const sockaddr* address) {
  char text[INET6_ADDRSTRLEN] = {0};
  if (address == nullptr) return std::string();
  if (address->sa_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(address)->sin_addr, text,
              sizeof(text));
  } else if (address->sa_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(address);
    if (IN6_IS_ADDR_V4MAPPED(&v6->sin6_addr)) {
      inet_ntop(AF_INET, &v6->sin6_addr.s6_addr[12], text, sizeof(text));
    } else {
      inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof(text));
    }
  }
  return text;
}

}  // namespace

struct HttpServer::State {
  std::weak_ptr<State> self;  // for the workers' copies
  HttpServerOptions options;
  std::vector<Route> routes;
  MHD_Daemon* daemon = nullptr;
  int port = 0;
  int max_connections = 0;
  bool tls = false;
  std::string timeout_answer;  // the raw 408 a request cut off gets
  std::unique_ptr<TaskThreads> workers;

  absl::Mutex mutex;
  std::unordered_map<MHD_Connection*, OpenConnection> connections ABSL_GUARDED_BY(mutex);
  int running ABSL_GUARDED_BY(mutex) = 0;  // requests handed to workers, not yet done

  bool stopping ABSL_GUARDED_BY(mutex) = false;
  std::thread sweeper;
  bool sweeper_stop ABSL_GUARDED_BY(mutex) = false;
  int64_t closed_since_trim ABSL_GUARDED_BY(mutex) = 0;

  // libmicrohttpd's log: kept while starting (for the error), then at most a line a minute.
  absl::Mutex log_mutex;
  bool started ABSL_GUARDED_BY(log_mutex) = false;
  std::string start_log ABSL_GUARDED_BY(log_mutex);
  absl::Time last_logged ABSL_GUARDED_BY(log_mutex) = absl::InfinitePast();
  int64_t unlogged ABSL_GUARDED_BY(log_mutex) = 0;

  void SetDeadline(MHD_Connection* connection, absl::Time deadline, bool in_request) {
    absl::MutexLock lock(&mutex);
    const auto found = connections.find(connection);
    if (found == connections.end()) return;
    found->second.deadline = deadline;
    found->second.in_request = in_request;
  }

  // Closes the connections past their deadlines: the socket is shut down (the event loop then
  // reads its end and closes it), with a 408 first for one in the middle of a request. Entries
  // leave `connections` before libmicrohttpd closes their sockets, so a listed descriptor is
  // still the connection's.
  void Sweep() {
    absl::MutexLock lock(&mutex);
    absl::Time last_trim = absl::Now();
    while (!sweeper_stop) {
      mutex.AwaitWithTimeout(absl::Condition(&sweeper_stop), absl::Milliseconds(250));
      const absl::Time now = absl::Now();
      // Thousands of connections closed (a flood of idle or slow ones over): the heap gives back
      // the pages their memory held, which the allocator keeps otherwise, so that the
      // process's RSS returns to its working set.
      if (closed_since_trim >= kClosedConnectionsPerTrim && now - last_trim > absl::Seconds(10)) {
        closed_since_trim = 0;
        last_trim = now;
        mutex.Unlock();
        release_free_memory();
        mutex.Lock();
      }
      for (auto& [connection, open] : connections) {
        if (open.expired || open.deadline > now) continue;
        open.expired = true;
        if (open.in_request && !tls) {
          (void)send(open.fd, timeout_answer.data(), timeout_answer.size(),
                     MSG_DONTWAIT | MSG_NOSIGNAL);
        }
        shutdown(open.fd, SHUT_RDWR);
      }
    }
  }

  void Log(const std::string& line) {
    absl::MutexLock lock(&log_mutex);
    if (!started) {
      absl::StrAppend(&start_log, start_log.empty() ? "" : "; ", line);
      return;
    }
    const absl::Time now = absl::Now();
    if (now - last_logged < absl::Minutes(1)) {
      ++unlogged;
      return;
    }
    std::cerr << "xlate-server: HTTP: " << line;
    if (unlogged > 0) std::cerr << " (and " << unlogged << " more since the last line)";
    std::cerr << std::endl;
    last_logged = now;
    unlogged = 0;
  }

  const Route* Find(HttpRequest& request) const {
    for (const Route& route : routes) {
      // HEAD is GET without the body (libmicrohttpd leaves it out).
      const bool head_of_get = request.method == "HEAD" && route.method == "GET";
      if (route.method != request.method && !head_of_get) continue;
      std::smatch match;
      if (!std::regex_match(request.path, match, route.pattern)) continue;
      request.matches.assign(match.begin(), match.end());
      return &route;
    }
    return nullptr;
  }

  HttpResponse Error(int status, const std::string& message) const {
    HttpResponse response;
    options.error(status, message, response);
    return response;
  }
};

namespace {

using State = HttpServer::State;

MHD_Response* static_response(const HttpResponse& response) {
  MHD_Response* out = MHD_create_response_from_buffer(
      response.body.size(), const_cast<char*>(response.body.data()), MHD_RESPMEM_MUST_COPY);
  for (const auto& [name, value] : response.headers) {
    MHD_add_response_header(out, name.c_str(), value.c_str());
  }
  return out;
}

MHD_Result queue(MHD_Connection* connection, const HttpResponse& response, MHD_Response* prepared) {
  const MHD_Result queued = MHD_queue_response(connection, response.status, prepared);
  MHD_destroy_response(prepared);
  return queued;
}

// Answers a request before its body is read (a refusal by route, key or size).
MHD_Result answer_early(State& state, Exchange& exchange, HttpResponse response) {
  if (state.options.decorate) state.options.decorate(exchange.request, response);
  exchange.phase = Phase::kAnswered;
  state.SetDeadline(exchange.connection, absl::Now() + absl::Seconds(state.options.request_seconds),
                    /*in_request=*/true);
  return queue(exchange.connection, response, static_response(response));
}

// The streamed body's reader: what the worker has written so far, else the connection is
// suspended until it writes more (HttpStreamWriter below resumes it).
ssize_t read_stream(void* cls, uint64_t, char* buffer, size_t max) {
  Exchange& exchange = **static_cast<ExchangeRef*>(cls);
  absl::MutexLock lock(&exchange.mutex);
  if (exchange.pending_read < exchange.pending.size()) {
    const size_t n = std::min(max, exchange.pending.size() - exchange.pending_read);
    std::memcpy(buffer, exchange.pending.data() + exchange.pending_read, n);
    exchange.pending_read += n;
    if (exchange.pending_read == exchange.pending.size()) {
      exchange.pending.clear();
      exchange.pending_read = 0;
    }
    return static_cast<ssize_t>(n);
  }
  if (exchange.ended) return MHD_CONTENT_READER_END_OF_STREAM;
  // Suspended under the lock, so that the writer, which resumes after taking it, never resumes
  // a connection not yet suspended.
  exchange.suspended = true;
  MHD_suspend_connection(exchange.connection);
  return 0;
}

void free_stream(void* cls) { delete static_cast<ExchangeRef*>(cls); }

class StreamWriter : public HttpStreamWriter {
 public:
  explicit StreamWriter(ExchangeRef exchange) : exchange_(std::move(exchange)) {}

  bool Write(absl::string_view data) override {
    bool resume = false;
    {
      absl::MutexLock lock(&exchange_->mutex);
      if (exchange_->gone) return false;
      exchange_->pending.append(data.data(), data.size());
      resume = std::exchange(exchange_->suspended, false);
    }
    if (resume) MHD_resume_connection(exchange_->connection);
    return true;
  }

  void End() {
    bool resume = false;
    {
      absl::MutexLock lock(&exchange_->mutex);
      exchange_->ended = true;
      resume = std::exchange(exchange_->suspended, false);
    }
    if (resume) MHD_resume_connection(exchange_->connection);
  }

 private:
  ExchangeRef exchange_;
};

// Runs a request's handler on a worker, then resumes its connection for the response (and
// writes a streamed body, if it has one).
void run_handler(const std::shared_ptr<State>& state, const ExchangeRef& exchange) {
  HttpResponse response;
  try {
    exchange->route->handler(exchange->request, response);
  } catch (const std::exception& error) {
    response = state->Error(500, error.what());
  } catch (...) {
    response = state->Error(500, "internal error");
  }
  if (state->options.decorate) state->options.decorate(exchange->request, response);
  std::function<void(HttpStreamWriter&)> stream = response.stream;
  exchange->response = std::move(response);
  exchange->phase = Phase::kReady;
  MHD_resume_connection(exchange->connection);
  if (stream) {
    StreamWriter writer(exchange);
    try {
      stream(writer);
    } catch (...) {
    }
    writer.End();
  }
  absl::MutexLock lock(&state->mutex);
  --state->running;
}

MHD_Result on_form_field(void* cls, MHD_ValueKind, const char* key, const char* file_name,
                         const char* content_type, const char*, const char* data, uint64_t offset,
                         size_t size) {
  auto& fields = static_cast<Exchange*>(cls)->request.fields;
  if (offset == 0 || fields.empty() || fields.back().first != key) {
    HttpField field;
    if (file_name != nullptr) field.file_name = file_name;
    if (content_type != nullptr) field.content_type = content_type;
    fields.emplace_back(key == nullptr ? "" : key, std::move(field));
  }
  if (size > 0) fields.back().second.value.append(data, size);
  return MHD_YES;
}

MHD_Result on_header(void* cls, MHD_ValueKind, const char* key, const char* value) {
  if (key == nullptr) return MHD_YES;
  static_cast<HttpRequest*>(cls)->headers.emplace(absl::AsciiStrToLower(key),
                                                  value == nullptr ? "" : value);
  return MHD_YES;
}

MHD_Result on_query_argument(void* cls, MHD_ValueKind, const char* key, const char* value) {
  if (key == nullptr) return MHD_YES;
  HttpField field;
  if (value != nullptr) field.value = value;
  static_cast<HttpRequest*>(cls)->fields.emplace_back(key, std::move(field));
  return MHD_YES;
}

// The headers have come: route, check, and prepare for the body.
MHD_Result on_head(State& state, Exchange& exchange, const char* url, const char* method) {
  MHD_Connection* connection = exchange.connection;
  HttpRequest& request = exchange.request;
  request.method = method;
  request.path = url;
  MHD_get_connection_values(connection, MHD_HEADER_KIND, &on_header, &request);
  if (const MHD_ConnectionInfo* info =
          MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS)) {
    request.remote_addr = address_text(info->client_addr);
  }
  exchange.route = state.Find(request);
  if (exchange.route == nullptr) {
    return answer_early(state, exchange,
                        state.Error(404, absl::StrCat("no route ", request.method, " ",
                                                      request.path.substr(0, 200))));
  }
  if (exchange.route->head_check) {
    HttpResponse refusal;
    if (!exchange.route->head_check(request, refusal)) {
      return answer_early(state, exchange, std::move(refusal));
    }
  }
  const int64_t max_body = state.options.max_body_bytes;
  int64_t length = 0;
  if (absl::SimpleAtoi(request.header_value("Content-Length"), &length) && length > max_body) {
    return answer_early(
        state, exchange,
        state.Error(413, absl::StrCat("the body is larger than --max_receive_message_bytes (",
                                      max_body, " bytes)")));
  }
  const std::string type = absl::AsciiStrToLower(request.header_value("Content-Type"));
  if (absl::StartsWith(type, "application/x-www-form-urlencoded") ||
      absl::StartsWith(type, "multipart/form-data")) {
    exchange.form = MHD_create_post_processor(connection, 64 * 1024, &on_form_field, &exchange);
    if (exchange.form == nullptr) {
      return answer_early(state, exchange,
                          state.Error(400, absl::StrCat("the form's Content-Type cannot be read (",
                                                        type.substr(0, 200), ")")));
    }
  }
  exchange.phase = Phase::kBody;
  return MHD_YES;
}

// The body has come in full: refuse it, or hand the request to a worker.
MHD_Result on_body_complete(const std::shared_ptr<State>& state, const ExchangeRef& exchange) {
  MHD_Connection* connection = exchange->connection;
  HttpRequest& request = exchange->request;
  state->SetDeadline(connection, absl::InfiniteFuture(), /*in_request=*/false);
  if (exchange->form != nullptr) {
    if (MHD_destroy_post_processor(exchange->form) != MHD_YES) exchange->form_unreadable = true;
    exchange->form = nullptr;
  }
  // A body labelled a form that does not parse as one has no fields (the route finds what it
  // lacks, or reads the body as what it is).
  if (exchange->form_unreadable) request.fields.clear();
  MHD_get_connection_values(connection, MHD_GET_ARGUMENT_KIND, &on_query_argument, &request);
  std::optional<HttpResponse> refusal;
  if (exchange->body_too_large) {
    refusal =
        state->Error(413, absl::StrCat("the body is larger than --max_receive_message_bytes (",
                                       state->options.max_body_bytes, " bytes)"));
  }
  if (!refusal) {
    absl::MutexLock lock(&state->mutex);
    if (state->stopping) {
      refusal = state->Error(503, "the server is shutting down");
    } else {
      ++state->running;
    }
  }
  if (refusal) {
    if (state->options.decorate) state->options.decorate(request, *refusal);
    exchange->phase = Phase::kSent;
    return queue(connection, *refusal, static_response(*refusal));
  }
  exchange->phase = Phase::kRunning;
  MHD_suspend_connection(connection);
  state->workers->Post([state, exchange] { run_handler(state, exchange); });
  return MHD_YES;
}

// The handler's response, queued once the worker has resumed the connection.
MHD_Result on_ready(Exchange& exchange, const ExchangeRef& ref) {
  exchange.phase = Phase::kSent;
  if (!exchange.response.stream) {
    return queue(exchange.connection, exchange.response, static_response(exchange.response));
  }
  MHD_Response* streamed = MHD_create_response_from_callback(
      MHD_SIZE_UNKNOWN, 32 * 1024, &read_stream, new ExchangeRef(ref), &free_stream);
  for (const auto& [name, value] : exchange.response.headers) {
    MHD_add_response_header(streamed, name.c_str(), value.c_str());
  }
  return queue(exchange.connection, exchange.response, streamed);
}

// libmicrohttpd calls this for a request's headers, each piece of its body, its end, and again
// after the connection is resumed.
MHD_Result on_request(void* cls, MHD_Connection* connection, const char* url, const char* method,
                      const char*, const char* upload_data, size_t* upload_size,
                      void** request_context) {
  State& state = *static_cast<State*>(cls);
  auto* ref = static_cast<ExchangeRef*>(*request_context);
  if (ref == nullptr) {  // the first call: the headers have come
    ref = new ExchangeRef(std::make_shared<Exchange>());
    *request_context = ref;
  }
  Exchange& exchange = **ref;
  exchange.connection = connection;
  switch (exchange.phase.load()) {
    case Phase::kHead:
      return on_head(state, exchange, url, method);
    case Phase::kBody:
      if (*upload_size == 0) {
        return on_body_complete(state.self.lock(), *ref);
      }
      exchange.body_bytes += static_cast<int64_t>(*upload_size);
      if (exchange.body_bytes > state.options.max_body_bytes) {
        exchange.body_too_large = true;
      } else {
        // A form's raw body is kept too: clients such as curl -d label JSON as a form.
        exchange.request.body.append(upload_data, *upload_size);
        if (exchange.form != nullptr &&
            MHD_post_process(exchange.form, upload_data, *upload_size) != MHD_YES) {
          exchange.form_unreadable = true;
        }
      }
      if (exchange.body_too_large || exchange.form_unreadable) {
        exchange.request.body.clear();
        exchange.request.fields.clear();
      }
      *upload_size = 0;
      return MHD_YES;
    case Phase::kAnswered:
      *upload_size = 0;
      return MHD_YES;
    case Phase::kReady:
      return on_ready(exchange, *ref);
    case Phase::kRunning:
    case Phase::kSent:
      return MHD_YES;
  }
  return MHD_YES;
}

// The request line has come: the request's deadline starts. (Its exchange is made by the first
// call of on_request: libmicrohttpd tells the end of a request only to a request that call saw.)
void* on_request_line(void* cls, const char*, MHD_Connection* connection) {
  State& state = *static_cast<State*>(cls);
  state.SetDeadline(connection, absl::Now() + absl::Seconds(state.options.request_seconds),
                    /*in_request=*/true);
  return nullptr;
}

// A request is over (answered, or its connection ended): the connection waits for its next.
void on_request_done(void* cls, MHD_Connection* connection, void** request_context,
                     MHD_RequestTerminationCode) {
  State& state = *static_cast<State*>(cls);
  if (auto* ref = static_cast<ExchangeRef*>(*request_context)) {
    {
      absl::MutexLock lock(&(*ref)->mutex);
      (*ref)->gone = true;
    }
    delete ref;
    *request_context = nullptr;
  }
  state.SetDeadline(connection, absl::Now() + absl::Seconds(state.options.idle_seconds),
                    /*in_request=*/false);
}

// A new connection: refused (closed at once) when max_connections are open.
// (libmicrohttpd's own limit stops accepting instead, which leaves new connections queued in the
// kernel's backlog.)
MHD_Result on_accept(void* cls, const sockaddr*, socklen_t) {
  State& state = *static_cast<State*>(cls);
  absl::MutexLock lock(&state.mutex);
  return static_cast<int>(state.connections.size()) < state.max_connections ? MHD_YES : MHD_NO;
}

void on_connection(void* cls, MHD_Connection* connection, void**,
                   MHD_ConnectionNotificationCode code) {
  State& state = *static_cast<State*>(cls);
  absl::MutexLock lock(&state.mutex);
  if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
    state.connections.erase(connection);
    ++state.closed_since_trim;
    return;
  }
  const MHD_ConnectionInfo* info =
      MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
  OpenConnection open;
  open.fd = info == nullptr ? -1 : info->connect_fd;
  open.deadline = absl::Now() + absl::Seconds(state.options.idle_seconds);
  if (open.fd >= 0) state.connections.emplace(connection, open);
}

void on_log(void* cls, const char* format, va_list arguments) {
  char line[512];
  vsnprintf(line, sizeof(line), format, arguments);
  std::string text = line;
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  static_cast<State*>(cls)->Log(text);
}

// The open-file limit raised to its hard limit; the connections it leaves room for.
int connections_the_file_limit_allows() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 1024;
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  // The models, gRPC, logs and the jobs' files keep the rest.
  const rlim_t margin = 512;
  if (limit.rlim_cur == RLIM_INFINITY) return 1 << 20;
  return limit.rlim_cur > 2 * margin
             ? static_cast<int>(std::min<rlim_t>(limit.rlim_cur - margin, 1 << 20))
             : static_cast<int>(limit.rlim_cur / 2);
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(HttpServerOptions options,
                                                              std::vector<Route> routes) {
  auto state = std::make_shared<State>();
  state->self = state;
  state->options = std::move(options);
  state->routes = std::move(routes);
  HttpServerOptions& opts = state->options;
  if (!opts.error) {
    opts.error = [](int status, const std::string& message, HttpResponse& response) {
      response.status = status;
      response.set_content(message, "text/plain; charset=utf-8");
    };
  }
  if (opts.tls_cert_pem.empty() != opts.tls_key_pem.empty()) {
    return absl::InvalidArgumentError("HTTPS needs both a certificate and a key");
  }
  state->tls = !opts.tls_cert_pem.empty();
  state->max_connections =
      std::max(1, std::min(opts.max_connections, connections_the_file_limit_allows()));
  {
    const HttpResponse timeout = state->Error(
        408, absl::StrCat("the request was not sent in full within ", opts.request_seconds, " s"));
    state->timeout_answer = absl::StrCat("HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n");
    for (const auto& [name, value] : timeout.headers) {
      absl::StrAppend(&state->timeout_answer, name, ": ", value, "\r\n");
    }
    absl::StrAppend(&state->timeout_answer, "Content-Length: ", timeout.body.size(), "\r\n\r\n",
                    timeout.body);
  }

  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (getaddrinfo(opts.host.c_str(), nullptr, &hints, &found) != 0 || found == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot listen for HTTP on ", opts.host, ": not an address of this host"));
  }
  sockaddr_storage address{};
  std::memcpy(&address, found->ai_addr, found->ai_addrlen);
  freeaddrinfo(found);
  unsigned int flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
  if (address.ss_family == AF_INET6) {
    reinterpret_cast<sockaddr_in6*>(&address)->sin6_port = htons(opts.port);
    flags |= MHD_USE_DUAL_STACK;
  } else {
    reinterpret_cast<sockaddr_in*>(&address)->sin_port = htons(opts.port);
  }
  if (state->tls) flags |= MHD_USE_TLS;
  const unsigned int event_threads = std::clamp(std::thread::hardware_concurrency() / 2, 1u, 4u);
  const unsigned int inactivity =
      static_cast<unsigned int>(std::max(opts.idle_seconds, opts.request_seconds));
  state->workers = std::make_unique<TaskThreads>(std::max(1, opts.workers));
  State* raw = state.get();
  MHD_OptionItem tls_options[] = {
      {MHD_OPTION_HTTPS_MEM_KEY, 0, const_cast<char*>(opts.tls_key_pem.c_str())},
      {MHD_OPTION_HTTPS_MEM_CERT, 0, const_cast<char*>(opts.tls_cert_pem.c_str())},
      {MHD_OPTION_END, 0, nullptr}};
  if (!state->tls) tls_options[0].option = MHD_OPTION_END;
  // libmicrohttpd refuses a pool of one thread (a warning): one is its default.
  const MHD_OptionItem pool_option =
      event_threads > 1 ? MHD_OptionItem{MHD_OPTION_THREAD_POOL_SIZE, event_threads, nullptr}
                        : MHD_OptionItem{MHD_OPTION_END, 0, nullptr};
  const MHD_OptionItem more_options[] = {pool_option, {MHD_OPTION_END, 0, nullptr}};
  state->daemon = MHD_start_daemon(
      flags, 0, &on_accept, raw, &on_request, raw, MHD_OPTION_EXTERNAL_LOGGER, &on_log, raw,
      MHD_OPTION_SOCK_ADDR, reinterpret_cast<sockaddr*>(&address),
      // Above ours (on_accept), so that libmicrohttpd never stops accepting.
      MHD_OPTION_CONNECTION_LIMIT, static_cast<unsigned int>(state->max_connections + 1024),
      MHD_OPTION_CONNECTION_TIMEOUT, inactivity,
      // A connection's memory for its request line, headers and buffers (libmicrohttpd's
      // default is 32 KiB): what 16,384 idle connections cost.
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, static_cast<size_t>(kConnectionMemoryBytes),
      MHD_OPTION_NOTIFY_CONNECTION, &on_connection, raw, MHD_OPTION_NOTIFY_COMPLETED,
      &on_request_done, raw, MHD_OPTION_URI_LOG_CALLBACK, &on_request_line, raw, MHD_OPTION_ARRAY,
      tls_options, MHD_OPTION_ARRAY, more_options, MHD_OPTION_END);
  {
    absl::MutexLock lock(&state->log_mutex);
    state->started = true;
    if (state->daemon == nullptr) {
      return absl::UnavailableError(
          absl::StrCat("cannot ", state->tls ? "serve HTTPS" : "listen for HTTP", " on ", opts.host,
                       ":", opts.port, state->start_log.empty() ? "" : ": ", state->start_log));
    }
  }
  const MHD_DaemonInfo* bound = MHD_get_daemon_info(state->daemon, MHD_DAEMON_INFO_BIND_PORT);
  state->port = bound == nullptr ? opts.port : bound->port;
  state->sweeper = std::thread([raw] { raw->Sweep(); });
  std::unique_ptr<HttpServer> server(new HttpServer());
  server->state_ = std::move(state);
  return server;
}

int HttpServer::port() const { return state_->port; }

int HttpServer::max_connections() const { return state_->max_connections; }

int HttpServer::open_connections() const {
  absl::MutexLock lock(&state_->mutex);
  return static_cast<int>(state_->connections.size());
}

bool HttpServer::Stop(absl::Time deadline) {
  State& state = *state_;
  if (state.daemon == nullptr) return true;
  const MHD_socket listening = MHD_quiesce_daemon(state.daemon);
  {
    absl::MutexLock lock(&state.mutex);
    state.stopping = true;
    const auto idle = [&state]()
                          ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.mutex) { return state.running == 0; };
    if (!state.mutex.AwaitWithDeadline(absl::Condition(&idle), deadline)) return false;
  }
  MHD_stop_daemon(state.daemon);
  state.daemon = nullptr;
  if (listening != MHD_INVALID_SOCKET) close(listening);
  {
    absl::MutexLock lock(&state.mutex);
    state.sweeper_stop = true;
  }
  state.sweeper.join();
  state.workers.reset();
  return true;
}

HttpServer::~HttpServer() { Stop(); }

}  // namespace xlate::server
