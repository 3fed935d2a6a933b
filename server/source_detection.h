// source_language_code "auto": the source language of a Translate request told by CLD2
// (server/language_detection.h) before the request is routed to a model.
#pragma once

#include <grpcpp/support/status.h>

#include "proto/translator.pb.h"
#include "server/language_detection.h"

namespace xlate::server {

// The language of the request's text taken together, written into the request and into
// `detected`; INVALID_ARGUMENT when entries told reliably disagree or no language can be told.
// Blank entries take no part.
grpc::Status detect_source(xlate::v1::TranslateRequest& request,
                           xlate::v1::DetectedLanguage& detected);

// A candidate of language_detection.h in the reply's words.
void fill_detected(const LanguageCandidate& candidate, xlate::v1::DetectedLanguage& detected);

}  // namespace xlate::server
