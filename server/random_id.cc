#include "server/random_id.h"

#include <openssl/rand.h>

#include <stdexcept>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"

namespace xlate::server {

std::string random_id() {
  unsigned char random[16];
  if (RAND_bytes(random, sizeof random) != 1) {
    throw std::runtime_error("OpenSSL has no random bytes to give");
  }
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(random), sizeof random));
}

bool is_random_id(const std::string& text) {
  if (text.size() != 32) return false;
  for (const char c : text) {
    if (!absl::ascii_isxdigit(static_cast<unsigned char>(c)) || absl::ascii_isupper(c)) {
      return false;
    }
  }
  return true;
}

}  // namespace xlate::server
