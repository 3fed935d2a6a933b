#include "engine/continuous_decoder.h"

#include <algorithm>
#include <new>

#include "absl/strings/str_cat.h"
#include "engine/ops/backend.h"

namespace xlate {

namespace {

int max_positions(const TransformerModel& model, const ContinuousDecoderOptions& options) {
  return std::max(1, std::min(options.max_target_tokens, model.config().max_positions));
}

}  // namespace

ContinuousDecoder::ContinuousDecoder(const TransformerModel& model,
                                     const ContinuousDecoderOptions& options,
                                     std::shared_ptr<KvCachePool> pool)
    : model_(model),
      options_(options),
      pool_(pool != nullptr ? std::move(pool)
                            : model.kv_cache_pool(std::min(
                                  KvCachePool::kMaxBlocks,
                                  worst_case_blocks(model.config(), options)))),
      decoder_(model, TransformerDecoder::Slots{options.max_sentences, options.max_source_tokens,
                                                options.max_beam_size,
                                                max_positions(model, options)},
               pool_),
      search_(decoder_, options.max_sentences, options.max_beam_size,
              max_positions(model, options), options.sync_interval),
      handles_(static_cast<size_t>(options.max_sentences), -1),
      reserved_blocks_(static_cast<size_t>(options.max_sentences), 0),
      alignments_(static_cast<size_t>(options.max_sentences)),
      aligned_sources_(static_cast<size_t>(options.max_sentences)),
      aligned_encodings_(static_cast<size_t>(options.max_sentences)) {
  for (int slot = options.max_sentences - 1; slot >= 0; --slot) free_.push_back(slot);
  // The tables were written on this thread's stream; the server decodes on another thread's.
  op_backend(model.placement().device).synchronize();
}

ContinuousDecoder::~ContinuousDecoder() {
  for (int64_t blocks : reserved_blocks_) pool_->unreserve(blocks);
}

absl::StatusOr<std::unique_ptr<ContinuousDecoder>> ContinuousDecoder::Create(
    const TransformerModel& model, const ContinuousDecoderOptions& options,
    std::shared_ptr<KvCachePool> pool) {
  const int max_beam = op_backend(model.placement().device).max_beam;
  if (options.max_sentences < 1 || options.max_beam_size < 1 ||
      options.max_beam_size > max_beam || options.max_source_tokens < 2 ||
      options.max_target_tokens < 1 || options.sync_interval < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "continuous decoder options out of range: max_sentences ", options.max_sentences,
        " (>= 1), max_beam_size ", options.max_beam_size, " (1 to ", max_beam,
        "), max_source_tokens ", options.max_source_tokens, " (>= 2), max_target_tokens ",
        options.max_target_tokens, " (>= 1), sync_interval ", options.sync_interval, " (>= 0)"));
  }
  try {
    return std::make_unique<ContinuousDecoder>(model, options, std::move(pool));
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "out of ", memory_name(model.placement().device), " memory for the decoding tables "
        "of ", options.max_sentences, " sentences x ", options.max_beam_size, " beams x ",
        options.max_target_tokens, " target tokens"));
  }
}

int64_t ContinuousDecoder::worst_case_blocks(const ModelConfig& config,
                                             const ContinuousDecoderOptions& options) {
  const int64_t positions = std::max(1, std::min(options.max_target_tokens, config.max_positions));
  return int64_t{options.max_sentences} *
         (options.max_beam_size * KvCachePool::blocks_for(positions) +
          KvCachePool::blocks_for(options.max_source_tokens));
}

int64_t ContinuousDecoder::cache_blocks_for(int64_t source_tokens,
                                            const TranslationOptions& options,
                                            bool constrained) const {
  const ModelConfig& config = model_.config();
  const int max_length = options.max_output_tokens(source_tokens, max_positions(model_, options_),
                                                   config.end_forced_at_limit);
  const int beam = options.search(config, constrained).beam_size;
  return beam * KvCachePool::blocks_for(max_length) + KvCachePool::blocks_for(source_tokens + 1);
}

int ContinuousDecoder::live_sentences() const {
  // Sentences waiting for their alignment are still to be answered: the caller goes on
  // stepping until they are.
  return search_.live_sentences() + static_cast<int>(waiting_alignment_.size());
}

absl::Status ContinuousDecoder::Check(int64_t count,
                                      const std::vector<TranslationOptions>& options) const {
  if (static_cast<int64_t>(options.size()) != count) {
    return absl::InvalidArgumentError(
        absl::StrCat(options.size(), " sets of options for ", count, " sentences"));
  }
  for (size_t i = 0; i < options.size(); ++i) {
    if (i > 0 && options[i] == options[i - 1]) continue;
    if (auto status = options[i].ValidateFor(model_.config()); !status.ok()) return status;
    for (const auto& [name, beam] : {std::pair<const char*, int>{"beam_size", options[i].beam_size},
                                     {"constrained_beam_size", options[i].constrained_beam_size}}) {
      if (beam > options_.max_beam_size) {
        return absl::InvalidArgumentError(absl::StrCat(
            "option ", name, " = ", beam, " is out of range: this decoder holds at most ",
            options_.max_beam_size, " beams per sentence"));
      }
    }
  }
  if (count > static_cast<int64_t>(free_.size())) {
    return absl::ResourceExhaustedError(
        absl::StrCat(count, " sentences but ", free_.size(), " free decoding slots"));
  }
  return absl::OkStatus();
}

absl::StatusOr<ContinuousDecoder::Encoded> ContinuousDecoder::Encode(
    std::vector<std::vector<int32_t>> sources) const {
  const ModelConfig& config = model_.config();
  if (auto status = check_source_tokens(sources, options_.max_source_tokens, "",
                                        config.vocab_size);
      !status.ok()) {
    return status;
  }
  Encoded encoded;
  const int64_t count = static_cast<int64_t>(sources.size());
  int64_t padded = 0;
  for (const auto& source : sources) padded = std::max<int64_t>(padded, source.size() + 1);
  std::vector<int32_t> tokens(static_cast<size_t>(count * padded), config.pad_id);
  for (int64_t n = 0; n < count; ++n) {
    std::copy(sources[n].begin(), sources[n].end(), tokens.begin() + n * padded);
    tokens[n * padded + sources[n].size()] = config.eos_id;
    encoded.lengths.push_back(static_cast<int32_t>(sources[n].size() + 1));
  }
  encoded.sources = std::move(sources);
  if (count == 0) return encoded;
  // The encoder pass is the one allocation of an admission that grows with the request (the
  // caches exist). Nothing escapes as an exception: the caller is a scheduler's thread (on a
  // GPU, a CUDA error throws std::runtime_error).
  try {
    encoded.output = model_.encode(Tensor::from_vector(tokens, {count, padded}),
                                   Tensor::from_vector(encoded.lengths, {count}));
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "out of ", memory_name(model_.placement().device), " memory encoding ", count,
        " sentences of up to ", padded, " tokens: admit fewer tokens at a time"));
  } catch (const std::exception& error) {
    return absl::InternalError(
        absl::StrCat("encoding ", count, " sentences failed: ", error.what()));
  }
  return encoded;
}

absl::StatusOr<std::vector<int64_t>> ContinuousDecoder::Admit(
    const std::vector<std::vector<int32_t>>& sources, const TranslationOptions& options,
    const std::vector<Constraints>& constraints) {
  return Admit(sources, std::vector<TranslationOptions>(sources.size(), options), constraints);
}

absl::StatusOr<std::vector<int64_t>> ContinuousDecoder::Admit(
    const std::vector<std::vector<int32_t>>& sources,
    const std::vector<TranslationOptions>& options, const std::vector<Constraints>& constraints) {
  // Checked before the encoder pass, which they would waste.
  if (auto status = Check(static_cast<int64_t>(sources.size()), options); !status.ok()) {
    return status;
  }
  auto encoded = Encode(sources);
  if (!encoded.ok()) return encoded.status();
  return Admit(*encoded, 0, options, constraints);
}

absl::StatusOr<std::vector<int64_t>> ContinuousDecoder::Admit(
    const Encoded& encoded, int64_t first, const std::vector<TranslationOptions>& options,
    const std::vector<Constraints>& constraints) {
  const int64_t count = static_cast<int64_t>(options.size());
  const int64_t sentences = static_cast<int64_t>(encoded.sources.size());
  if (first < 0 || first + count > sentences) {
    return absl::InvalidArgumentError(absl::StrCat("sentences [", first, ", ", first + count,
                                                   ") of ", sentences, " encoded"));
  }
  if (auto status = Check(count, options); !status.ok()) return status;
  if (count == 0) return std::vector<int64_t>();
  const ModelConfig& config = model_.config();
  std::vector<int32_t> slots(free_.rbegin(), free_.rbegin() + count);  // taken once added
  std::vector<int> max_lengths(static_cast<size_t>(count));
  std::vector<SearchOptions> searches;
  const int capacity = max_positions(model_, options_);
  std::vector<int64_t> blocks(static_cast<size_t>(count));
  int64_t all_blocks = 0;
  for (int64_t n = 0; n < count; ++n) {
    const int64_t source_tokens = static_cast<int64_t>(encoded.sources[first + n].size());
    max_lengths[n] = options[n].max_output_tokens(source_tokens, capacity,
                                                  config.end_forced_at_limit);
    const bool constrained = static_cast<size_t>(n) < constraints.size() && !constraints[n].empty();
    searches.push_back(options[n].search(config, constrained));
    blocks[n] = cache_blocks_for(source_tokens, options[n], constrained);
    all_blocks += blocks[n];
  }
  if (auto status = check_constraints(constraints, max_lengths, model_); !status.ok()) {
    return status;
  }
  if (!pool_->reserve(all_blocks)) {
    const int64_t block_bytes = pool_->usage().block_bytes;
    return absl::ResourceExhaustedError(absl::StrCat(
        "the KV cache cannot hold ", count, " more sentences now: they need ", all_blocks,
        " blocks (", (all_blocks * block_bytes) >> 20, " MiB) and ", pool_->free_to_reserve(),
        " of its ", pool_->max_blocks(), " are free (", (pool_->max_blocks() * block_bytes) >> 20,
        " MiB in all)"));
  }
  const std::vector<int32_t> lengths(encoded.lengths.begin() + first,
                                     encoded.lengths.begin() + first + count);
  const int64_t padded = encoded.output.dim(1), width = encoded.output.dim(2);
  // The slots are taken only once the sentences are in the search, so a failure leaves them
  // free.
  try {
    decoder_.set_sources(encoded.output.view(first * padded * width, {count, padded, width}),
                         Tensor::from_vector(lengths, {count}), slots);
    for (int64_t n = 0; n < count; ++n) {
      decoder_.set_forced_tokens({slots[n]}, options[n].forced_start_tokens);
      decoder_.set_repeat_guards({slots[n]}, options[n].repeat_guards());
    }
    search_.add(std::vector<int>(slots.begin(), slots.end()), max_lengths, searches,
                constraints);
  } catch (const std::bad_alloc&) {
    decoder_.release_sentences(slots);
    pool_->unreserve(all_blocks);
    int widest = 0;
    for (const SearchOptions& search : searches) widest = std::max(widest, search.beam_size);
    return absl::ResourceExhaustedError(absl::StrCat(
        "out of ", memory_name(model_.placement().device), " memory admitting ", count,
        " sentences of up to ", padded, " tokens at beams up to ", widest,
        ": admit fewer sentences at a time, or narrower beams"));
  } catch (const std::exception& error) {
    decoder_.release_sentences(slots);
    pool_->unreserve(all_blocks);
    return absl::InternalError(absl::StrCat("admitting ", count, " sentences failed: ",
                                            error.what()));
  }
  free_.resize(free_.size() - static_cast<size_t>(count));
  for (int64_t n = 0; n < count; ++n) reserved_blocks_[slots[n]] = blocks[n];

  std::vector<int64_t> handles;
  for (size_t n = 0; n < slots.size(); ++n) {
    const int32_t slot = slots[n];
    handles_[slot] = next_handle_++;
    handles.push_back(handles_[slot]);
    alignments_[slot] = options[n].alignment;
    if (options[n].alignment.has_value()) {
      aligned_sources_[slot] = encoded.sources[first + n];
      aligned_encodings_[slot] =
          encoded.output.view((first + static_cast<int64_t>(n)) * padded * width,
                              {lengths[n], width})
              .clone();
    }
  }
  return handles;
}

int ContinuousDecoder::Drop(const std::vector<int64_t>& handles) {
  std::vector<int> slots;
  for (int64_t handle : handles) {
    const auto slot = std::find(handles_.begin(), handles_.end(), handle);
    if (handle >= 0 && slot != handles_.end()) {
      slots.push_back(static_cast<int>(slot - handles_.begin()));
    }
  }
  // A dropped sentence waiting for its alignment is not answered either.
  const size_t waiting = waiting_alignment_.size();
  waiting_alignment_.erase(
      std::remove_if(waiting_alignment_.begin(), waiting_alignment_.end(),
                     [&handles](const WaitingAlignment& sentence) {
                       return std::find(handles.begin(), handles.end(),
                                        sentence.finished.handle) != handles.end();
                     }),
      waiting_alignment_.end());
  const int dropped_waiting = static_cast<int>(waiting - waiting_alignment_.size());
  if (slots.empty()) return dropped_waiting;
  const std::vector<int> dropped = search_.drop(slots);
  for (int slot : dropped) FreeSlot(slot);
  return static_cast<int>(dropped.size()) + dropped_waiting;
}

void ContinuousDecoder::FreeSlot(int slot) {
  handles_[slot] = -1;
  alignments_[slot].reset();
  aligned_sources_[slot] = {};
  aligned_encodings_[slot] = Tensor();
  pool_->unreserve(reserved_blocks_[slot]);
  reserved_blocks_[slot] = 0;
  free_.push_back(slot);
}

std::vector<ContinuousDecoder::Progress> ContinuousDecoder::TakeProgress() {
  std::vector<Progress> progress;
  for (DeviceBeamSearch::Progress& sentence : search_.take_progress()) {
    progress.push_back({handles_[sentence.slot], std::move(sentence.stable_tokens)});
  }
  return progress;
}

std::vector<ContinuousDecoder::Finished> ContinuousDecoder::Step() {
  std::vector<DeviceBeamSearch::Finished> done;
  absl::Status failure;
  try {
    // Nothing left to decode (only sentences waiting for their alignment): no step.
    if (search_.live_sentences() > 0) done = search_.step();
  } catch (const std::bad_alloc&) {
    failure = absl::ResourceExhaustedError(absl::StrCat(
        "out of ", memory_name(model_.placement().device),
        " memory in a decoding step of ", search_.live_sentences(), " sentences (",
        search_.live_rows(), " hypotheses); every one of them failed: decode fewer sentences "
        "at a time, or narrower beams"));
  } catch (const std::exception& error) {
    failure = absl::InternalError(absl::StrCat("a decoding step of ", search_.live_sentences(),
                                               " sentences failed (", error.what(),
                                               "); every one of them failed"));
  }
  if (!failure.ok()) {
    for (int slot : search_.abandon()) done.push_back({slot, {}});
  }
  std::vector<Finished> finished;
  std::vector<int> slots;
  for (DeviceBeamSearch::Finished& sentence : done) {
    finished.push_back({handles_[sentence.slot], std::move(sentence.hypotheses), failure});
    slots.push_back(sentence.slot);
  }
  WaitForAlignment(finished, slots);
  for (int slot : slots) FreeSlot(slot);
  AlignWaiting(finished);
  return finished;
}

void ContinuousDecoder::WaitForAlignment(std::vector<Finished>& finished,
                                         const std::vector<int>& slots) {
  std::vector<Finished> now;
  for (size_t i = 0; i < finished.size(); ++i) {
    if (!alignments_[slots[i]].has_value() || !finished[i].status.ok() ||
        finished[i].hypotheses.empty()) {
      now.push_back(std::move(finished[i]));
      continue;
    }
    waiting_alignment_.push_back({std::move(finished[i]), std::move(aligned_sources_[slots[i]]),
                                  std::move(aligned_encodings_[slots[i]]), *alignments_[slots[i]],
                                  0});
  }
  finished = std::move(now);
}

void ContinuousDecoder::AlignWaiting(std::vector<Finished>& finished) {
  if (waiting_alignment_.empty()) return;
  for (WaitingAlignment& waiting : waiting_alignment_) ++waiting.steps;
  if (waiting_alignment_.size() < kAlignBatch && search_.live_sentences() > 0 &&
      waiting_alignment_.front().steps < kMaxAlignWaitSteps) {
    return;
  }
  std::vector<const std::vector<int32_t>*> sources;
  std::vector<Hypothesis*> best;
  std::vector<const AlignmentOptions*> options;
  std::vector<const Tensor*> encodings;
  for (WaitingAlignment& waiting : waiting_alignment_) {
    sources.push_back(&waiting.source);
    best.push_back(&waiting.finished.hypotheses.front());
    options.push_back(&waiting.options);
    encodings.push_back(&waiting.encoding);
  }
  try {
    align(model_, sources, best, options, encodings);
  } catch (const std::bad_alloc&) {
    const absl::Status failure = absl::ResourceExhaustedError(absl::StrCat(
        "out of ", memory_name(model_.placement().device), " memory aligning ",
        waiting_alignment_.size(), " finished sentences; each of them failed"));
    for (WaitingAlignment& waiting : waiting_alignment_) {
      waiting.finished.hypotheses.clear();
      waiting.finished.status = failure;
    }
  }
  for (WaitingAlignment& waiting : waiting_alignment_) {
    finished.push_back(std::move(waiting.finished));
  }
  waiting_alignment_.clear();
}

}  // namespace xlate
