#include "server/free_memory.h"

#include <malloc.h>

#include <cstddef>

// jemalloc's control entry, defined when jemalloc is linked (weak: null otherwise).
extern "C" int mallctl(const char* name, void* old_value, size_t* old_length, void* new_value,
                       size_t new_length) __attribute__((weak));

namespace xlate {

void release_free_memory() {
  if (mallctl != nullptr) {
    // "arena.<MALLCTL_ARENAS_ALL>.purge": 4096 names every arena.
    mallctl("arena.4096.purge", nullptr, nullptr, nullptr, 0);
    return;
  }
  malloc_trim(0);
}

}  // namespace xlate
