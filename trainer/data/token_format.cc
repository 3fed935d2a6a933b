#include "trainer/data/token_format.h"

#include <cstring>

namespace xlate::trainer {
namespace {

// Native byte order is little-endian on every host xlate builds for; the mapped payload
// (int32 ids, IndexRecord) is read in place, so a big-endian host cannot use these files.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the token corpus format is little-endian and read in place");

void put_u32(uint32_t value, unsigned char* out) { std::memcpy(out, &value, 4); }
void put_u64(uint64_t value, unsigned char* out) { std::memcpy(out, &value, 8); }
uint32_t get_u32(const unsigned char* in) {
  uint32_t value;
  std::memcpy(&value, in, 4);
  return value;
}
uint64_t get_u64(const unsigned char* in) {
  uint64_t value;
  std::memcpy(&value, in, 8);
  return value;
}

}  // namespace

void encode_header(const char (&magic)[8], const FileHeader& header, unsigned char* out) {
  std::memcpy(out, magic, 8);
  put_u32(header.version, out + 8);
  put_u32(header.vocab_size, out + 12);
  put_u64(header.token_count, out + 16);
  put_u64(header.pair_count, out + 24);
}

bool decode_header(const unsigned char* bytes, const char (&magic)[8], FileHeader* header) {
  if (std::memcmp(bytes, magic, 8) != 0) return false;
  header->version = get_u32(bytes + 8);
  header->vocab_size = get_u32(bytes + 12);
  header->token_count = get_u64(bytes + 16);
  header->pair_count = get_u64(bytes + 24);
  return true;
}

}  // namespace xlate::trainer
