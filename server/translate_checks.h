// The checks of a Translate request, each limit once, at the service that receives it: the
// request's size and entries are checked as it is parsed (server/request_parsing.h), its
// documents as they are parsed (server/request_documents.h), and everything else here, against
// the model it was routed to. Every message names the field, the measure and the limit.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <grpcpp/support/status.h>

#include "document/glossary_terms.h"
#include "document/text_segments.h"
#include "engine/translator.h"
#include "proto/translator.pb.h"
#include "server/glossaries.h"
#include "server/served_model.h"

namespace xlate::server {

// --max_beam_size's default: each decoding sentence reserves this many KV-cache rows.
constexpr int kDefaultMaxBeamSize = 8;

struct RequestLimits {
  // A request's serialized size (gRPC's own receive limit is lifted, so that a larger request
  // reaches the service and is refused, and counted, with this limit named).
  int64_t max_request_bytes = 4 << 20;
  // Each entry of contents is text, cut into sentences (document/text_segments.h); text is
  // limited in Unicode code points (as Cloud Translation), sentences after the cut.
  int64_t max_entry_code_points = 10000;
  int64_t max_request_code_points = 30000;
  int max_sentences_per_request = 256;
  // Entries of contents, blank or not: counted on the wire before the request is parsed.
  int64_t max_entries_per_request = 256;
  // <= kMaxDeviceBeam: the server's continuous decoder searches with the device beam step.
  int max_beam_size = kDefaultMaxBeamSize;
  // A file's text (TranslateDocument): its paragraphs are the request's entries, each within
  // max_entry_code_points, all of them within these instead of the two per-request limits.
  int64_t max_document_code_points = 200000;
  int max_document_sentences = 2000;
  // Whether the request is a file's (the limits and messages above apply).
  bool document = false;
};

// A request's contents (Translate's, DetectLanguage's): at least one entry, each and all of them
// within their code-point limits.
grpc::Status check_contents(const google::protobuf::RepeatedPtrField<std::string>& contents,
                            const RequestLimits& limits);

// The checks of a request that need no tokenizer, in order: the language codes (against
// `config`, the model the request was routed to), code points per entry and per request, the
// decoding and alignment options, the cut into sentences (filling `texts`) and the sentence
// count.
grpc::Status check_request_text(const xlate::v1::TranslateRequest& request,
                                const ModelConfig& config, const RequestLimits& limits,
                                TranslationOptions& options, std::optional<SegmentedTexts>& texts);

// The request's alignment options (unset fields at their defaults), if it asks for alignments.
std::optional<AlignmentOptions> alignment_options(const xlate::v1::TranslateRequest& request);

// What the checks make of a request for its model.
struct CheckedRequest {
  TranslationOptions options;
  std::optional<SegmentedTexts> texts;  // the entries cut into sentences
  std::vector<std::vector<int32_t>> sources;  // per sentence, its token ids
  // Empty, or per sentence its target prefix's tokens (the first sentence of each entry that
  // has a target_prefix).
  std::vector<std::vector<int32_t>> forced_starts;
  // Empty without a glossary, or per sentence the glossary terms it holds.
  std::vector<SentenceTerms> terms;
};

// check_request_text, then what needs the model: each sentence's tokens within the model's
// limit, the target prefixes within each sentence's output limit, and the glossary_config
// (NOT_FOUND for a glossary `glossaries` lacks, UNIMPLEMENTED on a backend without constrained
// search).
grpc::Status check_translate_request(const ServedModel& model,
                                     const xlate::v1::TranslateRequest& request,
                                     const RequestLimits& limits, const Glossaries* glossaries,
                                     CheckedRequest& checked);

}  // namespace xlate::server
