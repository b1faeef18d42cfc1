#include "core/dist/data_parallel.h"

#include <algorithm>
#include <cstring>

#include "core/backend/cuda_plugin.h"
#include "core/data/image_set.h"

namespace ampgan::dist {

namespace {

// Floats per flat gradient buffer (16 MiB): few collectives for a small model, bounded extra
// memory for a large one.
constexpr int64_t kBucketFloats = int64_t{1} << 22;

// A tensor over elements [offset, offset + count) of an FP32 buffer; base must outlive it.
Tensor part_of(const Tensor& base, int64_t offset, int64_t count) {
  auto s = std::make_shared<Storage>();
  s->ptr = static_cast<char*>(base.data()) + offset * 4;
  s->bytes = static_cast<size_t>(count) * 4;
  s->category = base.category();
  return Tensor(s, Shape{count}, DType::F32, base.device());  // owner null: frees nothing
}

uint64_t fnv1a(const uint8_t* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

std::string join_names(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

}  // namespace

nlohmann::json rank_facts(const nlohmann::json* own_config, const data::ImageSet& data, const Backend& backend) {
  nlohmann::json f;
  f["version"] = AMPGAN_VERSION;
  f["backend"] = backend.kind() == DeviceKind::CUDA ? "cuda" : "cpu";
  f["dataset_images"] = data.count;
  f["dataset_channels"] = data.channels;
  // Hex: JSON numbers above 2^53 would not survive every parser.
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx",
                static_cast<unsigned long long>(fnv1a(data.pixels.data(), data.pixels.size())));
  f["dataset_hash"] = hex;
  if (own_config) {
    nlohmann::json c = *own_config;
    c.erase("name");        // defaulted per process; names no training setting
    c.erase("world_size");  // rank 0's records the world
    f["config"] = c;
  }
  return f;
}

DataParallel::DataParallel(Communicator& comm, Backend& backend, const TrainerConfig& global)
    : comm_(comm), backend_(backend), global_(global), local_(global) {
  const int n = comm_.size(), b = global.batch;
  // Plain errors, not CollectiveError: rank 0 meets them before the first collective, while the
  // other ranks wait in it for rank 0's header, so rank 0's failure has to end them (an abort).
  if (n > b)
    throw Error(std::to_string(n) + " ranks for a global batch of " + std::to_string(b) +
                    ": each rank needs at least 2 images of every batch",
                "mpirun -np " + std::to_string(n),
                "start at most " + std::to_string(b / 2) + " ranks, or raise --batch (it is the global batch)");
  if (b % n != 0 || b / n < 2)
    throw Error("the global batch " + std::to_string(b) + " does not split into " + std::to_string(n) +
                    " equal slices of at least 2 images (batch norm needs two)",
                "--batch",
                "use a batch that is a multiple of " + std::to_string(n) + " and at least " + std::to_string(2 * n));
  local_.batch = b / n;
  if (comm_.rank() > 0) local_.seed = global.seed ^ (0x9E3779B97F4A7C15ull * static_cast<uint64_t>(comm_.rank()));
  want_device_comm_ = backend_.kind() == DeviceKind::CUDA;
}

DataParallel::~DataParallel() {
  if (trainer_) trainer_->set_step_sync(nullptr);
}

void DataParallel::attach(Trainer& trainer) {
  trainer_ = &trainer;
  trainer.set_step_sync(this);
}

nlohmann::json DataParallel::exchange_header(Communicator& comm, const nlohmann::json* header) {
  // The first collective waits while rank 0 loads the dataset (and a checkpoint): longer.
  const double t = comm.timeout();
  comm.set_timeout(10 * t);
  std::string text = header ? header->dump() : std::string();
  uint64_t len = text.size();
  comm.broadcast_host(&len, sizeof len, 0);
  text.resize(len);
  comm.broadcast_host(text.data(), len, 0);
  comm.set_timeout(t);
  return nlohmann::json::parse(text);
}

void DataParallel::join(const nlohmann::json& header, const nlohmann::json& mine) {
  AMPGAN_CHECK(trainer_, "DataParallel::join before attach");
  // Which facts differ from rank 0's, as flags every rank can index: the fixed facts, then rank
  // 0's configuration keys in order; then one flag per rank.
  std::vector<std::string> keys = {"version", "backend", "dataset_images", "dataset_channels", "dataset_hash"};
  const size_t fixed = keys.size();
  const nlohmann::json cfg0 = header.value("config", nlohmann::json::object());
  for (auto it = cfg0.begin(); it != cfg0.end(); ++it) keys.push_back(it.key());
  const int n = comm_.size();
  std::vector<float> flags(keys.size() + static_cast<size_t>(n), 0.0f);
  std::vector<std::string> here;
  for (size_t i = 0; i < keys.size(); ++i) {
    const nlohmann::json& src = i < fixed ? header : cfg0;
    const nlohmann::json a = src.contains(keys[i]) ? src[keys[i]] : nlohmann::json();
    const nlohmann::json* b = nullptr;
    if (i < fixed) {
      if (!mine.contains(keys[i]) && a.is_null()) continue;  // neither side says
      b = mine.contains(keys[i]) ? &mine[keys[i]] : nullptr;
    } else if (mine.contains("config"))
      b = mine["config"].contains(keys[i]) ? &mine["config"][keys[i]] : nullptr;
    else
      continue;  // a rank without its own command line (resume) takes rank 0's
    if (!b || *b != a) {
      flags[i] = 1.0f;
      here.push_back(keys[i] + " " + (b ? b->dump() : "(none)") + " (rank 0: " + a.dump() + ")");
    }
  }
  if (!here.empty()) flags[keys.size() + static_cast<size_t>(comm_.rank())] = 1.0f;
  comm_.all_reduce_host(flags.data(), static_cast<int>(flags.size()), ReduceOp::Max);
  std::vector<std::string> differ, ranks;
  for (size_t i = 0; i < keys.size(); ++i)
    if (flags[i] != 0.0f) differ.push_back(keys[i]);
  for (int r = 0; r < n; ++r)
    if (flags[keys.size() + static_cast<size_t>(r)] != 0.0f) ranks.push_back(std::to_string(r));
  if (!differ.empty())
    throw CollectiveError(
        "the ranks were started with different settings: rank 0 and rank " + join_names(ranks) + " differ in " +
            join_names(differ) +
            (here.empty() ? std::string() : "; on rank " + std::to_string(comm_.rank()) + ": " + join_names(here)),
        "mpirun",
        "start every rank with the same command line, program version and dataset (on several "
        "machines: the same files at the same path)");

  if (want_device_comm_) {
    // Collective: every rank learns whether all of them have NCCL, and falls back together.
    std::string why;
    if (const CudaPluginApi* api = cuda_plugin(&why)) device_comm_.reset(api->make_nccl(backend_, comm_, &why));
    nccl_why_ = why;  // without it the reductions go through host memory (slower; describe() says so)
  }
  for (const StateEntry& e : trainer_->state()) broadcast(*e.tensor);
  backend_.synchronize();
  trainer_->state_loaded();
}

DataParallel::Vote DataParallel::next_step(bool go, bool interrupted) {
  if (ended_) return Vote::End;  // rank 0's finish() may come twice
  // [rank 0 ends (1: finished, 2: interrupted), some rank was asked to stop]: the MAX over the
  // ranks, so a signal to any rank stops every rank at the same step.
  float v[2] = {comm_.rank() == 0 && !go ? (interrupted ? 2.0f : 1.0f) : 0.0f, stop_ && stop_->load() ? 1.0f : 0.0f};
  comm_.all_reduce_host(v, 2, ReduceOp::Max);
  if (v[0] != 0.0f) {
    ended_ = true;
    interrupted_ = v[0] == 2.0f;
    return Vote::End;
  }
  return v[1] != 0.0f ? Vote::Stop : Vote::Step;
}

const float* DataParallel::slice(const float* global_batch) const {
  const DcganSpec& m = local_.model;
  return global_batch + static_cast<size_t>(comm_.rank()) * local_.batch * m.res * m.res * m.channels;
}

std::string DataParallel::describe() const {
  std::string s = std::to_string(comm_.size()) + " ranks (" + comm_.name() +
                  (device_comm_ ? ", " + device_comm_->name() : std::string()) + "): global batch " +
                  std::to_string(global_.batch) + " = " + std::to_string(comm_.size()) + " x " +
                  std::to_string(local_.batch) + " per rank; batch-norm statistics per rank";
  if (want_device_comm_ && !device_comm_) s += "; gradients go through host memory (" + nccl_why_ + ")";
  return s;
}

std::vector<DataParallel::Bucket>& DataParallel::buckets_for(const std::vector<Tensor>& grads) {
  auto it = buckets_.find(grads.empty() ? nullptr : grads[0].data());
  if (it != buckets_.end()) return it->second;
  std::vector<Bucket> bs;
  for (const Tensor& g : grads) {
    if (bs.empty() || (bs.back().used > 0 && bs.back().used + g.numel() > kBucketFloats)) bs.emplace_back();
    bs.back().grads.push_back(g);
    bs.back().used += g.numel();
  }
  for (Bucket& b : bs) {
    b.flat = backend_.empty(Shape{b.used}, DType::F32, MemCategory::Workspace);
    int64_t off = 0;
    for (const Tensor& g : b.grads) {
      b.parts.push_back(part_of(b.flat, off, g.numel()));
      off += g.numel();
    }
  }
  return buckets_.emplace(grads.empty() ? nullptr : grads[0].data(), std::move(bs)).first->second;
}

void DataParallel::before_check(const std::vector<Tensor>& grads) {
  const float mean = 1.0f / static_cast<float>(comm_.size());
  for (Bucket& b : buckets_for(grads)) {
    for (size_t i = 0; i < b.grads.size(); ++i) backend_.cast(b.grads[i], b.parts[i]);  // widened exactly
    reduce(b.flat, 0, b.used, ReduceOp::Sum, mean);
    for (size_t i = 0; i < b.grads.size(); ++i) backend_.cast(b.parts[i], b.grads[i]);
  }
}

void DataParallel::after_check(Tensor& scalars, int found_inf_slot, int mean_first, int mean_end) {
  reduce(scalars, found_inf_slot, 1, ReduceOp::Max, 1.0f);
  if (mean_end > mean_first)
    reduce(scalars, mean_first, mean_end - mean_first, ReduceOp::Sum, 1.0f / static_cast<float>(comm_.size()));
}

void DataParallel::reduce(Tensor& t, int64_t offset, int64_t count, ReduceOp op, float scale) {
  if (device_comm_ && t.device() == device_comm_->device())
    return device_comm_->all_reduce(t, offset, count, op, scale);
  if (t.device() == DeviceKind::CPU) return comm_.all_reduce(t, offset, count, op, scale);
  // A device tensor without a device communicator: through host memory.
  staging_.resize(static_cast<size_t>(t.numel()));
  backend_.download(t, staging_.data(), t.nbytes());
  float* p = staging_.data() + offset;
  comm_.all_reduce_host(p, static_cast<int>(count), op);
  if (scale != 1.0f)
    for (int64_t i = 0; i < count; ++i) p[i] *= scale;
  backend_.upload(t, staging_.data(), t.nbytes());
}

void DataParallel::broadcast(Tensor& t) {
  if (device_comm_ && t.device() == device_comm_->device()) return device_comm_->broadcast(t, 0);
  if (t.device() == DeviceKind::CPU) return comm_.broadcast(t, 0);
  std::vector<uint8_t> host(t.nbytes());
  backend_.download(t, host.data(), host.size());
  comm_.broadcast_host(host.data(), host.size(), 0);
  backend_.upload(t, host.data(), host.size());
}

}  // namespace ampgan::dist
