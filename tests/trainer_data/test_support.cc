#include "tests/trainer_data/test_support.h"

#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include <gtest/gtest.h>

#include "trainer/data/prepare.h"
#include "trainer/data/text_reader.h"

namespace xlate::trainer::testing {
namespace {

namespace fs = std::filesystem;

std::string env_or(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value ? value : fallback;
}

std::string data_dir() { return env_or("XLATE_TRAINER_DATA_MULTI30K", XLATE_TRAINER_DATA_MULTI30K); }
std::string scratch_root() {
  return env_or("XLATE_TRAINER_DATA_SCRATCH", XLATE_TRAINER_DATA_SCRATCH);
}

std::vector<std::string> first_lines(const std::string& path, size_t count) {
  std::vector<std::string> lines = read_text_lines(path);
  if (lines.size() > count) lines.resize(count);
  return lines;
}

// The cache key: the test binary's modification time, so a rebuild prepares afresh.
std::string binary_stamp() {
  const auto stamp = fs::last_write_time("/proc/self/exe").time_since_epoch().count();
  return std::to_string(static_cast<uint64_t>(stamp));
}

void prepare_shared_corpus(const std::string& directory) {
  const std::string work = directory + ".tmp." + std::to_string(::getpid());
  fs::remove_all(work);
  fs::create_directories(work);
  write_text_lines(work + "/train.en", shared_source_lines());
  write_text_lines(work + "/train.de", shared_target_lines());
  write_text_lines(work + "/val.en", first_lines(multi30k_file("val.en.gz"), kSharedValidPairs));
  write_text_lines(work + "/val.de", first_lines(multi30k_file("val.de.gz"), kSharedValidPairs));
  PrepareOptions options;
  options.train_source = work + "/train.en", options.train_target = work + "/train.de";
  options.valid_source = work + "/val.en", options.valid_target = work + "/val.de";
  options.output_directory = work;
  options.vocab_size = kSharedVocabSize;
  options.model_type = "bpe";
  options.max_length = 64;
  const absl::StatusOr<PrepareReport> report = prepare_corpus(options);
  if (!report.ok()) throw std::runtime_error("preparing the shared corpus: " + report.status().ToString());
  // Several test processes may race here; the first rename wins and the others use its result.
  std::error_code error;
  fs::rename(work, directory, error);
  if (error) {
    fs::remove_all(work);
    return;
  }
  // Corpora cached by earlier builds of the test binary are stale now (this build's, and
  // other processes' work directories for it, share the prefix `current`).
  const std::string current = fs::path(directory).filename().string();
  for (const fs::directory_entry& entry : fs::directory_iterator(scratch_root())) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("shared-", 0) == 0 && name.rfind(current, 0) != 0) {
      fs::remove_all(entry.path(), error);
    }
  }
}

}  // namespace

std::string multi30k_file(const std::string& name) { return data_dir() + "/" + name; }

std::string test_scratch_dir() {
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string directory = scratch_root() + "/tests/" + test->test_suite_name() + "." +
                                test->name();
  fs::remove_all(directory);
  fs::create_directories(directory);
  return directory;
}

std::vector<std::string> read_text_lines(const std::string& path) {
  absl::StatusOr<TextLineReader> reader = TextLineReader::Open(path);
  if (!reader.ok()) throw std::runtime_error(reader.status().ToString());
  std::vector<std::string> lines;
  std::string line;
  while (true) {
    absl::StatusOr<bool> more = reader->next(&line);
    if (!more.ok()) throw std::runtime_error(more.status().ToString());
    if (!*more) return lines;
    lines.push_back(line);
  }
}

void write_text_lines(const std::string& path, const std::vector<std::string>& lines) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  for (const std::string& line : lines) file << line << '\n';
  if (!file) throw std::runtime_error("cannot write " + path);
}

void write_gzip_lines(const std::string& path, const std::vector<std::string>& lines) {
  gzFile file = gzopen(path.c_str(), "wb");
  if (file == nullptr) throw std::runtime_error("cannot write " + path);
  for (const std::string& line : lines) {
    gzwrite(file, line.data(), static_cast<unsigned>(line.size()));
    gzputc(file, '\n');
  }
  if (gzclose(file) != Z_OK) throw std::runtime_error("cannot finish " + path);
}

std::string read_bytes(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw std::runtime_error("cannot read " + path);
  return std::string(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file << bytes;
  if (!file) throw std::runtime_error("cannot write " + path);
}

const std::vector<std::string>& shared_source_lines() {
  static const std::vector<std::string> lines =
      first_lines(multi30k_file("train.en.gz"), kSharedPairs);
  return lines;
}

const std::vector<std::string>& shared_target_lines() {
  static const std::vector<std::string> lines =
      first_lines(multi30k_file("train.de.gz"), kSharedPairs);
  return lines;
}

const std::string& shared_corpus_dir() {
  static const std::string directory = [] {
    const std::string path = scratch_root() + "/shared-" + binary_stamp();
    if (!fs::exists(path + "/corpus.json")) {
      fs::create_directories(scratch_root());
      prepare_shared_corpus(path);
    }
    return path;
  }();
  return directory;
}

}  // namespace xlate::trainer::testing
