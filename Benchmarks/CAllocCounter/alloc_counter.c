// Counts malloc-family calls by interposing glibc's allocator (the approach of swift-nio's allocation
// counter). Counting is off until a benchmark enables it, and costs one relaxed atomic add per call.
#define _GNU_SOURCE
#include "CAllocCounter.h"
#include <stdatomic.h>
#include <stdlib.h>
#include <malloc.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static atomic_uint_fast64_t parley_allocs;
static atomic_int parley_counting;

uint64_t parley_allocation_count(void) { return atomic_load_explicit(&parley_allocs, memory_order_relaxed); }
void parley_allocation_counting_enable(int on) { atomic_store(&parley_counting, on); }

static inline void count(void) {
    if (atomic_load_explicit(&parley_counting, memory_order_relaxed))
        atomic_fetch_add_explicit(&parley_allocs, 1, memory_order_relaxed);
}

void *malloc(size_t n) { count(); return __libc_malloc(n); }
void *calloc(size_t a, size_t b) { count(); return __libc_calloc(a, b); }
void *realloc(void *p, size_t n) { count(); return __libc_realloc(p, n); }
void *memalign(size_t a, size_t n) { count(); return __libc_memalign(a, n); }
void *aligned_alloc(size_t a, size_t n) { count(); return __libc_memalign(a, n); }
int posix_memalign(void **out, size_t a, size_t n) {
    count();
    void *p = __libc_memalign(a, n);
    if (!p) return 12; /* ENOMEM */
    *out = p;
    return 0;
}
