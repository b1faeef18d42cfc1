// A rank other than 0 of a data-parallel run: it trains its slice of every batch in step with
// rank 0 (which runs the Session) and writes nothing. See core/dist/data_parallel.h.
#pragma once

#include "core/dist/communicator.h"

namespace ampgan {
struct RunConfig;
}

namespace ampgan::dist {

// Takes the run from rank 0 (configuration, position, state), checks this rank's settings
// against it (own: this rank's own configuration, from its command line; nullptr for resume,
// which takes rank 0's), then steps until rank 0 ends the run. Returns the steps it took.
int64_t run_replica(Communicator& comm, const RunConfig* own);

}  // namespace ampgan::dist
