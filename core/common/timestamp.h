// The local date and time as run folders name them: "20261201-094235".
#pragma once

#include <string>

namespace ampgan {

std::string local_timestamp();

}  // namespace ampgan
