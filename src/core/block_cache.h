// The memory behind tensor storages: large blocks are kept when freed and handed out again for
// the next request of the same size, instead of going back to the OS.
//
// Why: a model run allocates the same activation sizes on every run, and the C library returns
// large freed blocks to the OS (mmap'd blocks, a trimmed heap), so each run touches fresh pages
// again — one page fault per 4 KiB on first write. A 5.5 MB Resize output costs 1,400 faults,
// about 2 ms on a 2-core Zen 3, against 0.3 ms for the kernel itself (bench/RESULTS.md).
//
// Rule: blocks of at least kMinCachedBytes are rounded up to a size class, four per octave
// (between 2^k and 2^(k+1) the multiples of 2^k / 4: at most 25 % over the request, and the
// pages past what a tensor writes are never touched, so never resident) and, when freed, kept
// in a list per class; a request takes the most recently kept block of the smallest class that
// holds it and has one, up to kLargestFit times its own class (best fit). With classes rather
// than exact sizes, a block freed by one layer serves the next layer's slightly different size
// in the same run: DenseNet's concat outputs, 32 channels wider at every layer, reuse each
// other's blocks instead of each keeping its own, and a run keeps about its peak of live
// activations rather than the sum of all of them. A kept block is already resident, so serving
// a smaller request with it costs no memory, where a new block would; beyond 2× a large block
// would too often be missing for the large request that follows (DenseNet-121 kept 26.9 MB with
// its class alone, 11.6 with up to 2×, 20.4 with any larger block; bench/RESULTS.md). A block
// goes back to the list of its own class. At most kMaxCachedBytes are kept (beyond it a
// freed block is released), so memory held but not live is bounded; REFOLD_CACHE_BLOCKS=0 in the
// environment keeps none. Smaller blocks go straight to the C allocator, which reuses them from
// its heap.
//
// Blocks of the optimizer's stand-in runs (core/stand_in.h: a StandInRun alive when the block is
// taken) are never kept: those runs meet each size once, so a kept block would serve nothing,
// and the cache would end the optimizer holding one block per size it met (DenseNet-121: 42 MB).
// From kMinMappedBytes on they are pages of their own (mmap), given back to the OS when freed —
// in the C heap, whose mmap threshold has grown past them once loading freed the file's bytes,
// they would leave it fragmented and resident (MobileOne-S0: 65 MB; bench/RESULTS.md).
// Thread-safe (one mutex). The kept bytes are not live tensor memory: memory_stats() and the memory
// limit count only storages in use.
#pragma once

#include <cstddef>

namespace refold::detail {

// From 1 KiB on. glibc maps blocks from its mmap threshold on (128 KiB by default) as pages of
// their own (faulted in on first write, unmapped when freed): at 256 KiB, MobileViT's 245 KB
// attention tensors were mapped and unmapped on every run, its 5-d Transposes 0.18 ms each where
// the copy takes 0.02 (bench/RESULTS.md, session 35). Below it, glibc trims the top of its heap
// once more than M_TRIM_THRESHOLD (128 KiB by default) lies free there, and a model's run frees
// its last activations at the heap's top: a chain of 1×1 and depthwise convs on 7×7×512 maps
// (100 KB) built in memory ran 1.39× the time it takes with the blocks kept (session 45), the
// threads waiting on page faults and the TLB shootdowns of each trim. (A model loaded from a
// file rarely showed it: freeing the file's bytes raises both glibc thresholds.) And from 1 KiB
// (glibc's large-bin requests) each malloc first consolidates its fast bins, which the many
// small frees of a run fill: attention models with hundreds of 1–16 KB tensors (EfficientViT-M0,
// 467 nodes) spent a tenth of the main thread in malloc and free; kept from 1 KiB rather than
// 16, they ran 0.96–0.97× the time (session 51, bench/RESULTS.md).
inline constexpr std::size_t kMinCachedBytes = std::size_t{1} << 10;   // 1 KiB
inline constexpr std::size_t kMaxCachedBytes = std::size_t{1} << 30;   // 1 GiB
inline constexpr std::size_t kMinMappedBytes = std::size_t{64} << 10;  // 64 KiB, stand-ins only
inline constexpr std::size_t kLargestFit = 2;  // a request takes a kept block up to 2× its class

// `bytes` rounded as the cache rounds it (at least `alignment`, a multiple of it; from
// kMinCachedBytes on, its size class: a multiple of a quarter of the largest power of two ≤ bytes).
std::size_t block_size(std::size_t bytes, std::size_t alignment);
// A block of block_size(bytes, alignment) bytes, aligned to `alignment`; null when out of
// memory.
void* take_block(std::size_t bytes, std::size_t alignment);
// Returns a block from take_block(bytes, alignment): kept for reuse, or with Keep::No freed.
enum class Keep : bool { No, Yes };
void give_block(void* block, std::size_t bytes, std::size_t alignment, Keep keep = Keep::Yes);
// The bytes kept for reuse now.
std::size_t cached_block_bytes();
// Releases every kept block.
void release_cached_blocks();
// Blocks of stand-in runs now taken and not yet given back (mapped or not).
std::size_t stand_in_blocks();

}  // namespace refold::detail
