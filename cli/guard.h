// Runs a command body, turning exceptions into a printed message and an exit status: the CLI
// never ends in a crash or a signal on bad input.
#pragma once

#include <cstdio>
#include <exception>
#include <new>

#include "cli/args.h"
#include "core/common/error.h"

namespace ampgan::cli {

template <typename F>
int guarded(const char* command, F&& body) {
  try {
    return body();
  } catch (const UsageError& e) {
    std::fprintf(stderr, "ampgan %s: %s\n", command, e.what());
    return 2;
  } catch (const Cancelled& e) {
    std::fprintf(stderr, "ampgan %s: interrupted: %s\n", command, e.what());
    return 130;
  } catch (const OutOfMemoryError& e) {
    std::fprintf(stderr, "ampgan %s: out of memory: %s\n", command, e.what());
  } catch (const Error& e) {
    std::fprintf(stderr, "ampgan %s: %s\n", command, e.what());
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "ampgan %s: out of host memory. Try a smaller batch, width or resolution.\n", command);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ampgan %s: unexpected error: %s. Please report it with the command you ran.\n", command,
                 e.what());
  }
  return 1;
}

}  // namespace ampgan::cli
