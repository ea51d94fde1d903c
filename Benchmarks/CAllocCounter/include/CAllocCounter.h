#ifndef CALLOCCOUNTER_H
#define CALLOCCOUNTER_H
#include <stdint.h>
/// Number of malloc-family calls counted since counting was enabled (benchmarks only: this target
/// interposes malloc, so only benchmark executables link it).
uint64_t parley_allocation_count(void);
/// Turns counting on (1) or off (0).
void parley_allocation_counting_enable(int on);
#endif
