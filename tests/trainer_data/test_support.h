// Shared helpers of the trainer data tests: data locations, scratch directories, text files,
// and one prepared Multi30k corpus that every test reuses.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace xlate::trainer::testing {

// <data>/multi30k/<name> (e.g. "train.en.gz").
std::string multi30k_file(const std::string& name);
// A fresh, empty scratch directory for the running test.
std::string test_scratch_dir();

std::vector<std::string> read_text_lines(const std::string& path);  // plain or gzip
void write_text_lines(const std::string& path, const std::vector<std::string>& lines);
void write_gzip_lines(const std::string& path, const std::vector<std::string>& lines);
std::string read_bytes(const std::string& path);
void write_bytes(const std::string& path, const std::string& bytes);

// The corpus every test shares: the first kSharedPairs pairs of Multi30k train (en→de) and
// the first kSharedValidPairs of val, a kSharedVocabSize BPE vocabulary. Prepared once per
// build of the test binary and cached on disk, so the ctest processes reuse it.
inline constexpr int kSharedPairs = 3000;
inline constexpr int kSharedValidPairs = 300;
inline constexpr int kSharedVocabSize = 1000;
const std::string& shared_corpus_dir();
// The plain-text training lines the shared corpus was made from.
const std::vector<std::string>& shared_source_lines();
const std::vector<std::string>& shared_target_lines();

}  // namespace xlate::trainer::testing
