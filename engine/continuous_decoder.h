// Iteration-level ("continuous") batching: sentences join a running decode between two steps
// and leave it once their search ends, and every step decodes the live hypotheses of all
// sentences as one batch (one pass over the weights). The search is DeviceBeamSearch, its state
// on the model's device: on a GPU a step waits for nothing, and the host looks for finished
// sentences every few steps. A sentence keeps a fixed range of max_beam_size cache slots for its
// whole life, whose positions take KV-cache blocks (engine/kv_cache_pool.h) as they are reached;
// admission reserves the blocks a sentence may come to hold, so a sentence admitted never lacks
// cache. Translator::TranslateTokens is this decoder, given every sentence.
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
};

class ContinuousDecoder {
 public:
  // `model` must outlive the decoder. The keys and values live in `pool`
  // (TransformerModel::kv_cache_pool of this model; decoders stepped by one thread may share
  // one), or, when null, in a pool of the decoder's own as large as its slots may need at once
  // (worst_case_blocks), which fills as they need it. Errors: options out of range
  // (InvalidArgument), the decoder's tables that do not fit in memory (ResourceExhausted).
  static absl::StatusOr<std::unique_ptr<ContinuousDecoder>> Create(
      const TransformerModel& model, const ContinuousDecoderOptions& options,
      std::shared_ptr<KvCachePool> pool = nullptr);
  // As Create, for options known to be valid; throws std::bad_alloc when memory runs out.
  ContinuousDecoder(const TransformerModel& model, const ContinuousDecoderOptions& options,
                    std::shared_ptr<KvCachePool> pool = nullptr);
  // Gives back the live sentences' reservations (a shared pool outlives the decoder).
  ~ContinuousDecoder();

  // KV-cache blocks of max_sentences sentences of max_source_tokens source and
  // max_target_tokens target positions at max_beam_size rows each: the most a decoder with
  // these options holds at once.
  static int64_t worst_case_blocks(const ModelConfig& config,
                                   const ContinuousDecoderOptions& options);
  // The KV-cache blocks a source of `source_tokens` tokens (end token excluded) reserves when
  // admitted with `options`: its source positions, and its beams' (the constrained beam where
  // `constrained`) up to its output limit.
  int64_t cache_blocks_for(int64_t source_tokens, const TranslationOptions& options,
                           bool constrained) const;
  const KvCachePool& kv_cache() const { return *pool_; }

  int free_slots() const { return static_cast<int>(free_.size()); }
  // Sentences decoding, and finished ones waiting for their alignment (see Step).
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
  // slots or than the KV cache can reserve blocks for now (ResourceExhausted; cache_blocks_for
  // says how many each needs), a source too long or with ids outside the vocabulary, options out of range or a beam
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
  // aligned where their options asked. Sentences that ask wait to be aligned together: a
  // teacher-forced pass over one or two sentences (what a step finishes) makes matrix products
  // too small to be cheap, so they come once kAlignBatch of them wait, one of them has waited
  // kMaxAlignWaitSteps steps, or no sentence is left decoding. A step that runs out of memory fails every
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

  // Drops the live sentences of `handles` (their requests were cancelled or timed out), those
  // waiting for their alignment included: they leave the decode before the next step and free
  // their slots. Handles that are not live (finished, dropped, unknown) are ignored. Returns how
  // many sentences were dropped.
  int Drop(const std::vector<int64_t>& handles);

  static constexpr size_t kAlignBatch = 16;
  static constexpr int kMaxAlignWaitSteps = 8;

 private:
  // A finished sentence waiting for its alignment.
  struct WaitingAlignment {
    Finished finished;
    std::vector<int32_t> source;
    Tensor encoding;  // the encoder's output for `source`: the alignment pass runs no encoder
    AlignmentOptions options;
    int steps = 0;  // steps waited
  };
  absl::Status Check(int64_t count, const std::vector<TranslationOptions>& options) const;
  // Moves the finished sentences whose slots asked for an alignment to waiting_alignment_.
  void WaitForAlignment(std::vector<Finished>& finished, const std::vector<int>& slots);
  // Aligns the waiting sentences in one pass when it is time (see Step), adding them to
  // `finished`.
  void AlignWaiting(std::vector<Finished>& finished);
  // The slot's sentence has left the decode: its slot and reservation are free.
  void FreeSlot(int slot);

  const TransformerModel& model_;
  const ContinuousDecoderOptions options_;
  std::shared_ptr<KvCachePool> pool_;
  TransformerDecoder decoder_;
  DeviceBeamSearch search_;
  std::vector<int64_t> handles_;  // by slot; -1 = free
  std::vector<int64_t> reserved_blocks_;  // by slot: KV-cache blocks reserved for its sentence
  std::vector<int> free_;         // free slots
  // By slot, for sentences admitted with options.alignment: what to align, and how.
  std::vector<std::optional<AlignmentOptions>> alignments_;
  std::vector<std::vector<int32_t>> aligned_sources_;
  // By slot, for those: the encoder's output [source tokens + 1, d_model] (a copy, kept until
  // the sentence is aligned).
  std::vector<Tensor> aligned_encodings_;
  std::vector<WaitingAlignment> waiting_alignment_;
  int64_t next_handle_ = 0;
};

}  // namespace xlate
