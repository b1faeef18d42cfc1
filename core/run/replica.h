// A rank other than 0 of a data-parallel run: it trains its slice of every batch in step with
// rank 0 (which runs the Session) and writes nothing. See core/dist/data_parallel.h.
#pragma once

#include <atomic>

#include "core/dist/communicator.h"

namespace ampgan {
struct RunConfig;
}

namespace ampgan::dist {

// Takes the run from rank 0 (configuration, position, state), checks this rank's settings
// against it (own: this rank's own configuration, from its command line; nullptr for resume,
// which takes rank 0's), then steps until rank 0 ends the run. A set *stop (this rank's signal
// handler) stops every rank at the next step boundary: rank 0 writes its checkpoint while this
// rank waits. Returns the steps it took; *interrupted (if given): whether the run ended
// interrupted.
int64_t run_replica(Communicator& comm, const RunConfig* own, const std::atomic<bool>* stop = nullptr,
                    bool* interrupted = nullptr);

}  // namespace ampgan::dist
