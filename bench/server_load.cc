// Load generator for xlate-server: an async gRPC client that keeps --clients calls in flight
// (closed loop) or starts calls at --rate per second (open loop), for --duration_s seconds,
// sending sentences of --input in turn. Prints one JSON line: requests, sentences,
// target_tokens (tokenised with the model's spm.model), seconds, sentences_per_second,
// tokens_per_second, latency p50/p90/p99 in seconds, and the count of failed calls by code.
#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <thread>

#include <grpcpp/grpcpp.h>
#include <nlohmann/json.hpp>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "engine/tokenizer.h"
#include "proto/translator.grpc.pb.h"

ABSL_FLAG(std::string, target, "127.0.0.1:50051", "server address");
ABSL_FLAG(std::string, input, "", "sentences, one per line");
ABSL_FLAG(std::string, spm_model, "", "the model's spm.model, to count target tokens");
ABSL_FLAG(int, clients, 8, "calls kept in flight (closed loop); ignored with --rate");
ABSL_FLAG(double, rate, 0, "calls started per second (open loop); 0 = closed loop");
ABSL_FLAG(int, sentences_per_request, 1, "sentences in each call");
ABSL_FLAG(double, duration_s, 30, "how long to send, in seconds");
ABSL_FLAG(int, beam_size, 4, "beam size of each call");

namespace {

using Clock = std::chrono::steady_clock;

struct Call {
  grpc::ClientContext context;
  xlate::v1::TranslateResponse response;
  grpc::Status status;
  Clock::time_point start;
  std::unique_ptr<grpc::ClientAsyncResponseReader<xlate::v1::TranslateResponse>> reader;
};

double percentile(std::vector<double> values, double fraction) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t index = std::min(values.size() - 1, static_cast<size_t>(fraction * values.size()));
  return values[index];
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  std::ifstream input(absl::GetFlag(FLAGS_input));
  std::vector<std::string> sentences;
  for (std::string line; std::getline(input, line);) {
    if (!line.empty()) sentences.push_back(line);
  }
  if (sentences.empty()) {
    std::cerr << "server_load: --input has no sentences\n";
    return 2;
  }
  auto tokenizer = xlate::Tokenizer::Load(absl::GetFlag(FLAGS_spm_model));
  if (!tokenizer.ok()) {
    std::cerr << "server_load: " << tokenizer.status().message() << "\n";
    return 2;
  }
  auto stub = xlate::v1::Translator::NewStub(
      grpc::CreateChannel(absl::GetFlag(FLAGS_target), grpc::InsecureChannelCredentials()));
  grpc::CompletionQueue queue;
  size_t next_sentence = 0;
  auto start_call = [&] {
    auto* call = new Call;
    xlate::v1::TranslateRequest request;
    for (int i = 0; i < absl::GetFlag(FLAGS_sentences_per_request); ++i) {
      request.add_contents(sentences[next_sentence++ % sentences.size()]);
    }
    request.mutable_options()->set_beam_size(absl::GetFlag(FLAGS_beam_size));
    call->context.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(10));
    call->start = Clock::now();
    call->reader = stub->AsyncTranslate(&call->context, request, &queue);
    call->reader->Finish(&call->response, &call->status, call);
  };

  const double rate = absl::GetFlag(FLAGS_rate);
  const auto begin = Clock::now();
  const auto end = begin + std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(absl::GetFlag(FLAGS_duration_s)));
  int in_flight = 0;
  int64_t started = 0;
  if (rate <= 0) {
    for (; in_flight < absl::GetFlag(FLAGS_clients); ++in_flight, ++started) start_call();
  }
  std::vector<double> latencies;
  std::map<std::string, int64_t> failures;
  int64_t done_sentences = 0, target_tokens = 0;
  auto last_completion = begin;
  for (;;) {
    const auto now = Clock::now();
    if (rate > 0 && now < end) {
      const auto due = begin + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(started / rate));
      if (now >= due) {
        start_call();
        ++started;
        ++in_flight;
        continue;
      }
    }
    if (in_flight == 0 && (rate <= 0 || now >= end)) break;
    void* tag = nullptr;
    bool ok = false;
    const auto wait_until = rate > 0 && now < end ? std::min(end, now + std::chrono::milliseconds(1))
                                                  : now + std::chrono::seconds(1);
    const auto result = queue.AsyncNext(&tag, &ok, std::chrono::system_clock::now() +
                                                       (wait_until - now));
    if (result != grpc::CompletionQueue::GOT_EVENT) continue;
    std::unique_ptr<Call> call(static_cast<Call*>(tag));
    --in_flight;
    last_completion = Clock::now();
    if (call->status.ok()) {
      latencies.push_back(std::chrono::duration<double>(last_completion - call->start).count());
      for (const auto& translation : call->response.translations()) {
        ++done_sentences;
        auto ids = (*tokenizer)->encode(translation.translated_text());
        if (ids.ok()) target_tokens += static_cast<int64_t>(ids->size());
      }
    } else {
      ++failures[std::to_string(call->status.error_code())];
    }
    if (rate <= 0 && Clock::now() < end) {
      start_call();
      ++started;
      ++in_flight;
    }
  }
  const double seconds = std::chrono::duration<double>(last_completion - begin).count();
  const nlohmann::json report = {{"requests", latencies.size()},
                                 {"sentences", done_sentences},
                                 {"target_tokens", target_tokens},
                                 {"seconds", seconds},
                                 {"sentences_per_second", done_sentences / seconds},
                                 {"tokens_per_second", target_tokens / seconds},
                                 {"latency_p50_s", percentile(latencies, 0.50)},
                                 {"latency_p90_s", percentile(latencies, 0.90)},
                                 {"latency_p99_s", percentile(latencies, 0.99)},
                                 {"failures", failures}};
  std::cout << report.dump() << std::endl;
  return failures.empty() ? 0 : 1;
}
