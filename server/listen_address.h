// Listening addresses as operators give them ("HOST:PORT", "[::1]:PORT", "0.0.0.0:50051"):
// parsed, compared for overlap (two services on one port) and classified as loopback or not.
// Used at start-up to keep the unauthenticated admin service off the clients' port.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace xlate::server {

struct ListenAddress {
  std::string host;  // without brackets: "0.0.0.0", "::1", "localhost", "10.0.0.5"
  int port = 0;      // 0 = any free port, chosen when the server starts
};

// "HOST:PORT" or "[IPv6]:PORT", PORT in [0, 65535]; InvalidArgument naming `flag` otherwise.
absl::StatusOr<ListenAddress> parse_listen_address(absl::string_view text, absl::string_view flag);

// Whether a listener on `host` accepts connections to `address`'s host too, or the other way
// round: the same host, or either a wildcard ("0.0.0.0", "::", "*", empty), with "localhost"
// taken as every loopback address.
bool hosts_overlap(absl::string_view a, absl::string_view b);

// 127.0.0.0/8, ::1 and "localhost": reachable from this machine only.
bool is_loopback_host(absl::string_view host);

}  // namespace xlate::server
