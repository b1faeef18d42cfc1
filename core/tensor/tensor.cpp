#include "core/tensor/tensor.h"

#include "core/common/error.h"

namespace ampgan {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32:
      return "f32";
    case DType::F16:
      return "f16";
    case DType::BF16:
      return "bf16";
  }
  return "?";
}

const char* mem_category_name(MemCategory c) {
  switch (c) {
    case MemCategory::Master:
      return "master_fp32";
    case MemCategory::HalfCopy:
      return "half_copies";
    case MemCategory::Gradient:
      return "gradients";
    case MemCategory::Optimizer:
      return "adam_moments";
    case MemCategory::Activation:
      return "activations";
    case MemCategory::Workspace:
      return "workspace";
    case MemCategory::Data:
      return "data";
    case MemCategory::Count:
      break;
  }
  return "?";
}

Shape::Shape(std::initializer_list<int64_t> dims) {
  AMPGAN_CHECK(dims.size() <= kMaxRank, "shape rank above 4");
  for (int64_t v : dims) d[rank++] = v;
}

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int i = 0; i < rank; ++i) n *= d[i];
  return n;
}

bool Shape::operator==(const Shape& o) const {
  if (rank != o.rank) return false;
  for (int i = 0; i < rank; ++i)
    if (d[i] != o.d[i]) return false;
  return true;
}

std::string Shape::str() const {
  std::string s = "(";
  for (int i = 0; i < rank; ++i) {
    if (i) s += ", ";
    s += std::to_string(d[i]);
  }
  return s + ")";
}

Storage::~Storage() {
  if (owner && ptr) owner->release(*this);
}

Tensor::Tensor(std::shared_ptr<Storage> storage, Shape shape, DType dtype, DeviceKind device)
    : storage_(std::move(storage)), shape_(shape), dtype_(dtype), device_(device) {
  AMPGAN_CHECK(!storage_ || nbytes() <= storage_->bytes, "tensor larger than its storage");
}

Tensor Tensor::view(Shape shape) const {
  AMPGAN_CHECK(static_cast<size_t>(shape.numel()) * dtype_size(dtype_) <= capacity_bytes(),
               "view " + shape.str() + " larger than storage");
  return Tensor(storage_, shape, dtype_, device_);
}

}  // namespace ampgan
