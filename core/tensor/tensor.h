// Tensor: a shape, an element type and a shared handle to device memory owned by a backend.
//
// Layout: images and activations are NHWC (batch, height, width, channels), convolution weights
// are KRSC (out channels, kernel rows, kernel cols, in channels). We chose NHWC deliberately:
// tensor cores run half-precision convolutions natively in NHWC (cuDNN transposes NCHW half
// tensors otherwise), batch norm then reduces over the innermost, contiguous axis, and on the
// CPU an NHWC im2col row is one contiguous run of channels per kernel tap. PyTorch's layouts
// (NCHW, OIHW) appear only at the export boundary.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>

#include "core/tensor/dtype.h"

namespace ampgan {

enum class DeviceKind : uint8_t { CPU, CUDA };

// What a buffer is for: benchmarks report peak memory by category.
enum class MemCategory : uint8_t {
  Master,      // FP32 master weights (and batch-norm running statistics)
  HalfCopy,    // half-precision working copies of the weights
  Gradient,    // weight gradients
  Optimizer,   // Adam moments
  Activation,  // layer outputs and their gradients, kept for the backward pass
  Workspace,   // im2col buffers, cuDNN workspace, reductions
  Data,        // batches, latents, per-step scalars
  Count
};
const char* mem_category_name(MemCategory c);

struct Shape {
  static constexpr int kMaxRank = 4;
  int rank = 0;
  std::array<int64_t, kMaxRank> d{};

  Shape() = default;
  Shape(std::initializer_list<int64_t> dims);
  int64_t operator[](int i) const { return d[i]; }
  int64_t numel() const;
  int64_t last() const { return rank ? d[rank - 1] : 1; }
  bool operator==(const Shape& o) const;
  bool operator!=(const Shape& o) const { return !(*this == o); }
  std::string str() const;  // "(64, 32, 32, 3)"
};

class Allocator;

// A block of memory. It returns itself to its allocator when the last Tensor lets go.
struct Storage {
  void* ptr = nullptr;
  size_t bytes = 0;
  MemCategory category = MemCategory::Data;
  Allocator* owner = nullptr;
  ~Storage();
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual void release(Storage& s) = 0;
};

class Tensor {
 public:
  Tensor() = default;
  Tensor(std::shared_ptr<Storage> storage, Shape shape, DType dtype, DeviceKind device);

  bool defined() const { return static_cast<bool>(storage_); }
  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  DeviceKind device() const { return device_; }
  int64_t numel() const { return shape_.numel(); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }
  size_t capacity_bytes() const { return storage_ ? storage_->bytes : 0; }
  MemCategory category() const { return storage_ ? storage_->category : MemCategory::Data; }

  void* data() const { return storage_ ? storage_->ptr : nullptr; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data());
  }

  // The same memory seen with another shape of no more elements than the storage holds.
  Tensor view(Shape shape) const;
  bool same_storage(const Tensor& o) const { return storage_ == o.storage_; }

 private:
  std::shared_ptr<Storage> storage_;
  Shape shape_;
  DType dtype_ = DType::F32;
  DeviceKind device_ = DeviceKind::CPU;
};

}  // namespace ampgan
