// What glibc's allocator holds (mallinfo2, summed over every arena) and giving its free pages back (malloc_trim):
// Swift's Glibc module does not import <malloc.h>.
#define _GNU_SOURCE
#include "CAllocCounter.h"
#include <malloc.h>

uint64_t parley_heap_in_use_bytes(void) {
    struct mallinfo2 m = mallinfo2();
    return (uint64_t)(m.uordblks + m.hblkhd);
}

uint64_t parley_heap_from_system_bytes(void) {
    struct mallinfo2 m = mallinfo2();
    return (uint64_t)(m.arena + m.hblkhd);
}

int parley_heap_trim(void) { return malloc_trim(0); }
