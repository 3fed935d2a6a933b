// Requests and replies of xlate.v1.Translator's methods as the bytes gRPC carries: the service
// takes them raw so that a request that does not parse gets INVALID_ARGUMENT that says why (a
// string field that is not UTF-8 is named), instead of gRPC's anonymous INTERNAL.
#pragma once

#include <grpcpp/grpcpp.h>

#include "proto/translator.pb.h"

namespace xlate::server {

// Parses `bytes` into `request` (a TranslateRequest or DetectLanguageRequest, whose repeated
// string `contents` is counted; a TranslateDocumentRequest); INVALID_ARGUMENT naming the field and byte offset when a string
// field is not UTF-8 ("contents[1] is not valid UTF-8 (bad byte sequence at offset 1)"), saying
// that the bytes are not such a message, or, before anything is parsed, naming the limit when
// `contents` has more than `max_entries` entries, blank or not.
grpc::Status parse_request(const grpc::ByteBuffer& bytes, int64_t max_entries,
                           google::protobuf::Message& request);

// Serializes a reply (TranslateResponse, TranslateStreamResponse) into `bytes` (INTERNAL if
// protobuf refuses, which it does not for a message the server built).
grpc::Status serialize_reply(const google::protobuf::MessageLite& reply, grpc::ByteBuffer& bytes);

}  // namespace xlate::server
