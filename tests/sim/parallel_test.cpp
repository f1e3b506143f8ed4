// Tests for sim/core/parallel: every item runs once whatever the thread count, and a failed
// item's exception comes back after the others ran.
#include "sim/core/parallel.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

namespace fleetsim {
namespace {

TEST(ParallelFor, EveryItemOnceInItsOwnSlotWhateverTheThreads) {
  for (int threads : {1, 2, 7, 100}) {
    std::vector<int> ran(50, 0);
    parallel_for(50, threads, [&](int i) { ran[static_cast<size_t>(i)] += i + 1; });
    for (int i = 0; i < 50; ++i) EXPECT_EQ(ran[static_cast<size_t>(i)], i + 1) << threads;
  }
  parallel_for(0, 4, [](int) { FAIL() << "no item to run"; });
}

TEST(ParallelFor, TheLowestFailedItemsErrorAfterAllRan) {
  std::vector<int> ran(10, 0);
  try {
    parallel_for(10, 3, [&](int i) {
      ran[static_cast<size_t>(i)] = 1;
      if (i == 7 || i == 4) throw std::runtime_error("item " + std::to_string(i));
    });
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "item 4");  // 4 < 7: the lower index, whichever thread ran first
  }
  for (int r : ran) EXPECT_EQ(r, 1);  // the other items still ran
}

}  // namespace
}  // namespace fleetsim
