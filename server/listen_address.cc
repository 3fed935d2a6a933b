#include "server/listen_address.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace xlate::server {
namespace {

bool is_wildcard(absl::string_view host) {
  return host.empty() || host == "0.0.0.0" || host == "::" || host == "*" || host == "[::]";
}

}  // namespace

absl::StatusOr<ListenAddress> parse_listen_address(absl::string_view text,
                                                   absl::string_view flag) {
  const size_t colon = text.rfind(':');
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(flag, " \"", text, "\" ", why,
                                                   ": it must be HOST:PORT or [IPv6]:PORT with "
                                                   "PORT from 0 to 65535"));
  };
  if (colon == absl::string_view::npos) return bad("has no port");
  absl::string_view host = text.substr(0, colon);
  int port = 0;
  if (!absl::SimpleAtoi(text.substr(colon + 1), &port) || port < 0 || port > 65535) {
    return bad("has no valid port");
  }
  if (absl::StartsWith(host, "[")) {
    if (!absl::EndsWith(host, "]")) return bad("opens a bracket it does not close");
    host = host.substr(1, host.size() - 2);
  } else if (absl::StrContains(host, ':')) {
    return bad("has an IPv6 host without brackets");
  }
  return ListenAddress{absl::AsciiStrToLower(host), port};
}

bool is_loopback_host(absl::string_view host) {
  return host == "localhost" || host == "::1" || absl::StartsWith(host, "127.");
}

bool hosts_overlap(absl::string_view a, absl::string_view b) {
  if (is_wildcard(a) || is_wildcard(b)) return true;
  if (absl::EqualsIgnoreCase(a, b)) return true;
  // "localhost" resolves to the loopback addresses; a listener on it and one on 127.0.0.1 or
  // ::1 take the same connections.
  return (a == "localhost" && is_loopback_host(b)) || (b == "localhost" && is_loopback_host(a));
}

}  // namespace xlate::server
