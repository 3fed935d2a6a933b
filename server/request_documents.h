// A Translate request's documents (document/document_batch.h): mime_type "text/html" or
// "text/xml", or options.keep_placeholders. Their runs of text replace the request's contents
// and are translated as plain text; the response is rebuilt from them
// (server/translate_response.h), one translation per entry as sent.
#pragma once

#include <optional>

#include <grpcpp/support/status.h>

#include "document/document_batch.h"
#include "proto/translator.pb.h"

namespace xlate::server {

// Parses the request's entries when they are documents, into `documents`, and puts their runs
// in place of its contents (one blank run when they have none, so that the request still has
// an entry), asking for the alignments that place their markup (kMarkupAlignment). A plain text
// request is left as it is. INVALID_ARGUMENT for a mime_type other than text/plain, text/html
// and text/xml, for an entry a parser refuses (naming contents[i] and the parser's bound), and
// for what only whole entries take: streaming, alignment, target_prefix, n_best > 1,
// return_scores.
grpc::Status expand_documents(xlate::v1::TranslateRequest& request, bool streaming,
                              std::optional<DocumentBatch>& documents);

}  // namespace xlate::server
