#ifndef CALLOCCOUNTER_H
#define CALLOCCOUNTER_H
#include <stdint.h>
/// Number of malloc-family calls counted since counting was enabled (benchmarks only: this target
/// interposes malloc, so only benchmark executables link it).
uint64_t parley_allocation_count(void);
/// Turns counting on (1) or off (0).
void parley_allocation_counting_enable(int on);
/// Bytes allocated and not freed (mallinfo2 uordblks + hblkhd, every arena).
uint64_t parley_heap_in_use_bytes(void);
/// Bytes the allocator took from the system and still holds, free or not (mallinfo2 arena + hblkhd).
uint64_t parley_heap_from_system_bytes(void);
/// Returns free heap pages to the system (malloc_trim(0)); 1 when some were released.
int parley_heap_trim(void);
#endif
