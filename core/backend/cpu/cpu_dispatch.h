// Calls f with the storage tag (ew::F32, ew::F16, ew::BF16) of a runtime dtype.
#pragma once

#include "core/backend/elementwise.h"

namespace ampgan {

template <typename F>
void dispatch_dtype(DType t, F&& f) {
  switch (t) {
    case DType::F32: f(ew::F32{}); return;
    case DType::F16: f(ew::F16{}); return;
    case DType::BF16: f(ew::BF16{}); return;
  }
}

}  // namespace ampgan
