// TextLineReader: plain and gzip input (told by content), line endings, UTF-8 and I/O errors.
#include "trainer/data/text_reader.h"

#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/trainer_data/test_support.h"

namespace xlate::trainer {
namespace {

using testing::multi30k_file;
using testing::read_bytes;
using testing::read_text_lines;
using testing::test_scratch_dir;
using testing::write_bytes;
using testing::write_gzip_lines;
using testing::write_text_lines;

TEST(TextLineReader, GzipReadsLikeItsDecompressedText) {
  const std::string directory = test_scratch_dir();
  const std::string plain = directory + "/val.de";
  // gzip(1) is the independent decompressor here.
  const std::string command = "gzip -dc '" + multi30k_file("val.de.gz") + "' > '" + plain + "'";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;

  absl::StatusOr<TextLineReader> gz = TextLineReader::Open(multi30k_file("val.de.gz"));
  ASSERT_TRUE(gz.ok()) << gz.status();
  EXPECT_TRUE(gz->compressed());
  absl::StatusOr<TextLineReader> text = TextLineReader::Open(plain);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_FALSE(text->compressed());

  const std::vector<std::string> from_gzip = read_text_lines(multi30k_file("val.de.gz"));
  EXPECT_EQ(from_gzip.size(), 1014u);  // the data README's count
  EXPECT_EQ(from_gzip, read_text_lines(plain));
}

TEST(TextLineReader, KnowsTheTestSetsFirstLine) {
  const std::vector<std::string> lines = read_text_lines(multi30k_file("test_2016_flickr.en.gz"));
  ASSERT_EQ(lines.size(), 1000u);
  EXPECT_EQ(lines[0], "A man in an orange hat starring at something.");
}

TEST(TextLineReader, TellsGzipByContentNotName) {
  const std::string directory = test_scratch_dir();
  const std::vector<std::string> lines = {"erste Zeile", "zweite Zeile – ü"};
  write_gzip_lines(directory + "/compressed.txt", lines);
  write_text_lines(directory + "/plain.gz", lines);
  absl::StatusOr<TextLineReader> compressed = TextLineReader::Open(directory + "/compressed.txt");
  ASSERT_TRUE(compressed.ok()) << compressed.status();
  EXPECT_TRUE(compressed->compressed());
  EXPECT_EQ(read_text_lines(directory + "/compressed.txt"), lines);
  EXPECT_EQ(read_text_lines(directory + "/plain.gz"), lines);
}

TEST(TextLineReader, StripsCrLfAndBomAndReadsALastLineWithoutNewline) {
  const std::string path = test_scratch_dir() + "/crlf.txt";
  write_bytes(path, "\xef\xbb\xbfone\r\ntwo\n\nfour");
  const std::vector<std::string> expected = {"one", "two", "", "four"};
  EXPECT_EQ(read_text_lines(path), expected);
}

TEST(TextLineReader, ReadsAnEmptyFile) {
  const std::string path = test_scratch_dir() + "/empty.txt";
  write_bytes(path, "");
  EXPECT_TRUE(read_text_lines(path).empty());
}

TEST(TextLineReader, InvalidUtf8NamesFileLineAndByte) {
  const std::string path = test_scratch_dir() + "/latin1.txt";
  write_bytes(path, "fine\nalso fine\nGr\xfc\xdf" "e\n");
  absl::StatusOr<TextLineReader> reader = TextLineReader::Open(path);
  ASSERT_TRUE(reader.ok());
  std::string line;
  ASSERT_TRUE(*reader->next(&line));
  ASSERT_TRUE(*reader->next(&line));
  const absl::StatusOr<bool> bad = reader->next(&line);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find(path + ":3: invalid UTF-8 at byte 2"), std::string::npos)
      << bad.status();
}

TEST(TextLineReader, TruncatedGzipIsAnError) {
  const std::string path = test_scratch_dir() + "/truncated.gz";
  const std::string bytes = read_bytes(multi30k_file("val.en.gz"));
  write_bytes(path, bytes.substr(0, bytes.size() / 2));
  absl::StatusOr<TextLineReader> reader = TextLineReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  std::string line;
  absl::StatusOr<bool> more = true;
  while (more.ok() && *more) more = reader->next(&line);
  ASSERT_FALSE(more.ok());
  EXPECT_EQ(more.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(more.status().message().find(path), std::string::npos) << more.status();
}

TEST(TextLineReader, MissingFileIsNotFound) {
  const absl::StatusOr<TextLineReader> reader = TextLineReader::Open("/nonexistent/x.en");
  ASSERT_FALSE(reader.ok());
  EXPECT_EQ(reader.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(reader.status().message().find("/nonexistent/x.en"), std::string::npos);
}

}  // namespace
}  // namespace xlate::trainer
