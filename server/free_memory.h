// Gives the heap's free pages back to the system after a burst that freed much (a model
// retired by a reload, thousands of connections closed), so that the resident size returns to
// the working set instead of staying at the burst's peak.
#pragma once

namespace xlate {

// jemalloc (the server's allocator, server/CMakeLists.txt) purges every arena's dirty pages now
// instead of over its decay time; glibc's malloc (a sanitizer build) trims its heaps.
void release_free_memory();

}  // namespace xlate
