#include "server/served_model.h"

#include <omp.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "engine/ops/cpu/thread_governor.h"
#include "server/kv_cache_budget.h"

namespace xlate::server {

// The model's continuous decoder behind the scheduler's interface.
class ServedModel::Engine : public StreamingEngine {
 public:
  // `governor` (may be null) sets the CPU threads of each step; else `threads` (0: OpenMP's own).
  Engine(std::unique_ptr<ContinuousDecoder> decoder, std::unique_ptr<CpuThreadGovernor> governor,
         int threads, SchedulerObserver* observer)
      : decoder_(std::move(decoder)),
        governor_(std::move(governor)),
        threads_(threads),
        observer_(observer) {}
  int free_slots() const override { return decoder_->free_slots(); }
  int live_sentences() const override { return decoder_->live_sentences(); }
  absl::StatusOr<std::vector<int64_t>> Admit(const std::vector<std::vector<int32_t>>& sources,
                                             const std::vector<TranslationOptions>& options,
                                             const std::vector<Constraints>& constraints) override {
    return decoder_->Admit(sources, options, constraints);
  }
  std::vector<Finished> Step() override {
    // The scheduler thread runs every step, so its OpenMP setting is the one that counts.
    if (governor_) {
      omp_set_num_threads(governor_->threads(absl::Now()));
    } else if (threads_ > 0) {
      omp_set_num_threads(threads_);
    }
    std::vector<Finished> finished = decoder_->Step();
    if (observer_ != nullptr) {
      const KvCachePool::Usage cache = decoder_->kv_cache().usage();
      observer_->on_kv_cache(cache.blocks_in_use, cache.blocks_in_pool, cache.pool_bytes(),
                             cache.max_blocks * cache.block_bytes);
    }
    return finished;
  }
  std::vector<Progress> TakeProgress() override { return decoder_->TakeProgress(); }
  int Drop(const std::vector<int64_t>& handles) override { return decoder_->Drop(handles); }
  int64_t CacheBlocksFor(int64_t source_tokens, const TranslationOptions& options,
                         bool constrained) const override {
    return decoder_->cache_blocks_for(source_tokens, options, constrained);
  }
  int64_t CacheBlocksFree() const override { return decoder_->kv_cache().free_to_reserve(); }
  int64_t CacheBlocksCap() const override { return decoder_->kv_cache().max_blocks(); }

 private:
  std::unique_ptr<ContinuousDecoder> decoder_;
  std::unique_ptr<CpuThreadGovernor> governor_;
  const int threads_;
  SchedulerObserver* const observer_;
};

ServedModel::ServedModel(std::string name, std::string dir,
                         std::unique_ptr<Translator> translator, int max_input_tokens)
    : name_(std::move(name)),
      dir_(std::move(dir)),
      translator_(std::move(translator)),
      max_input_tokens_(max_input_tokens) {}

// The members go in reverse: the scheduler (which drains) before the engine and the weights.
ServedModel::~ServedModel() = default;

absl::StatusOr<std::unique_ptr<ServedModel>> ServedModel::Load(const std::string& name,
                                                               const std::string& dir,
                                                               const ServingSettings& settings,
                                                               SchedulerObserver* observer) {
  const absl::Time start = absl::Now();
  auto translator = Translator::Load(dir, settings.placement);
  if (!translator.ok()) return translator.status();
  ContinuousDecoderOptions decoder_options = settings.decoder;
  decoder_options.max_source_tokens =
      std::min(decoder_options.max_source_tokens, (*translator)->max_input_tokens());
  ContinuousDecoderOptions express_options = decoder_options;
  express_options.max_sentences = std::max(1, settings.express_sentences);
  // One pool for both decoders (the scheduler thread steps them one after the other), empty
  // until sentences decode, capped by the flag or the memory the process may use, and never
  // larger than the two decoders can fill at once.
  const TransformerModel& transformer = (*translator)->model();
  const int64_t cap_bytes = settings.kv_cache_bytes > 0
                                ? settings.kv_cache_bytes
                                : default_kv_cache_bytes(settings.placement.device);
  int64_t cap_blocks =
      ContinuousDecoder::worst_case_blocks(transformer.config(), decoder_options);
  if (settings.express_sentences > 0) {
    cap_blocks += ContinuousDecoder::worst_case_blocks(transformer.config(), express_options);
  }
  cap_blocks = std::clamp<int64_t>(cap_bytes / transformer.kv_cache_block_bytes(), 1,
                                   std::min(cap_blocks, KvCachePool::kMaxBlocks));
  std::shared_ptr<KvCachePool> kv_cache = transformer.kv_cache_pool(cap_blocks);
  auto decoder = ContinuousDecoder::Create(transformer, decoder_options, kv_cache);
  if (!decoder.ok()) {
    return absl::Status(decoder.status().code(),
                        absl::StrCat(decoder.status().message(), "; lower --decoding_sentences, "
                                     "--max_beam_size or --max_output_tokens"));
  }
  std::unique_ptr<ContinuousDecoder> express_decoder;
  if (settings.express_sentences > 0) {
    auto made = ContinuousDecoder::Create(transformer, express_options, kv_cache);
    if (!made.ok()) {
      return absl::Status(made.status().code(),
                          absl::StrCat(made.status().message(), " (the express decoder; lower "
                                       "--express_sentences, or 0 for none)"));
    }
    express_decoder = *std::move(made);
  }
  const auto governor = [&]() -> std::unique_ptr<CpuThreadGovernor> {
    if (settings.placement.device != Device::kCPU || settings.threads != 0) return nullptr;
    return std::make_unique<CpuThreadGovernor>(omp_get_max_threads());
  };
  std::unique_ptr<ServedModel> model(new ServedModel(name, dir, *std::move(translator),
                                                     decoder_options.max_source_tokens));
  model->kv_cache_ = std::move(kv_cache);
  model->engine_ =
      std::make_unique<Engine>(*std::move(decoder), governor(), settings.threads, observer);
  if (express_decoder) {
    model->express_ = std::make_unique<Engine>(std::move(express_decoder), governor(),
                                               settings.threads, observer);
  }
  auto scheduler = Scheduler::Create(settings.scheduler, model->engine_.get(), observer,
                                     absl::Now, model->express_.get());
  if (!scheduler.ok()) return scheduler.status();
  model->scheduler_ = *std::move(scheduler);

  // Through the scheduler, on the engine's own thread, as every later sentence.
  auto warmup_ids = model->translator_->tokenizer().encode("Hello world.");
  if (!warmup_ids.ok()) return warmup_ids.status();
  auto warmup = model->scheduler_->Submit({*warmup_ids}, TranslationOptions(),
                                          absl::InfiniteFuture());
  if (!warmup.ok()) return warmup.status();
  (*warmup)->WaitUntil(absl::InfiniteFuture());
  if (!(*warmup)->status().ok()) {
    return absl::InternalError(
        absl::StrCat("the warm-up translation failed: ", (*warmup)->status().message()));
  }
  model->load_time_ = absl::Now() - start;
  return model;
}

}  // namespace xlate::server
