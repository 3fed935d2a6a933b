// The language token that chooses a multilingual model's output language: OPUS-MT's
// multilingual models (opus-mt-en-mul, opus-mt-tc-big-en-gmq, ...) start the source with one,
// ">>deu<< A dog runs.", as MarianTokenizer cuts it. Requests name languages in BCP-47; the
// model's tokens use ISO 639-3 or 639-1 codes, with a script where it matters (">>zho_Hant<<").
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/tokenizer.h"

namespace xlate {

// The source id to put before a sentence's pieces for `bcp47` (e.g. "de", "de-CH", "zh-Hant"):
// the first of the model's tokens for <ISO 639-3>_<Script>, <ISO 639-1>_<Script>, <ISO 639-3>,
// <ISO 639-1>. -1 when the model has no language tokens (one target language: nothing to add).
// InvalidArgument naming `field` and the codes the model knows when `bcp47` is empty, not a
// language code, or none of its tokens.
absl::StatusOr<int> target_language_token(const Tokenizer& tokenizer, const std::string& bcp47,
                                          absl::string_view field);

}  // namespace xlate
