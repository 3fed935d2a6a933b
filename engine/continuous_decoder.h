// Iteration-level ("continuous") batching: sentences join a running decode between two steps
// and leave it once their search ends, and every step decodes the live hypotheses of all
// sentences as one batch (one pass over the weights). The search is DeviceBeamSearch, its state
// on the model's device: on a GPU a step waits for nothing, and the host looks for finished
// sentences every few steps. A sentence keeps a fixed range of max_beam_size physical rows of
// the KV cache for its whole life, so a newcomer writing its position 0 never touches a live
// row's keys and values. Translator::TranslateTokens is this decoder, given every sentence.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/decoding/device_beam_search.h"
#include "engine/transformer_decoder.h"
#include "engine/translator.h"

namespace xlate {

struct ContinuousDecoderOptions {
  int max_sentences = 32;       // sentences decoding at once
  int max_beam_size = 4;        // rows per sentence, <= the backend's max_beam (15 on CUDA)
  int max_source_tokens = 256;  // per sentence, end token included
  int max_target_tokens = 306;  // output tokens per sentence at most (caps max_extra_length)
  // Steps between two looks at the sentences' done flags (each waits for the device); 0: every
  // step on the CPU, where looking costs nothing, every 4th on a GPU.
  int sync_interval = 0;
  // Write the KV caches' pages when the decoder is made (TransformerModel::start_slots): for a
  // decoder that serves for the process's lifetime, so that its memory stays flat. A decoder
  // for one call (Translator::TranslateTokens) leaves them to be touched as rows need them.
  bool commit_caches = true;
};

class ContinuousDecoder {
 public:
  // `model` must outlive the decoder. Errors: options out of range (InvalidArgument), caches
  // that do not fit in the model device's memory (ResourceExhausted, with their size).
  static absl::StatusOr<std::unique_ptr<ContinuousDecoder>> Create(
      const TransformerModel& model, const ContinuousDecoderOptions& options);
  // As Create, for options known to be valid; throws std::bad_alloc when memory runs out.
  ContinuousDecoder(const TransformerModel& model, const ContinuousDecoderOptions& options);

  // Bytes of the KV caches: per decoder layer, keys and values of max_target_tokens positions of
  // max_sentences x max_beam_size rows, and of max_source_tokens source positions per sentence.
  static int64_t cache_bytes(const ModelConfig& config, DType dtype,
                             const ContinuousDecoderOptions& options);

  int free_slots() const { return static_cast<int>(free_.size()); }
  int live_sentences() const;

  // Sentences through the encoder, not yet admitted: one pass over many sentences makes larger
  // matrix products than passes over the few a step frees slots for (on the CPU, 43 against
  // 31 us per token for 1 against 32 sentences of the default model). Translator encodes a
  // batch ahead and admits its sentences as slots free up.
  struct Encoded {
    std::vector<std::vector<int32_t>> sources;  // token ids, no end token
    std::vector<int32_t> lengths;               // per sentence, end token included
    Tensor output;  // [sentences, padded length, d_model] on the model's device
  };
  // Errors: a source too long or with ids outside the vocabulary (InvalidArgument);
  // ResourceExhausted when the encoder pass cannot be allocated, Internal for another failure
  // of the device. Never throws.
  absl::StatusOr<Encoded> Encode(std::vector<std::vector<int32_t>> sources) const;

  // Encodes `sources` (token ids, no end token) and adds them to the decode with `options`;
  // returns one handle per source, in order. Errors (nothing admitted): more sources than free
  // slots, a source too long or with ids outside the vocabulary, options out of range or a beam
  // wider than max_beam_size; ResourceExhausted when the encoder pass cannot be allocated,
  // Internal for another failure of the device (a CUDA error). Never throws.
  // constraints: empty, or one per source: target token sequences every hypothesis of that
  // sentence must contain (lexical constraints: DeviceBeamSearch::add; at most
  // rules::kMaxConstraints of rules::kMaxConstraintTokens tokens in all, each non-empty, no
  // end or padding token, fitting the sentence's output limit; a CPU model — Unimplemented on
  // another device). A sentence with constraints searches with options.constrained_beam_size
  // beams where that is set.
  absl::StatusOr<std::vector<int64_t>> Admit(const std::vector<std::vector<int32_t>>& sources,
                                             const TranslationOptions& options,
                                             const std::vector<Constraints>& constraints = {});
  // The same with options[i] for source i: sentences of any options share one admission (one
  // encoder pass) as they share the steps.
  absl::StatusOr<std::vector<int64_t>> Admit(const std::vector<std::vector<int32_t>>& sources,
                                             const std::vector<TranslationOptions>& options,
                                             const std::vector<Constraints>& constraints = {});
  // Admits sentences [first, first + options.size()) of `encoded`, as Admit does its sources.
  absl::StatusOr<std::vector<int64_t>> Admit(const Encoded& encoded, int64_t first,
                                             const std::vector<TranslationOptions>& options,
                                             const std::vector<Constraints>& constraints = {});

  struct Finished {
    int64_t handle;
    // Up to n_best, best first; the best carries its alignment when options.alignment asked.
    std::vector<Hypothesis> hypotheses;
    absl::Status status;  // not OK: the sentence failed (no hypotheses)
  };
  // Decodes one token for every live sentence; returns the sentences found finished (on a GPU
  // the search looks every few steps, so a sentence may come a few steps after its last token),
  // aligned in one pass where their options asked. A step that runs out of memory fails every
  // live sentence (ResourceExhausted) and frees their slots, as does one that meets another
  // device error (Internal); an alignment pass that runs out of memory, the sentences it
  // aligns. The decoder stays usable.
  std::vector<Finished> Step();

  struct Progress {
    int64_t handle;
    std::vector<int32_t> stable_tokens;  // engine/decoding/stable_prefix.h
  };
  // The stable prefixes that grew in the steps since the last call, of live sentences admitted
  // with options.report_stable_prefixes (looked at when Step() looks for finished sentences).
  // A sentence's last prefix comes before its result; a sentence dropped or finished since has
  // none here.
  std::vector<Progress> TakeProgress();

  // Drops the live sentences of `handles` (their requests were cancelled or timed out): they
  // leave the decode before the next step and free their slots. Handles that are not live
  // (finished, dropped, unknown) are ignored. Returns how many sentences were dropped.
  int Drop(const std::vector<int64_t>& handles);

 private:
  absl::Status Check(int64_t count, const std::vector<TranslationOptions>& options) const;
  // Fills the alignments of the finished sentences whose slots asked for one.
  void Align(std::vector<Finished>& finished, const std::vector<int>& slots);

  const TransformerModel& model_;
  const ContinuousDecoderOptions options_;
  TransformerDecoder decoder_;
  DeviceBeamSearch search_;
  std::vector<int64_t> handles_;  // by slot; -1 = free
  std::vector<int> free_;         // free slots
  // By slot, for sentences admitted with options.alignment: what to align, and how.
  std::vector<std::optional<AlignmentOptions>> alignments_;
  std::vector<std::vector<int32_t>> aligned_sources_;
  int64_t next_handle_ = 0;
};

}  // namespace xlate
