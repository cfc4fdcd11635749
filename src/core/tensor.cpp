#include "refold/tensor.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <numeric>
#include <optional>
#include <string>
#include <type_traits>

#include "core/block_cache.h"
#include "core/check.h"
#include "core/checked_math.h"
#include "core/cpu_features.h"
#include "core/element_access.h"
#include "core/parallel_copy.h"
#include "core/tensor_impl.h"
#include "core/transpose8x8.h"
#include "refold/threads.h"

namespace refold {

// ---------------------------------------------------------------------------------------------
// Storage

Storage::Storage(std::size_t nbytes) : nbytes_(nbytes) {
  // At least one aligned block, so that a 0-element tensor still has a valid, distinct pointer
  // (core/block_cache.h rounds and reuses large blocks).
  const std::size_t rounded = detail::block_size(nbytes, kAlignment);
  REFOLD_CHECK(rounded >= nbytes, "cannot allocate {} bytes: size overflow", nbytes);
  // Counted (and checked against the memory limit) before the memory is taken.
  detail::count_allocation(nbytes_);
  auto* bytes = static_cast<std::byte*>(detail::take_block(nbytes, kAlignment));
  if (bytes == nullptr) {
    detail::count_free(nbytes_);
    fail("cannot allocate {} bytes", nbytes);
  }
  data_.store(bytes, std::memory_order_relaxed);
}

Storage::Storage(std::byte* borrowed, std::size_t nbytes, std::function<void()> release)
    : data_(borrowed), nbytes_(nbytes), release_(std::move(release)), borrowed_(true) {}

Storage::~Storage() {
  if (borrowed_) {
    if (release_) release_();
    return;
  }
  std::byte* bytes = data_.load(std::memory_order_acquire);
  if (bytes == nullptr) {  // held packed: the bytes were freed then
    detail::count_unheld(nbytes_);
    return;
  }
  detail::give_block(bytes, nbytes_, kAlignment);
  detail::count_free(nbytes_);
}

void Storage::offer_packed(std::weak_ptr<const PackedCopy> copy, std::uint64_t version) {
  const std::lock_guard<std::mutex> lock(packing_);
  if (borrowed_ || rebuilt_ || held_ != nullptr) return;
  offered_ = std::move(copy);
  offered_version_ = version;
}

bool Storage::holdable() const {
  return !borrowed_ && !rebuilt_ && held_ == nullptr && offered_version_ == version() &&
         !offered_.expired();
}

bool Storage::can_hold() const {
  const std::lock_guard<std::mutex> lock(packing_);
  return holdable();
}

std::size_t Storage::hold_packed() {
  const std::lock_guard<std::mutex> lock(packing_);
  if (!holdable()) return 0;
  held_ = offered_.lock();
  if (held_ == nullptr) return 0;
  offered_.reset();
  // Straight back to the C allocator: a weight's block kept for activations would stay
  // resident whether or not a later run asks for its size.
  detail::give_block(data_.exchange(nullptr, std::memory_order_acq_rel), nbytes_, kAlignment,
                     detail::Keep::No);
  detail::count_free(nbytes_);
  detail::count_held(nbytes_);
  return nbytes_;
}

std::byte* Storage::unpacked() const {
  const std::lock_guard<std::mutex> lock(packing_);
  std::byte* bytes = data_.load(std::memory_order_acquire);
  if (bytes != nullptr || held_ == nullptr) return bytes;  // rebuilt meanwhile, or never held
  detail::count_allocation(nbytes_);
  bytes = static_cast<std::byte*>(detail::take_block(nbytes_, kAlignment));
  if (bytes == nullptr) {
    detail::count_free(nbytes_);
    fail("cannot allocate {} bytes to rebuild a weight held packed", nbytes_);
  }
  held_->unpack(bytes);
  held_.reset();
  rebuilt_ = true;
  detail::count_unheld(nbytes_);
  data_.store(bytes, std::memory_order_release);
  return bytes;
}

// refold/memory.h: current = Σ live storages' nbytes; peak = max of current since the reset;
// an allocation taking current above the limit (0: none) is refused before it happens.
namespace detail {
namespace {
std::atomic<std::size_t> g_current_bytes{0};
std::atomic<std::size_t> g_peak_bytes{0};
std::atomic<std::size_t> g_limit_bytes{0};
std::atomic<std::size_t> g_held_bytes{0};

// "512 B", "1.2 MiB", "4.0 GiB".
std::string format_bytes(std::size_t bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(bytes) / 1024;
  std::size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(units)) {
    value /= 1024;
    ++unit;
  }
  return fmt::format("{:.1f} {}", value, units[unit]);
}

// The refusal, `what` naming the tensor ("float32[1, 3, 40000, 9000]") where it is known.
[[noreturn]] void fail_over_limit(std::size_t nbytes, std::size_t live, std::size_t limit,
                                  const std::string& what) {
  fail("would allocate {}{} with {} live > memory limit {} (set_memory_limit, --max-memory)",
       format_bytes(nbytes), what.empty() ? "" : " (" + what + ")", format_bytes(live),
       format_bytes(limit));
}
}  // namespace

void count_allocation(std::size_t nbytes) {
  const std::size_t limit = g_limit_bytes.load(std::memory_order_relaxed);
  std::size_t now = 0;
  if (limit == 0) {
    now = g_current_bytes.fetch_add(nbytes, std::memory_order_relaxed) + nbytes;
  } else {
    // Reserved only where it fits, in one compare-and-swap: two threads racing past the limit
    // cannot both succeed, and the live count never exceeds the limit, not even for a moment (a
    // reservation made first and given back on refusal could be seen by another thread).
    std::size_t live = g_current_bytes.load(std::memory_order_relaxed);
    do {
      now = live + nbytes;
      if (now > limit || now < nbytes) fail_over_limit(nbytes, live, limit, "");
    } while (!g_current_bytes.compare_exchange_weak(live, now, std::memory_order_relaxed));
  }
  // Raise the peak to `now` unless another thread already raised it higher.
  std::size_t peak = g_peak_bytes.load(std::memory_order_relaxed);
  while (peak < now && !g_peak_bytes.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

void count_free(std::size_t nbytes) {
  g_current_bytes.fetch_sub(nbytes, std::memory_order_relaxed);
}

void count_held(std::size_t nbytes) { g_held_bytes.fetch_add(nbytes, std::memory_order_relaxed); }
void count_unheld(std::size_t nbytes) { g_held_bytes.fetch_sub(nbytes, std::memory_order_relaxed); }

// make_impl's early check, which can name the tensor's dtype and sizes (Storage cannot).
void check_memory_limit(std::size_t nbytes, DType dtype, const Shape& sizes) {
  const std::size_t limit = g_limit_bytes.load(std::memory_order_relaxed);
  if (limit == 0) return;
  const std::size_t live = g_current_bytes.load(std::memory_order_relaxed);
  if (nbytes > limit || live > limit - nbytes) {
    fail_over_limit(nbytes, live, limit,
                    fmt::format("{}[{}]", dtype_name(dtype), fmt::join(sizes, ", ")));
  }
}
}  // namespace detail

MemoryStats memory_stats() {
  return {detail::g_current_bytes.load(std::memory_order_relaxed),
          detail::g_peak_bytes.load(std::memory_order_relaxed),
          detail::g_held_bytes.load(std::memory_order_relaxed)};
}

void reset_peak_memory() {
  detail::g_peak_bytes.store(detail::g_current_bytes.load(std::memory_order_relaxed),
                             std::memory_order_relaxed);
}

void set_memory_limit(std::size_t bytes) {
  detail::g_limit_bytes.store(bytes, std::memory_order_relaxed);
}

std::size_t memory_limit() { return detail::g_limit_bytes.load(std::memory_order_relaxed); }

namespace {

std::atomic<std::uint64_t> g_permutes{0};
std::atomic<std::uint64_t> g_versions{0};

std::int64_t wrap_dim(std::int64_t dim, std::int64_t rank, const char* what) {
  const std::int64_t wrapped = dim < 0 ? dim + rank : dim;
  REFOLD_CHECK(wrapped >= 0 && wrapped < std::max<std::int64_t>(rank, 1) && rank > 0,
               "{}: dimension {} out of range for a {}-d tensor", what, dim, rank);
  return wrapped;
}

// The bytes a tensor of these sizes and strides spans: 1 + Σ (size_i − 1) · stride_i elements.
std::int64_t extent_bytes(TensorImpl& impl, const Shape& sizes, const Shape& strides, DType dtype) {
  REFOLD_CHECK(sizes.size() == strides.size(), "tensor: {} sizes but {} strides", sizes.size(),
               strides.size());
  impl.numel = checked_numel(sizes, "tensor");
  std::int64_t extent = impl.numel == 0 ? 0 : 1;
  for (std::size_t i = 0; i < sizes.size() && impl.numel > 0; ++i) {
    REFOLD_CHECK(strides[i] >= 0, "tensor: negative stride {} in dimension {}", strides[i], i);
    extent = checked_add(extent, checked_mul(sizes[i] - 1, strides[i], "tensor"), "tensor");
  }
  impl.sizes = sizes;
  impl.strides = strides;
  impl.dtype = dtype;
  return checked_mul(extent, static_cast<std::int64_t>(element_size(dtype)), "tensor");
}

std::shared_ptr<TensorImpl> make_impl(const Shape& sizes, const Shape& strides, DType dtype) {
  auto impl = std::make_shared<TensorImpl>();
  const std::int64_t nbytes = extent_bytes(*impl, sizes, strides, dtype);
  detail::check_memory_limit(static_cast<std::size_t>(nbytes), dtype, sizes);
  impl->storage = std::make_shared<Storage>(static_cast<std::size_t>(nbytes));
  return impl;
}

Shape strides_for(const Shape& sizes, MemoryFormat format) {
  switch (format) {
    case MemoryFormat::Contiguous:
      return contiguous_strides(sizes);
    case MemoryFormat::ChannelsLast:
      return channels_last_strides(sizes);
    case MemoryFormat::Preserve:
      break;
  }
  fail("memory format 'preserve' needs a tensor to preserve the layout of");
}

}  // namespace

std::uint64_t next_tensor_version() { return ++g_versions; }

Shape contiguous_strides(const Shape& sizes) {
  Shape strides(sizes.size(), 1);
  for (std::size_t i = sizes.size(); i-- > 1;)
    strides[i - 1] = checked_mul(strides[i], std::max<std::int64_t>(sizes[i], 1), "strides");
  return strides;
}

Shape channels_last_strides(const Shape& sizes) {
  REFOLD_CHECK(sizes.size() == 4, "channels_last needs a 4-d tensor, got {}-d [{}]", sizes.size(),
               fmt::join(sizes, ", "));
  // NHWC: C is innermost, then W, then H, then N.
  Shape strides(4);
  strides[1] = 1;
  strides[3] = std::max<std::int64_t>(sizes[1], 1);
  strides[2] = checked_mul(strides[3], std::max<std::int64_t>(sizes[3], 1), "strides");
  strides[0] = checked_mul(strides[2], std::max<std::int64_t>(sizes[2], 1), "strides");
  return strides;
}

namespace detail {
void count_permute() { ++g_permutes; }
}  // namespace detail

std::uint64_t permute_count() { return g_permutes.load(); }
void reset_permute_count() { g_permutes.store(0); }

// ---------------------------------------------------------------------------------------------
// Accessors

const TensorImpl& Tensor::impl() const {
  REFOLD_CHECK(impl_ != nullptr, "tensor is undefined");
  return *impl_;
}

const Shape& Tensor::sizes() const { return impl().sizes; }
const Shape& Tensor::strides() const { return impl().strides; }
std::int64_t Tensor::dim() const { return static_cast<std::int64_t>(impl().sizes.size()); }
std::int64_t Tensor::numel() const { return impl().numel; }
std::int64_t Tensor::storage_offset() const { return impl().storage_offset; }
DType Tensor::dtype() const { return impl().dtype; }
std::int64_t Tensor::size(std::int64_t d) const { return sizes()[wrap_dim(d, dim(), "size")]; }
std::int64_t Tensor::stride(std::int64_t d) const {
  return strides()[wrap_dim(d, dim(), "stride")];
}

std::uint64_t Tensor::version() const { return impl().storage->version(); }

void* Tensor::data_ptr() {
  const auto& i = impl();
  i.storage->bump_version();  // a writable pointer may change the data
  return i.storage->data() + i.storage_offset * static_cast<std::int64_t>(element_size());
}
const void* Tensor::data_ptr() const {
  const auto& i = impl();
  return i.storage->data() + i.storage_offset * static_cast<std::int64_t>(element_size());
}

void Tensor::check_dtype_for(std::size_t size, DType expected) const {
  REFOLD_CHECK(dtype() == expected && size == element_size(),
               "tensor has dtype {}, not the requested {}", dtype_name(dtype()),
               dtype_name(expected));
}

bool Tensor::shares_storage(const Tensor& other) const {
  return defined() && other.defined() && impl_->storage == other.impl_->storage;
}

bool detail::sole_handle(const Tensor& t) {
  const std::shared_ptr<TensorImpl>& impl = TensorAccess::impl(t);
  return impl != nullptr && impl.use_count() == 1 && impl->storage.use_count() == 1 &&
         !impl->storage->borrowed();
}

std::string Tensor::description() const {
  if (!defined()) return "undefined";
  std::string layout;
  if (dim() == 4)
    layout = is_contiguous()                             ? " contiguous"
             : is_contiguous(MemoryFormat::ChannelsLast) ? " channels_last"
                                                         : " strided";
  return fmt::format("{}[{}]{}", dtype_name(dtype()), fmt::join(sizes(), ", "), layout);
}

// ---------------------------------------------------------------------------------------------
// Memory format
//
// Note [Ambiguous memory formats]
// Strides do not always determine one format, because a dimension of size 1 can have any
// stride and still address the same elements. refold follows PyTorch (c10/core/MemoryFormat.h,
// TensorImpl::compute_*_contiguous) exactly:
//  * is_contiguous(format) ignores the strides of size-1 dimensions. So an [N, 1, H, W] tensor
//    (C == 1) and an [N, C, 1, 1] tensor (H == W == 1) laid out either way are contiguous in
//    BOTH formats, and contiguous(format) returns them unchanged — no copy, no permute.
//  * suggest_memory_format() answers ChannelsLast only when the strides rank the dims
//    C < W < H < N (from fastest to slowest), with the tie-breaks PyTorch uses:
//      - stride[C] == 0 (an expanded C) → Contiguous;
//      - a zero-size dim → Contiguous;
//      - N111 where N's stride equals C's (both NCHW- and NHWC-made N×1×1×1 tensors look
//        alike) → Contiguous, the default;
//    hence a channels_last-made [N, C, 1, 1] tensor suggests ChannelsLast while a contiguous one
//    suggests Contiguous, although both are contiguous in both formats.
//  * numel() == 0 tensors are contiguous in every format.

bool Tensor::is_contiguous(MemoryFormat format) const {
  const auto& i = impl();
  if (i.numel == 0) return true;
  auto dense_in_order = [&](std::initializer_list<std::size_t> order) {
    std::int64_t expected = 1;
    for (std::size_t d : order) {
      if (i.sizes[d] == 1) continue;
      if (i.strides[d] != expected) return false;
      expected *= i.sizes[d];
    }
    return true;
  };
  switch (format) {
    case MemoryFormat::Contiguous: {
      std::int64_t expected = 1;
      for (std::size_t d = i.sizes.size(); d-- > 0;) {
        if (i.sizes[d] == 1) continue;
        if (i.strides[d] != expected) return false;
        expected *= i.sizes[d];
      }
      return true;
    }
    case MemoryFormat::ChannelsLast:
      return i.sizes.size() == 4 && dense_in_order({1, 3, 2, 0});
    case MemoryFormat::Preserve:
      break;
  }
  fail("is_contiguous: memory format 'preserve' is not a layout");
}

MemoryFormat Tensor::suggest_memory_format() const {
  const auto& i = impl();
  if (i.sizes.size() != 4 || i.strides[1] == 0) return MemoryFormat::Contiguous;
  std::int64_t min = 0;
  for (std::size_t d : {1, 3, 2, 0}) {
    if (i.sizes[d] == 0 || i.strides[d] < min) return MemoryFormat::Contiguous;
    if (d == 0 && min == i.strides[1]) return MemoryFormat::Contiguous;  // N111, see the Note
    min = i.strides[d];
    if (i.sizes[d] > 1) min *= i.sizes[d];
  }
  return MemoryFormat::ChannelsLast;
}

bool Tensor::is_non_overlapping_and_dense() const {
  const auto& i = impl();
  if (i.numel == 0 || is_contiguous()) return true;
  // Sort dims by stride; dense means each stride equals the product of the sizes inside it.
  std::vector<std::size_t> order(i.sizes.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (i.sizes[a] < 2) return false;
    if (i.sizes[b] < 2) return true;
    return i.strides[a] < i.strides[b];
  });
  std::int64_t expected = 1;
  for (std::size_t d : order) {
    if (i.sizes[d] == 1) continue;
    if (i.strides[d] != expected) return false;
    expected *= i.sizes[d];
  }
  return true;
}

namespace {

// Visits every element pair (src offset, dst offset) as runs along one dim: run(so, dof, count,
// s_step, d_step) covers the pairs (so + i·s_step, dof + i·d_step), i < count. The dims go in
// dst's memory order (sorted by dst stride, largest outermost) so that writes stream; dims that
// are one run in both tensors are merged (a contiguous copy is one run, NHWC rows of pixels
// one run per row). When dst's innermost dim reads src with a stride while another dim reads
// it contiguously, and either is 16 or longer, the two are a transpose, block(so, dof,
// TransposeBlock): dst's rows × cols block at dof (rows d_stride apart) is src's cols × rows
// block at so (rows contiguous, s_stride apart) transposed, which the callers copy
// in tiles rather than one strided element at a time — ShuffleNet's channel shuffle in NHWC
// (per pixel, 2 groups innermost in dst, C/2 channels contiguous in src), attention's and
// MobileViT's [N, C] ↔ [C, N] transposes. Otherwise, when the innermost dim is short (under
// 16) while another reads src contiguously, that one is the run instead.
// Calls visit(so, dof) at every index of the dims (size, ss, ds), outermost first.
template <typename Visit>
void for_each_offsets(const Shape& size, const Shape& ss, const Shape& ds, Visit&& visit) {
  const std::size_t dims = size.size();
  if (dims == 0) {
    visit(0, 0);
    return;
  }
  Shape index(dims, 0);
  std::int64_t so = 0, dof = 0;
  while (true) {
    visit(so, dof);
    std::size_t d = dims;
    while (d > 0) {
      --d;
      so += ss[d];
      dof += ds[d];
      if (++index[d] < size[d]) break;
      so -= ss[d] * size[d];
      dof -= ds[d] * size[d];
      index[d] = 0;
      if (d == 0) return;
    }
  }
}

// dst[r·d_stride + m·d_mid + c] = src[c·s_stride + m·s_mid + r] for r < rows, m < mid, c < cols.
struct TransposeBlock {
  std::int64_t rows, cols, s_stride, d_stride;
  std::int64_t mid = 1, s_mid = 0, d_mid = 0;
};

template <typename Run, typename Block>
void for_each_run(const Shape& sizes, const Shape& src_strides, const Shape& dst_strides, Run&& run,
                  Block&& block) {
  std::vector<std::size_t> order(sizes.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return dst_strides[a] > dst_strides[b]; });
  Shape size, ss, ds;
  for (std::size_t d : order) {
    if (sizes[d] == 1) continue;
    if (!size.empty() && ss.back() == src_strides[d] * sizes[d] &&
        ds.back() == dst_strides[d] * sizes[d]) {
      size.back() *= sizes[d];  // the outer dim steps exactly over this one in both: one dim
      ss.back() = src_strides[d];
      ds.back() = dst_strides[d];
      continue;
    }
    size.push_back(sizes[d]);
    ss.push_back(src_strides[d]);
    ds.push_back(dst_strides[d]);
  }
  if (size.empty()) {  // a single element
    run(0, 0, 1, 0, 0);
    return;
  }
  const std::size_t inner = size.size() - 1;
  // Dims j and inner as a block: src's rows along j are contiguous, dst's along inner. When
  // dst's rows are longer than the block's columns, the dim that continues them (dst stride =
  // cols) joins as the block's middle dim, so that each row of a tile is written in one sweep.
  const auto blocks = [&](std::size_t j) {
    TransposeBlock b{size[j], size[inner], ss[inner], ds[j]};
    std::vector<std::size_t> taken = {inner, j};
    for (std::size_t m = 0; m < inner && b.d_stride != b.cols; ++m) {
      if (m != j && ds[m] == b.cols) {
        b.mid = size[m];
        b.s_mid = ss[m];
        b.d_mid = ds[m];
        taken.push_back(m);
        break;
      }
    }
    std::sort(taken.rbegin(), taken.rend());  // erase the later dims first
    for (const std::size_t d : taken) {
      size.erase(size.begin() + static_cast<std::ptrdiff_t>(d));
      ss.erase(ss.begin() + static_cast<std::ptrdiff_t>(d));
      ds.erase(ds.begin() + static_cast<std::ptrdiff_t>(d));
    }
    for_each_offsets(size, ss, ds, [&](std::int64_t so, std::int64_t dof) { block(so, dof, b); });
  };
  if (ds[inner] == 1 && ss[inner] != 1) {
    for (std::size_t j = 0; j < inner; ++j) {
      if (ss[j] == 1 && (size[j] >= 16 || size[inner] >= 16)) {
        blocks(j);
        return;
      }
    }
  }
  if (size[inner] < 16) {
    for (std::size_t d = 0; d < inner; ++d) {
      if (ss[d] == 1 && size[d] >= 16) {
        std::swap(size[d], size[inner]);
        std::swap(ss[d], ss[inner]);
        std::swap(ds[d], ds[inner]);
        break;
      }
    }
  }
  const std::int64_t count = size[inner], s_step = ss[inner], d_step = ds[inner];
  size.pop_back();
  ss.pop_back();
  ds.pop_back();
  for_each_offsets(size, ss, ds,
                   [&](std::int64_t so, std::int64_t dof) { run(so, dof, count, s_step, d_step); });
}

// d[r·cols + c] = s[c·s_stride + r]. `cols` is an int64 or, for the common small counts, a
// std::integral_constant: with it a constant the compiler interleaves whole vectors of the cols
// source rows.
template <typename T, typename Cols>
void transpose_rows(const T* s, T* d, std::int64_t rows, Cols cols, std::int64_t s_stride) {
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) d[r * cols + c] = s[c * s_stride + r];
}

// d[r·d_stride + m·d_mid + c] = s[c·s_stride + m·s_mid + r]: dense dst rows of a few columns
// (d_stride = cols, no middle dim) by the loops above, anything larger in tiles whose source and
// destination rows stay in L1 while a tile is copied; a middle dim is swept inside each band of
// rows, so each dst row is written in one pass. The innermost loop writes one element to each
// dst row of the tile: rows a multiple of 4 KiB apart all fall into one L1 set (8 or 12 ways), so
// 16 of them evict each other before their lines fill — such tiles are 8 × 8, others 16 × 16.
// A [1, 32, 32, 128] NHWC → NCHW copy took 528 µs with 16 × 16 tiles and 73–100 µs with 8 × 8;
// a source stride that aliases does not matter (each source line is read whole in one loop).
// Within a tile, whole 8 × 8 blocks of 4-byte elements move through AVX2 registers
// (core/transpose8x8.h) where the CPU has it.
// d[r·d_stride + c] = s[c·s_stride + r] for rows [ra, rz) × columns [ca, cz), element by element.
template <typename T>
inline void transpose_elements(const T* s, T* d, std::int64_t s_stride, std::int64_t d_stride,
                               std::int64_t ca, std::int64_t cz, std::int64_t ra, std::int64_t rz) {
  for (std::int64_t c = ca; c < cz; ++c)
    for (std::int64_t r = ra; r < rz; ++r) d[r * d_stride + c] = s[c * s_stride + r];
}

#if REFOLD_HAVE_X86_KERNELS
// The same over a tile of 4-byte elements at least 8 × 8: whole 8 × 8 blocks in AVX2 registers
// (core/transpose8x8.h), the ragged right and bottom edges by element. Not inlined: the blocks
// of a few elements that transpose_block copies by the thousand (2 × 2 patches) keep their call
// as short as it was.
template <typename T>
[[gnu::noinline]] void transpose_tile_in_registers(const T* s, T* d, std::int64_t s_stride,
                                                   std::int64_t d_stride, std::int64_t c0,
                                                   std::int64_t c1, std::int64_t r0,
                                                   std::int64_t r1) {
  const std::int64_t c8 = c0 + (c1 - c0) / 8 * 8, r8 = r0 + (r1 - r0) / 8 * 8;
  for (std::int64_t cb = c0; cb < c8; cb += 8)
    for (std::int64_t rb = r0; rb < r8; rb += 8)
      detail::transpose8x8(s + cb * s_stride + rb, s_stride, d + rb * d_stride + cb, d_stride);
  transpose_elements(s, d, s_stride, d_stride, c8, c1, r0, r1);
  transpose_elements(s, d, s_stride, d_stride, c0, c8, r8, r1);
}
#endif

template <typename T>
void transpose_block(const T* s, T* d, const TransposeBlock& b) {
  const std::int64_t rows = b.rows, cols = b.cols, s_stride = b.s_stride, d_stride = b.d_stride;
  if (b.mid == 1 && d_stride == cols && cols < 16) {
    switch (cols) {
      case 2:
        return transpose_rows(s, d, rows, std::integral_constant<std::int64_t, 2>{}, s_stride);
      case 3:
        return transpose_rows(s, d, rows, std::integral_constant<std::int64_t, 3>{}, s_stride);
      case 4:
        return transpose_rows(s, d, rows, std::integral_constant<std::int64_t, 4>{}, s_stride);
      default:
        return transpose_rows(s, d, rows, cols, s_stride);
    }
  }
  constexpr std::int64_t kSetAliasBytes = 4096;
  const auto bytes = static_cast<std::int64_t>(sizeof(T));
  const std::int64_t tile = (d_stride * bytes) % kSetAliasBytes == 0 ? 8 : 16;
  for (std::int64_t r0 = 0; r0 < rows; r0 += tile) {
    const std::int64_t r1 = std::min(rows, r0 + tile);
    for (std::int64_t m = 0; m < b.mid; ++m) {
      const T* sm = s + m * b.s_mid;
      T* dm = d + m * b.d_mid;
      for (std::int64_t c0 = 0; c0 < cols; c0 += tile) {
        const std::int64_t c1 = std::min(cols, c0 + tile);
#if REFOLD_HAVE_X86_KERNELS
        if constexpr (sizeof(T) == 4) {
          if (c1 - c0 >= 8 && r1 - r0 >= 8 && cpu_has_avx2_fma()) {
            transpose_tile_in_registers(sm, dm, s_stride, d_stride, c0, c1, r0, r1);
            continue;
          }
        }
#endif
        transpose_elements(sm, dm, s_stride, d_stride, c0, c1, r0, r1);
      }
    }
  }
}

// to[i] = from[i] converted, over a dense run: a typed loop the compiler vectorizes (float32 ↔
// bfloat16: widening, rounding to nearest even), not a dtype switch per element.
template <typename From, typename To>
void convert_dense(const void* s, void* d, std::int64_t count) {
  const From* from = static_cast<const From*>(s);
  To* to = static_cast<To*>(d);
  for (std::int64_t i = 0; i < count; ++i) to[i] = static_cast<To>(from[i]);
}

// N bytes copied as one element (alignment 1: a run of floats at any address).
template <std::size_t N>
struct Bytes {
  unsigned char b[N];
};

template <typename T>
void copy_runs(const void* src, void* dst, const Shape& sizes, const Shape& src_strides,
               const Shape& dst_strides) {
  const T* s = static_cast<const T*>(src);
  T* d = static_cast<T*>(dst);
  for_each_run(
      sizes, src_strides, dst_strides,
      [&](std::int64_t so, std::int64_t dof, std::int64_t count, std::int64_t s_step,
          std::int64_t d_step) {
        if (s_step == 1 && d_step == 1) {
          std::memcpy(d + dof, s + so, static_cast<std::size_t>(count) * sizeof(T));
          return;
        }
        if (s_step == 0 && d_step == 1) {  // a broadcast source (Expand): a fill
          std::fill_n(d + dof, count, s[so]);
          return;
        }
        for (std::int64_t i = 0; i < count; ++i) d[dof + i * d_step] = s[so + i * s_step];
      },
      [&](std::int64_t so, std::int64_t dof, const TransposeBlock& b) {
        transpose_block(s + so, d + dof, b);
      });
}

// A dim of 2 or 4 elements (or 2 bfloat16 pairs…) that is contiguous in both tensors, 8 or 16
// bytes in all, and whose size divides every other stride: the copy of elements that many
// times wider without it. Then the dims around it can form a transpose of those wider elements,
// copied in tiles, instead of one 8-byte run per index — MobileViT's 2 × 2 patches,
// [1024, 2, 16, 2] → [1024, 16, 2, 2]. 0 when there is none.
std::size_t run_width(const Shape& sizes, const Shape& ss, const Shape& ds, std::size_t element,
                      std::size_t& dim) {
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    const auto bytes = static_cast<std::size_t>(sizes[k]) * element;
    if (sizes[k] < 2 || ss[k] != 1 || ds[k] != 1 || (bytes != 8 && bytes != 16)) continue;
    bool divides = true;
    for (std::size_t j = 0; j < sizes.size(); ++j)
      divides =
          divides && (j == k || sizes[j] == 1 || (ss[j] % sizes[k] == 0 && ds[j] % sizes[k] == 0));
    if (!divides) continue;
    dim = k;
    return bytes;
  }
  return 0;
}

template <typename T>
void copy_same_dtype(const Tensor& src, Tensor& dst) {
  std::size_t k = 0;
  if (const std::size_t bytes =
          run_width(src.sizes(), src.strides(), dst.strides(), sizeof(T), k)) {
    const std::int64_t width = src.size(static_cast<std::int64_t>(k));
    Shape sizes = src.sizes(), ss = src.strides(), ds = dst.strides();
    for (Shape* v : {&sizes, &ss, &ds}) v->erase(v->begin() + static_cast<std::ptrdiff_t>(k));
    for (std::size_t j = 0; j < sizes.size(); ++j) {
      ss[j] /= width;
      ds[j] /= width;
    }
    return bytes == 8 ? copy_runs<Bytes<8>>(src.data_ptr(), dst.data_ptr(), sizes, ss, ds)
                      : copy_runs<Bytes<16>>(src.data_ptr(), dst.data_ptr(), sizes, ss, ds);
  }
  copy_runs<T>(src.data_ptr(), dst.data_ptr(), src.sizes(), src.strides(), dst.strides());
}

// Copies every element of src into dst (same sizes, checked), converting dtype (checked).
void copy_elements_serial(const Tensor& src, Tensor& dst) {
  if (src.dtype() == dst.dtype()) {
    switch (src.dtype()) {
      case DType::Float32:
        return copy_same_dtype<float>(src, dst);
      case DType::BFloat16:
        return copy_same_dtype<std::uint16_t>(src, dst);
      case DType::Int64:
        return copy_same_dtype<std::int64_t>(src, dst);
    }
  }
  const void* s = src.data_ptr();
  void* d = dst.data_ptr();
  const DType sd = src.dtype(), dd = dst.dtype();
  for_each_run(
      src.sizes(), src.strides(), dst.strides(),
      [&](std::int64_t so, std::int64_t dof, std::int64_t count, std::int64_t s_step,
          std::int64_t d_step) {
        if (s_step == 1 && d_step == 1 && sd == DType::BFloat16 && dd == DType::Float32)
          return convert_dense<BFloat16, float>(static_cast<const BFloat16*>(s) + so,
                                                static_cast<float*>(d) + dof, count);
        if (s_step == 1 && d_step == 1 && sd == DType::Float32 && dd == DType::BFloat16)
          return convert_dense<float, BFloat16>(static_cast<const float*>(s) + so,
                                                static_cast<BFloat16*>(d) + dof, count);
        for (std::int64_t i = 0; i < count; ++i)
          store_from_float(d, dd, dof + i * d_step, load_as_float(s, sd, so + i * s_step));
      },
      [&](std::int64_t so, std::int64_t dof, const TransposeBlock& b) {
        for (std::int64_t r = 0; r < b.rows; ++r)
          for (std::int64_t m = 0; m < b.mid; ++m)
            for (std::int64_t c = 0; c < b.cols; ++c)
              store_from_float(d, dd, dof + r * b.d_stride + m * b.d_mid + c,
                               load_as_float(s, sd, so + c * b.s_stride + m * b.s_mid + r));
      });
}

// Copies every element of src into dst (same sizes), converting dtype. A copy of
// kParallelCopyElements or more (core/parallel_copy.h) is split
// along dst's outermost dim of at least two elements (the largest stride), each thread copying
// its slab of both tensors: a transpose stays a transpose in every slab. Against one thread
// (bench/compare_builds.py, Xeon model 207, 2 threads): SE-BoTNet-33 0.855× (its relative-position
// logits: Expand and strided Transposes of 67 MB), DeiT-Tiny 0.955×, EfficientViT-M0 0.96×,
// Swin-V2-T 0.98×, MaxViT-T 0.995×; ShuffleNetV2-0.5 1.01× and MobileViTv2-0.5 0.98×, noise.
void copy_elements(const Tensor& src, Tensor& dst) {
  REFOLD_CHECK(src.sizes() == dst.sizes(), "copy: sizes [{}] and [{}] differ",
               fmt::join(src.sizes(), ", "), fmt::join(dst.sizes(), ", "));
  if (src.numel() == 0) return;
  REFOLD_CHECK(src.dtype() == dst.dtype() || (is_floating(src.dtype()) && is_floating(dst.dtype())),
               "copy: cannot convert {} to {}", dtype_name(src.dtype()), dtype_name(dst.dtype()));
  const int threads = src.numel() < kParallelCopyElements || omp_in_parallel()
                          ? 1
                          : std::min<std::int64_t>(get_num_threads(), src.numel());
  std::optional<std::size_t> split;
  for (std::size_t k = 0; threads > 1 && k < src.sizes().size(); ++k) {
    if (src.sizes()[k] >= 2 && (!split || dst.strides()[k] > dst.strides()[*split])) split = k;
  }
  if (!split) return copy_elements_serial(src, dst);
  const std::int64_t size = src.sizes()[*split];
  const std::int64_t parts = std::min<std::int64_t>(threads, size);
  // Slab t holds indices [t·size/parts, (t+1)·size/parts) of the split dim.
  const auto slab = [&](const Tensor& t, std::int64_t begin, std::int64_t end) {
    Shape sizes = t.sizes();
    sizes[*split] = end - begin;
    return t.as_strided(sizes, t.strides(), t.storage_offset() + begin * t.strides()[*split]);
  };
#pragma omp parallel for schedule(static) num_threads(static_cast <int>(parts))
  for (std::int64_t t = 0; t < parts; ++t) {
    const std::int64_t begin = t * size / parts, end = (t + 1) * size / parts;
    Tensor d = slab(dst, begin, end);
    copy_elements_serial(slab(src, begin, end), d);
  }
}

}  // namespace

Tensor Tensor::contiguous(MemoryFormat format) const {
  REFOLD_CHECK(format != MemoryFormat::Preserve,
               "contiguous: memory format 'preserve' is not a layout");
  if (is_contiguous(format)) return *this;
  if (format != suggest_memory_format()) detail::count_permute();
  Tensor out = empty(sizes(), {dtype(), format});
  copy_elements(*this, out);
  return out;
}

Tensor Tensor::to(DType target, MemoryFormat format) const {
  if (target == dtype() && (format == MemoryFormat::Preserve || is_contiguous(format)))
    return *this;
  Tensor out = empty_like(*this, {target, format});
  copy_elements(*this, out);
  return out;
}

Tensor Tensor::clone(MemoryFormat format) const {
  Tensor out = empty_like(*this, {dtype(), format});
  copy_elements(*this, out);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Views

Tensor Tensor::as_strided(const Shape& new_sizes, const Shape& new_strides,
                          std::int64_t offset) const {
  const auto& i = impl();
  REFOLD_CHECK(new_sizes.size() == new_strides.size(), "as_strided: {} sizes but {} strides",
               new_sizes.size(), new_strides.size());
  REFOLD_CHECK(offset >= 0, "as_strided: negative storage offset {}", offset);
  const std::int64_t n = checked_numel(new_sizes, "as_strided");
  std::int64_t last = offset;
  for (std::size_t d = 0; d < new_sizes.size() && n > 0; ++d) {
    REFOLD_CHECK(new_strides[d] >= 0, "as_strided: negative stride {}", new_strides[d]);
    last = checked_add(last, checked_mul(new_sizes[d] - 1, new_strides[d], "as_strided"),
                       "as_strided");
  }
  const auto capacity = static_cast<std::int64_t>(i.storage->nbytes() / element_size());
  REFOLD_CHECK(n == 0 || last < capacity,
               "as_strided: view reaches element {} of a storage holding {}", last, capacity);
  auto impl = std::make_shared<TensorImpl>(i);
  impl->sizes = new_sizes;
  impl->strides = new_strides;
  impl->storage_offset = offset;
  impl->numel = n;
  return Tensor(std::move(impl));
}

Tensor Tensor::permute(const Shape& dims) const {
  REFOLD_CHECK(static_cast<std::int64_t>(dims.size()) == dim(),
               "permute: {} dims given for a {}-d tensor", dims.size(), dim());
  Shape new_sizes(dims.size()), new_strides(dims.size());
  std::vector<bool> seen(dims.size(), false);
  for (std::size_t k = 0; k < dims.size(); ++k) {
    const std::int64_t d = wrap_dim(dims[k], dim(), "permute");
    REFOLD_CHECK(!seen[d], "permute: dimension {} repeated", d);
    seen[d] = true;
    new_sizes[k] = sizes()[d];
    new_strides[k] = strides()[d];
  }
  return as_strided(new_sizes, new_strides, storage_offset());
}

namespace {

// `new_sizes` with its −1 (at most one) resolved so that they hold `numel` elements.
Shape resolve_reshape(const Shape& sizes, std::int64_t numel, const Shape& new_sizes) {
  Shape resolved = new_sizes;
  std::int64_t known = 1, infer = -1;
  for (std::size_t d = 0; d < resolved.size(); ++d) {
    if (resolved[d] == -1) {
      REFOLD_CHECK(infer < 0, "reshape: only one dimension can be -1 in [{}]",
                   fmt::join(new_sizes, ", "));
      infer = static_cast<std::int64_t>(d);
    } else {
      REFOLD_CHECK(resolved[d] >= 0, "reshape: invalid size {} in [{}]", resolved[d],
                   fmt::join(new_sizes, ", "));
      known = checked_mul(known, resolved[d], "reshape");
    }
  }
  if (infer >= 0) {
    REFOLD_CHECK(known != 0 && numel % known == 0, "reshape: cannot view [{}] as [{}]",
                 fmt::join(sizes, ", "), fmt::join(new_sizes, ", "));
    resolved[infer] = numel / known;
  }
  REFOLD_CHECK(checked_numel(resolved, "reshape") == numel,
               "reshape: shape [{}] has {} elements, the tensor [{}] has {}",
               fmt::join(new_sizes, ", "), checked_numel(resolved, "reshape"),
               fmt::join(sizes, ", "), numel);
  return resolved;
}

}  // namespace

namespace detail {

// The strides of `sizes` viewing the elements of (old_sizes, old_strides) in the same logical
// order (tensor_impl.h), or nullopt when no strides can (PyTorch's view rule). The old dims fall
// into chunks, maximal runs in which each dim's stride is the next one's times its size (one
// arithmetic sequence of addresses); the new dims must cut those chunks at their boundaries, and a
// new dim inside a chunk gets the chunk's innermost stride times the sizes after it. Walked from
// the innermost dim; size-1 dims join any chunk.
std::optional<Shape> view_strides(const Shape& old_sizes, const Shape& old_strides,
                                  const Shape& sizes) {
  Shape strides(sizes.size());
  auto view_d = static_cast<std::int64_t>(sizes.size()) - 1;
  std::int64_t chunk_stride = old_strides.empty() ? 1 : old_strides.back();
  std::int64_t old_numel = 1, view_numel = 1;
  for (auto d = static_cast<std::int64_t>(old_sizes.size()) - 1; d >= 0; --d) {
    const auto u = static_cast<std::size_t>(d);
    old_numel *= old_sizes[u];
    const bool chunk_ends =
        d == 0 || (old_sizes[u - 1] != 1 && old_strides[u - 1] != old_numel * chunk_stride);
    if (!chunk_ends) continue;
    while (view_d >= 0 &&
           (view_numel < old_numel || sizes[static_cast<std::size_t>(view_d)] == 1)) {
      strides[static_cast<std::size_t>(view_d)] = view_numel * chunk_stride;
      view_numel *= sizes[static_cast<std::size_t>(view_d)];
      --view_d;
    }
    if (view_numel != old_numel) return std::nullopt;
    if (d > 0) {
      chunk_stride = old_strides[u - 1];
      old_numel = view_numel = 1;
    }
  }
  if (view_d != -1) return std::nullopt;  // (a 0-d tensor, which view() never asks about)
  // A size-1 dim's stride addresses nothing; it gets the extent of the dims after it, as a
  // contiguous tensor's does, so that the view keeps the memory format its memory has: NHWC
  // memory viewed with its own sizes suggests channels_last ([512, 1, 64, 8] for [1, 8, 8, 8],
  // not the chunk walk's [8, 1, 64, 8]).
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] != 1) continue;
    std::int64_t extent = 1;
    for (std::size_t e = d + 1; e < sizes.size(); ++e)
      extent = std::max(extent, strides[e] * sizes[e]);
    strides[d] = extent;
  }
  return strides;
}

}  // namespace detail

Tensor Tensor::reshape(const Shape& new_sizes) const {
  const Shape resolved = resolve_reshape(sizes(), numel(), new_sizes);
  const Tensor dense = contiguous();
  return dense.as_strided(resolved, contiguous_strides(resolved), dense.storage_offset());
}

Tensor Tensor::view(const Shape& new_sizes) const {
  const Shape resolved = resolve_reshape(sizes(), numel(), new_sizes);
  if (is_contiguous() || numel() == 0)
    return as_strided(resolved, contiguous_strides(resolved), storage_offset());
  const std::optional<Shape> strides = detail::view_strides(sizes(), this->strides(), resolved);
  if (!strides) return {};
  return as_strided(resolved, *strides, storage_offset());
}

// ---------------------------------------------------------------------------------------------
// Element access

namespace {
std::int64_t checked_offset(const Tensor& t, std::initializer_list<std::int64_t> index) {
  REFOLD_CHECK(static_cast<std::int64_t>(index.size()) == t.dim(),
               "index has {} entries for a {}-d tensor", index.size(), t.dim());
  std::int64_t off = 0;
  std::size_t d = 0;
  for (std::int64_t i : index) {
    REFOLD_CHECK(i >= 0 && i < t.sizes()[d], "index {} out of range for dimension {} (size {})", i,
                 d, t.sizes()[d]);
    off += i * t.strides()[d];
    ++d;
  }
  return off;
}
}  // namespace

float Tensor::at(std::initializer_list<std::int64_t> index) const {
  return load_as_float(data_ptr(), dtype(), checked_offset(*this, index));
}

void Tensor::set(std::initializer_list<std::int64_t> index, float value) {
  store_from_float(data_ptr(), dtype(), checked_offset(*this, index), value);
}

float Tensor::item() const {
  REFOLD_CHECK(numel() == 1, "item: tensor has {} elements, not 1", numel());
  return load_as_float(data_ptr(), dtype(), 0);
}

std::vector<float> Tensor::to_vector() const {
  std::vector<float> values;
  values.reserve(static_cast<std::size_t>(numel()));
  const FloatReader in(*this);
  for_each_index(sizes(), [&](const Shape& idx) {
    values.push_back(in.at_offset(offset_of(idx, in.strides())));
  });
  return values;
}

// ---------------------------------------------------------------------------------------------
// In-place

Tensor& Tensor::copy_(const Tensor& src) {
  copy_elements(src, *this);
  return *this;
}

namespace {

// n copies of the element at `first` after it (any trivially copyable element type).
template <typename T>
void repeat_first(void* first, std::int64_t n) {
  T* p = static_cast<T*>(first);
  std::fill(p + 1, p + n, p[0]);
}

}  // namespace

Tensor& Tensor::fill_(float value) {
  if (numel() == 0) return *this;
  FloatWriter out(*this);
  if (is_non_overlapping_and_dense()) {
    // The elements are the buffer's first numel(): one written (converted to the dtype), then
    // repeated — not an index walk per element, which took seconds for a large stand-in tensor.
    out.set_offset(0, value);
    switch (element_size()) {
      case 2:
        repeat_first<std::uint16_t>(data_ptr(), numel());
        break;
      case 4:
        repeat_first<std::uint32_t>(data_ptr(), numel());
        break;
      case 8:
        repeat_first<std::uint64_t>(data_ptr(), numel());
        break;
      default:
        fail("fill_: no {}-byte element type", element_size());
    }
    return *this;
  }
  for_each_index(sizes(),
                 [&](const Shape& idx) { out.set_offset(offset_of(idx, out.strides()), value); });
  return *this;
}

void Tensor::set_data(const Tensor& other) {
  REFOLD_CHECK(impl_ != nullptr && other.defined(), "set_data: undefined tensor");
  *impl_ = other.impl();
}

// ---------------------------------------------------------------------------------------------
// Factories

Tensor empty_strided(const Shape& sizes, const Shape& strides, DType dtype) {
  return Tensor(make_impl(sizes, strides, dtype));
}

Tensor from_blob(void* data, const Shape& sizes, const Shape& strides, DType dtype,
                 std::function<void()> release) {
  REFOLD_CHECK(data != nullptr || checked_numel(sizes, "from_blob") == 0,
               "from_blob: null data for {} elements", checked_numel(sizes, "from_blob"));
  auto impl = std::make_shared<TensorImpl>();
  const std::int64_t nbytes = extent_bytes(*impl, sizes, strides, dtype);
  impl->storage = std::make_shared<Storage>(static_cast<std::byte*>(data),
                                            static_cast<std::size_t>(nbytes), std::move(release));
  return Tensor(std::move(impl));
}

Tensor empty(const Shape& sizes, TensorOptions options) {
  checked_numel(sizes, "empty");
  return empty_strided(sizes, strides_for(sizes, options.memory_format), options.dtype);
}

Tensor empty_like(const Tensor& like, TensorOptions options) {
  if (options.memory_format != MemoryFormat::Preserve) return empty(like.sizes(), options);
  // PyTorch's rule: keep the exact strides of a non-overlapping, dense tensor; otherwise use
  // the format its strides suggest.
  if (like.is_non_overlapping_and_dense())
    return empty_strided(like.sizes(), like.strides(), options.dtype);
  return empty(like.sizes(), {options.dtype, like.suggest_memory_format()});
}

Tensor full(const Shape& sizes, float value, TensorOptions options) {
  Tensor t = empty(sizes, options);
  t.fill_(value);
  return t;
}

Tensor zeros(const Shape& sizes, TensorOptions options) { return full(sizes, 0.0f, options); }
Tensor ones(const Shape& sizes, TensorOptions options) { return full(sizes, 1.0f, options); }

namespace {
template <typename Draw>
Tensor random_tensor(const Shape& sizes, TensorOptions options, Draw&& draw) {
  Tensor t = empty(sizes, options);
  FloatWriter out(t);
  // Values are drawn in logical order, so the same seed gives the same tensor in any format.
  for_each_index(sizes, [&](const Shape& idx) {
    out.set_offset(offset_of(idx, out.strides()), static_cast<float>(draw()));
  });
  return t;
}
}  // namespace

Tensor rand(const Shape& sizes, TensorOptions options, Generator& gen) {
  return random_tensor(sizes, options, [&] { return gen.uniform(); });
}

Tensor randn(const Shape& sizes, TensorOptions options, Generator& gen) {
  return random_tensor(sizes, options, [&] { return gen.normal(); });
}

Tensor from_values(std::span<const float> values, const Shape& sizes, TensorOptions options) {
  Tensor t = empty(sizes, options);
  REFOLD_CHECK(static_cast<std::int64_t>(values.size()) == t.numel(),
               "from_values: {} values for shape [{}] ({} elements)", values.size(),
               fmt::join(sizes, ", "), t.numel());
  FloatWriter out(t);
  std::size_t k = 0;
  for_each_index(
      sizes, [&](const Shape& idx) { out.set_offset(offset_of(idx, out.strides()), values[k++]); });
  return t;
}

}  // namespace refold
