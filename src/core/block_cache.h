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
// in a list per class; a request of that class takes the most recently kept block. With classes
// rather than exact sizes, a block freed by one layer serves the next layer's slightly different
// size in the same run: DenseNet's concat outputs, 32 channels wider at every layer, reuse each
// other's blocks instead of each keeping its own, and a run keeps about its peak of live
// activations rather than the sum of all of them.
//
// Bound: the blocks in use and kept together never exceed the most ever in use at once (the
// high-water mark of live large blocks), nor are more than kMaxCachedBytes kept. A request its
// class cannot serve first releases kept blocks of other classes, largest first, until the new
// block fits under that mark. A model that runs the same sizes again hits on every request from
// the second run on and releases nothing; a sequence of ever-new sizes (the optimizer's shape
// inference, which runs each node once on stand-ins) keeps no more than its largest moment
// needed, instead of one block per size it ever freed. REFOLD_CACHE_BLOCKS=0 in the environment
// keeps none.
//
// Large blocks are pages of their own (mmap), so a released block goes back to the OS at once,
// not into the C heap where fragmentation would keep it resident (sanitizer builds use the C
// allocator, whose redzones catch overruns). Smaller blocks go straight to the C allocator, which
// already reuses them.
// Thread-safe (one mutex). The kept bytes are not live tensor memory: memory_stats() and the memory
// limit count only storages in use.
#pragma once

#include <cstddef>

namespace refold::detail {

inline constexpr std::size_t kMinCachedBytes = std::size_t{64} << 10;  // 64 KiB
inline constexpr std::size_t kMaxCachedBytes = std::size_t{1} << 30;   // 1 GiB

// `bytes` rounded as the cache rounds it (at least `alignment`, a multiple of it; from
// kMinCachedBytes on, its size class: a multiple of a quarter of the largest power of two ≤ bytes).
std::size_t block_size(std::size_t bytes, std::size_t alignment);
// A block of block_size(bytes, alignment) bytes, aligned to `alignment`; null when out of
// memory.
void* take_block(std::size_t bytes, std::size_t alignment);
// Returns a block from take_block(bytes, alignment).
void give_block(void* block, std::size_t bytes, std::size_t alignment);
// The bytes kept for reuse now.
std::size_t cached_block_bytes();
// Releases every kept block; the high-water mark starts again from the blocks in use now.
void release_cached_blocks();

}  // namespace refold::detail
