// Data-parallel training's collectives: one process per device (a "rank"), started by mpirun.
// A Communicator reduces and broadcasts tensors among the ranks. Two implementations:
//   MPI  (core/dist/mpi/, the plugin libampgan-mpi.so): host memory, so CPU tensors; also the
//        bootstrap for everything else (settings check, NCCL's unique id).
//   NCCL (gpu/cuda_nccl.cpp, inside the CUDA plugin): CUDA tensors, on the backend's stream.
// A program not started by mpirun never loads MPI: world() looks at the launcher's environment
// first (core/dist/world.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/common/error.h"
#include "core/tensor/tensor.h"

namespace ampgan::dist {

enum class ReduceOp : uint8_t { Sum, Max };

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual int local_rank() const = 0;  // among the ranks on this machine (which GPU to use)
  virtual std::string name() const = 0;
  // The device whose tensors the tensor calls take (CPU: host memory).
  virtual DeviceKind device() const = 0;

  // In place on FP32 elements [offset, offset + count) of t, every rank the same range; the
  // result is then multiplied by scale (1 / size() for a mean: one sum, one rounding).
  virtual void all_reduce(Tensor& t, int64_t offset, int64_t count, ReduceOp op, float scale = 1.0f) = 0;
  virtual void broadcast(Tensor& t, int root) = 0;  // all of t's bytes, from root's copy
  // Host memory, for the settings exchange (every implementation can; NCCL's goes via MPI).
  virtual void all_reduce_host(float* v, int count, ReduceOp op) = 0;
  virtual void broadcast_host(void* data, size_t bytes, int root) = 0;
  virtual void barrier() = 0;

  // Seconds a collective may wait for the other ranks before this rank gives up: it prints which
  // collective stalled and exits (status 3), so a rank that died or hangs stops the others.
  virtual void set_timeout(double seconds) = 0;
  virtual double timeout() const = 0;
  // Seconds the collective in progress on this rank has waited so far (0 when none): from
  // another thread, to tell a rank that is blocked by a rank that ended from one that is busy.
  virtual double seconds_in_collective() const { return 0; }
  // Ends every rank at once (after an error that only this rank saw); does not return.
  [[noreturn]] virtual void abort(int code) = 0;
};

// An error every rank raises at the same point (mismatched settings, too many ranks): the ranks
// can then stop normally, each printing it, instead of one aborting the others.
class CollectiveError : public Error {
 public:
  using Error::Error;
};

// Whether this process was started by a launcher (mpirun, srun) with more than one rank... or
// with one: OMPI_COMM_WORLD_SIZE, PMI_SIZE or PMIX_RANK in the environment.
bool launched_by_mpirun();

// The world communicator (MPI), loaded on first use; nullptr when not started by mpirun.
// Throws Error when started by mpirun but this build has no MPI support, or it fails to start.
// timeout_s: Communicator::set_timeout.
std::unique_ptr<Communicator> world(double timeout_s);

// The default collective timeout (seconds), and the plugin interface (core/dist/mpi/).
constexpr double kDefaultTimeoutS = 120.0;
constexpr int kMpiPluginAbi = 1;
struct MpiPluginApi {
  int abi_version;
  // Starts MPI (MPI_Init) and returns the world communicator; *err on failure.
  Communicator* (*create_world)(double timeout_s, std::string* err);
};

}  // namespace ampgan::dist
