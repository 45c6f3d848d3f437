// Counts calls of the global operator new made by this test binary between Start and Stop (the
// replacement lives in alloc_count.cpp, its own translation unit).
#ifndef GPUWARDEN_TESTS_TOP_ALLOC_COUNT_H_
#define GPUWARDEN_TESTS_TOP_ALLOC_COUNT_H_

namespace gw::top {

void StartCountingAllocations();
long StopCountingAllocations();  // the allocations since Start

}  // namespace gw::top

#endif  // GPUWARDEN_TESTS_TOP_ALLOC_COUNT_H_
