// Independent work items on a few threads: the one loop the planner, replications and the
// ladder share. Each item writes its own result slot, so what they compute does not depend
// on the thread count.
#pragma once

#include <functional>

namespace fleetsim {

/// Runs item(0) … item(n − 1) on up to `threads` threads (the calling thread is one of
/// them; items are handed out in order). An exception in an item does not stop the others;
/// when all have run, the exception of the lowest-numbered failed item is rethrown.
void parallel_for(int n, int threads, const std::function<void(int)>& item);

}  // namespace fleetsim
