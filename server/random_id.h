// Ids a client cannot guess (files and jobs that are their owners' alone): 128 random bits from
// OpenSSL's generator, as 32 hex digits.
#pragma once

#include <string>

namespace xlate::server {

// Throws std::runtime_error when OpenSSL has no random bytes to give.
std::string random_id();

// Whether `text` has the shape of a random_id() (a path component that is safe to use).
bool is_random_id(const std::string& text);

}  // namespace xlate::server
