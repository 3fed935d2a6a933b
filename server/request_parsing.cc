#include "server/request_parsing.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>
#include <grpcpp/impl/codegen/proto_utils.h>
#include <grpcpp/support/proto_buffer_reader.h>
#include <grpcpp/support/proto_buffer_writer.h>

#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "text/utf8.h"

namespace xlate::server {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::internal::WireFormatLite;

grpc::Status invalid(const std::string& message) {
  return grpc::Status(grpc::INVALID_ARGUMENT, message);
}

grpc::Status not_a_request(const grpc::ByteBuffer& bytes,
                           const google::protobuf::Descriptor* descriptor) {
  return invalid(absl::StrCat("the request's ", bytes.Length(), " bytes are not a ",
                              descriptor->full_name()));
}

// One walk over the request's wire format, before protobuf parses it: counts the entries of
// contents without making a string of any (2,000,000 empty entries fit in 4 MB, and parsed they
// would take hundreds of MB), and checks every string field's UTF-8 itself, naming the field and
// the byte offset (protobuf would refuse the whole message anonymously, and write an ERROR line
// to the log for every such call). Which fields are strings comes from the message's
// descriptor, so a string field added to the API is checked too.
grpc::Status scan_request(const grpc::ByteBuffer& bytes, int64_t max_entries,
                          const google::protobuf::Descriptor* descriptor) {
  grpc::ByteBuffer copy(bytes);  // the reader consumes its buffer's slices
  grpc::ProtoBufferReader reader(&copy);
  google::protobuf::io::CodedInputStream input(&reader);
  std::map<int, int64_t> occurrences;  // by field number
  grpc::Status first_bad_text = grpc::Status::OK;
  std::string text;
  for (uint32_t tag = input.ReadTag(); tag != 0; tag = input.ReadTag()) {
    const FieldDescriptor* field =
        descriptor->FindFieldByNumber(WireFormatLite::GetTagFieldNumber(tag));
    const bool is_text = field != nullptr && field->type() == FieldDescriptor::TYPE_STRING &&
                         WireFormatLite::GetTagWireType(tag) ==
                             WireFormatLite::WIRETYPE_LENGTH_DELIMITED;
    if (!is_text) {
      if (!WireFormatLite::SkipField(&input, tag)) return not_a_request(bytes, descriptor);
      continue;
    }
    const int64_t index = occurrences[field->number()]++;
    if (!WireFormatLite::ReadString(&input, &text)) return not_a_request(bytes, descriptor);
    size_t offset = 0;
    if (first_bad_text.ok() && !is_valid_utf8(text, &offset)) {
      const std::string name = field->is_repeated()
                                   ? absl::StrCat(field->name(), "[", index, "]")
                                   : std::string(field->name());
      first_bad_text = invalid(absl::StrCat(
          name, " is not valid UTF-8 (bad byte sequence at offset ", offset, ")"));
    }
  }
  if (!input.ConsumedEntireMessage()) return not_a_request(bytes, descriptor);
  const FieldDescriptor* contents = descriptor->FindFieldByName("contents");
  const int64_t entries = contents != nullptr ? occurrences[contents->number()] : 0;
  if (entries > max_entries) {
    return invalid(absl::StrCat("contents has ", entries, " entries; the limit is ", max_entries,
                                " (--max_entries_per_request; blank entries count too)"));
  }
  return first_bad_text;
}

}  // namespace

grpc::Status parse_request(const grpc::ByteBuffer& bytes, int64_t max_entries,
                           google::protobuf::Message& request) {
  const google::protobuf::Descriptor* descriptor = request.GetDescriptor();
  if (grpc::Status scanned = scan_request(bytes, max_entries, descriptor); !scanned.ok()) {
    return scanned;
  }
  grpc::ByteBuffer copy(bytes);
  grpc::ProtoBufferReader reader(&copy);
  if (!request.ParseFromZeroCopyStream(&reader)) return not_a_request(bytes, descriptor);
  return grpc::Status::OK;
}

grpc::Status serialize_reply(const google::protobuf::MessageLite& reply, grpc::ByteBuffer& bytes) {
  bool own_buffer = false;
  return grpc::SerializationTraits<google::protobuf::MessageLite>::Serialize(reply, &bytes,
                                                                             &own_buffer);
}

}  // namespace xlate::server
