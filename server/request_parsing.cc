#include "server/request_parsing.h"

#include <grpcpp/support/proto_buffer_reader.h>
#include <grpcpp/impl/codegen/proto_utils.h>
#include <grpcpp/support/proto_buffer_writer.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "engine/utf8.h"
#include "server/request_bytes.pb.h"

namespace xlate::server {
namespace {

grpc::Status invalid(const std::string& message) {
  return grpc::Status(grpc::INVALID_ARGUMENT, message);
}

// OK, or INVALID_ARGUMENT naming `field` when `text` is not UTF-8.
grpc::Status check_utf8(const std::string& field, const std::string& text) {
  size_t offset = 0;
  if (is_valid_utf8(text, &offset)) return grpc::Status::OK;
  return invalid(absl::StrCat(field, " is not valid UTF-8 (bad byte sequence at offset ", offset,
                              ")"));
}

// Why `bytes`, which do not parse as a TranslateRequest, are refused.
grpc::Status why_unparsed(const grpc::ByteBuffer& bytes) {
  internal::TranslateRequestBytes fields;
  grpc::ByteBuffer copy(bytes);  // the reader consumes its buffer's slices
  grpc::ProtoBufferReader reader(&copy);
  if (fields.ParseFromZeroCopyStream(&reader)) {
    for (int i = 0; i < fields.contents_size(); ++i) {
      if (grpc::Status status = check_utf8(absl::StrCat("contents[", i, "]"), fields.contents(i));
          !status.ok()) {
        return status;
      }
    }
    for (const auto& [field, text] :
         {std::pair<const char*, const std::string&>{"source_language_code",
                                                     fields.source_language_code()},
          {"target_language_code", fields.target_language_code()},
          {"model", fields.model()},
          {"mime_type", fields.mime_type()}}) {
      if (grpc::Status status = check_utf8(field, text); !status.ok()) return status;
    }
  }
  return invalid(absl::StrCat("the request's ", bytes.Length(),
                              " bytes are not a xlate.v1.TranslateRequest"));
}

// The entries of `contents` in the serialized request, counted from the wire without making a
// string of any (2,000,000 empty entries fit in 4 MB, and parsed they would take hundreds of
// MB); -1 when the bytes are not protobuf's wire format.
int64_t count_contents_entries(const grpc::ByteBuffer& bytes) {
  using google::protobuf::internal::WireFormatLite;
  grpc::ByteBuffer copy(bytes);
  grpc::ProtoBufferReader reader(&copy);
  google::protobuf::io::CodedInputStream input(&reader);
  const uint32_t contents_tag = WireFormatLite::MakeTag(
      xlate::v1::TranslateRequest::kContentsFieldNumber, WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
  int64_t entries = 0;
  for (uint32_t tag = input.ReadTag(); tag != 0; tag = input.ReadTag()) {
    if (tag == contents_tag) ++entries;
    if (!WireFormatLite::SkipField(&input, tag)) return -1;
  }
  return input.ConsumedEntireMessage() ? entries : -1;
}

}  // namespace

grpc::Status parse_request(const grpc::ByteBuffer& bytes, int64_t max_entries,
                           xlate::v1::TranslateRequest& request) {
  if (const int64_t entries = count_contents_entries(bytes); entries > max_entries) {
    return grpc::Status(grpc::INVALID_ARGUMENT,
                        absl::StrCat("contents has ", entries, " entries; the limit is ",
                                     max_entries, " (--max_entries_per_request; blank entries "
                                     "count too)"));
  }
  grpc::ByteBuffer copy(bytes);
  grpc::ProtoBufferReader reader(&copy);
  if (!request.ParseFromZeroCopyStream(&reader)) return why_unparsed(bytes);
  return grpc::Status::OK;
}

grpc::Status serialize_reply(const google::protobuf::MessageLite& reply, grpc::ByteBuffer& bytes) {
  bool own_buffer = false;
  return grpc::SerializationTraits<google::protobuf::MessageLite>::Serialize(reply, &bytes,
                                                                             &own_buffer);
}

}  // namespace xlate::server
