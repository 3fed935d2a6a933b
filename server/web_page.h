// The page GET / serves on the HTTP port (server/web/index.html, compiled in so that the server
// needs no file beside it and the page works offline).
#pragma once

namespace xlate::server {

extern const char kWebPage[];

}  // namespace xlate::server
