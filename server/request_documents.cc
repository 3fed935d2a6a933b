#include "server/request_documents.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "document/inline_markup.h"
#include "server/grpc_status.h"

namespace xlate::server {

grpc::Status expand_documents(xlate::v1::TranslateRequest& request, bool streaming,
                              std::optional<DocumentBatch>& documents) {
  auto format = entry_format(request.mime_type(), "mime_type");
  if (!format.ok()) return to_grpc(format.status());
  if (is_file_format(*format)) {
    return grpc::Status(grpc::INVALID_ARGUMENT,
                        absl::StrCat("mime_type \"", request.mime_type(),
                                     "\" is a file's, which contents (text) cannot hold; send "
                                     "the file to TranslateDocument"));
  }
  const bool placeholders = request.options().keep_placeholders();
  if (!is_document(*format, placeholders)) return grpc::Status::OK;
  const std::string kind = *format == EntryFormat::kHtml  ? "mime_type \"text/html\""
                           : *format == EntryFormat::kXml ? "mime_type \"text/xml\""
                                                          : "options.keep_placeholders";
  const auto refuse = [&](const char* what) {
    return grpc::Status(grpc::INVALID_ARGUMENT,
                        absl::StrCat(kind, " does not take ", what,
                                     " (an entry's translation is rebuilt from its text runs)"));
  };
  if (streaming) return refuse("TranslateStream: send it to Translate");
  if (request.has_alignment()) return refuse("alignment");
  if (request.target_prefix_size() > 0) return refuse("target_prefix");
  if (request.options().n_best() > 1) return refuse("n_best > 1");
  if (request.options().return_scores()) return refuse("return_scores");
  auto batch = DocumentBatch::Parse(
      std::vector<std::string>(std::make_move_iterator(request.mutable_contents()->begin()),
                               std::make_move_iterator(request.mutable_contents()->end())),
      *format, placeholders, "contents");
  if (!batch.ok()) return to_grpc(batch.status());
  google::protobuf::RepeatedPtrField<std::string> runs(batch->runs().begin(), batch->runs().end());
  if (runs.empty()) runs.Add();
  *request.mutable_contents() = std::move(runs);
  request.clear_mime_type();
  if (batch->needs_word_links()) {
    request.mutable_alignment()->set_layer(kMarkupAlignment.layer);
    request.mutable_alignment()->set_head(kMarkupAlignment.head);
  }
  documents = *std::move(batch);
  return grpc::Status::OK;
}

}  // namespace xlate::server
