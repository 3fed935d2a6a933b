// A Translate response built from the scheduler's results: each entry its text again with each
// sentence translated (and, as asked, n-best hypotheses, scores, alignments and glossary terms),
// or, for a request of documents (server/request_documents.h), each entry rebuilt from the
// translations of its runs.
#pragma once

#include <cstdint>
#include <vector>

#include <grpcpp/support/status.h>

#include "document/document_batch.h"
#include "document/glossary_terms.h"
#include "document/text_segments.h"
#include "engine/decoding/search.h"
#include "proto/translator.pb.h"
#include "server/served_model.h"

namespace xlate::server {

// Fills `response` from the results of `texts`' sentences by `model`, in order: each entry is
// its text again with each sentence translated. aligned_sources: each sentence's token ids
// when the request asks for alignments (else unread). terms: empty, or per sentence the
// glossary terms it holds (reported per entry).
grpc::Status respond(const ServedModel& model, const xlate::v1::TranslateRequest& request,
                     const SegmentedTexts& texts,
                     const std::vector<std::vector<int32_t>>& aligned_sources, int n_best,
                     const std::vector<std::vector<Hypothesis>>& results,
                     const std::vector<SentenceTerms>& terms,
                     xlate::v1::TranslateResponse& response);

// Fills `response` with one translation per entry of `documents`, rebuilt from the results of
// the sentences of `runs` (its runs as split); aligned_sources as for respond(), read when the
// documents need word links.
grpc::Status respond_documents(const ServedModel& model, const DocumentBatch& documents,
                               const SegmentedTexts& runs,
                               const std::vector<std::vector<int32_t>>& aligned_sources,
                               const std::vector<std::vector<Hypothesis>>& results,
                               const std::vector<SentenceTerms>& terms,
                               xlate::v1::TranslateResponse& response);

}  // namespace xlate::server
