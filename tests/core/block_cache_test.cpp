// core/block_cache.h: large blocks come back for the next request of their size; small ones go
// to the C allocator; the kept bytes are bounded and not counted as live tensor memory.
#include "core/block_cache.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/stand_in.h"
#include "refold/memory.h"
#include "refold/tensor.h"

namespace refold {
namespace {

class BlockCache : public ::testing::Test {
 protected:
  void SetUp() override { detail::release_cached_blocks(); }
  void TearDown() override { detail::release_cached_blocks(); }
};

TEST_F(BlockCache, RoundsLargeBlocksToSizeClassesAndSmallOnesToTheAlignment) {
  constexpr std::size_t KiB = 1024, MiB = 1024 * KiB;
  EXPECT_EQ(detail::block_size(0, 64), 64u);
  EXPECT_EQ(detail::block_size(65, 64), 128u);
  // Four classes per octave: 1 KiB + 1 byte → 1.25 KiB; 16 KiB + 1 → 20; 128 KiB + 1 → 160;
  // 1 MiB exactly stays; 1 MiB + 1 → 1.25; 1.6 MiB → 1.75; 3 MiB (between 2 and 4) → 3.
  EXPECT_EQ(detail::kMinCachedBytes, KiB);  // glibc's large-bin requests start at 1 KiB
  EXPECT_EQ(detail::block_size(detail::kMinCachedBytes + 1, 64), KiB + KiB / 4);
  EXPECT_EQ(detail::block_size(16 * KiB + 1, 64), 20 * KiB);
  EXPECT_EQ(detail::block_size(128 * KiB + 1, 64), 160 * KiB);
  EXPECT_EQ(detail::block_size(MiB, 64), MiB);
  EXPECT_EQ(detail::block_size(MiB + 1, 64), MiB + MiB / 4);
  EXPECT_EQ(detail::block_size(MiB + 6 * MiB / 10, 64), MiB + 3 * MiB / 4);
  EXPECT_EQ(detail::block_size(3 * MiB, 64), 3 * MiB);
  for (std::size_t bytes = detail::kMinCachedBytes; bytes < 64 * MiB; bytes = bytes * 9 / 7) {
    const std::size_t size = detail::block_size(bytes, 64);
    EXPECT_GE(size, bytes);
    EXPECT_LE(size, bytes + bytes / 4) << bytes;
    EXPECT_EQ(size % 256, 0u) << bytes;
    if (bytes >= 16 * KiB) {
      EXPECT_EQ(size % (4 * KiB), 0u) << bytes;  // whole pages from here
    }
  }
}

// A 100 KB activation (7×7×512, a MobileNet's last stage) is kept when freed and serves the
// next run's: glibc would trim it off the top of its heap and fault it back in.
TEST_F(BlockCache, KeepsBlocksBelowGlibcsTrimThreshold) {
  const std::size_t kept = detail::cached_block_bytes();
  const void* first = nullptr;
  {
    const Tensor a = empty({1, 512, 7, 7});
    first = a.data_ptr();
  }
  EXPECT_EQ(detail::cached_block_bytes(), kept + detail::block_size(512 * 49 * 4, 64));
  const Tensor b = empty({1, 512, 7, 7});
  EXPECT_EQ(b.data_ptr(), first);
  EXPECT_EQ(detail::cached_block_bytes(), kept);
}

// A tensor a little smaller than a freed one, in the same class, takes its block: what lets one
// layer's output reuse the previous layer's block when their sizes differ slightly.
TEST_F(BlockCache, ABlockServesTheNextRequestOfItsClass) {
  const void* first = nullptr;
  {
    const Tensor a = empty({1, 160, 56, 56});  // 1.91 MiB
    first = a.data_ptr();
  }
  const Tensor b = empty({1, 152, 56, 56});  // 1.82 MiB: the same class (1.75–2 MiB]
  EXPECT_EQ(b.data_ptr(), first);
}

// A block between glibc's mmap threshold and 256 KiB (MobileViT's [4, 64, 240] attention tensors)
// is kept too: the next tensor of its size gets the same, already resident, memory.
TEST_F(BlockCache, AMidSizedBlockIsKept) {
  const void* first = nullptr;
  {
    const Tensor a = empty({4, 64, 240});  // 240 KiB
    first = a.data_ptr();
  }
  const Tensor b = empty({3, 4, 4, 64, 20});  // the same 240 KiB, transposed
  EXPECT_EQ(b.data_ptr(), first);
}

// With no block of its own class kept, a request takes the smallest kept block up to
// kLargestFit times its class, and the block goes back under its own size: the next request of
// that size gets it again.
TEST_F(BlockCache, ARequestTakesTheSmallestLargerBlockUpToTwiceItsClass) {
  constexpr std::size_t MiB = 1024 * 1024;
  void* two = detail::take_block(2 * MiB, 64);
  void* three = detail::take_block(3 * MiB, 64);
  void* five = detail::take_block(5 * MiB, 64);
  detail::give_block(five, 5 * MiB, 64);
  detail::give_block(three, 3 * MiB, 64);
  detail::give_block(two, 2 * MiB, 64);
  EXPECT_EQ(detail::cached_block_bytes(), 10 * MiB);
  void* small = detail::take_block(MiB + MiB / 2, 64);  // class 1.5 MiB: the 2 MiB block fits
  EXPECT_EQ(small, two);
  void* middle = detail::take_block(2 * MiB + MiB / 2, 64);  // 2.5 MiB: the 3 MiB block
  EXPECT_EQ(middle, three);
  EXPECT_EQ(detail::cached_block_bytes(), 5 * MiB);
  void* far = detail::take_block(2 * MiB, 64);  // 5 MiB is more than 2× its class: a new block
  EXPECT_NE(far, five);
  detail::give_block(far, 2 * MiB, 64);
  detail::give_block(small, MiB + MiB / 2, 64);  // back as the 2 MiB block it is
  detail::give_block(middle, 2 * MiB + MiB / 2, 64);
  EXPECT_EQ(detail::cached_block_bytes(), 12 * MiB);
  void* again = detail::take_block(3 * MiB, 64);
  EXPECT_EQ(again, three);
  detail::give_block(again, 3 * MiB, 64);
}

TEST_F(BlockCache, AFreedLargeTensorsMemoryServesTheNextOfItsSize) {
  const Shape sizes = {1, 64, 64, 64};  // 1 MiB of float32
  const void* first = nullptr;
  {
    const Tensor a = empty(sizes);
    first = a.data_ptr();
  }
  EXPECT_GE(detail::cached_block_bytes(), std::size_t{1} << 20);
  const Tensor b = empty(sizes);
  EXPECT_EQ(b.data_ptr(), first);
  EXPECT_EQ(detail::cached_block_bytes(), 0u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.data_ptr()) % 64, 0u);  // still aligned
  // Live memory counts the tensor, not what the cache keeps.
  EXPECT_GE(memory_stats().current_bytes, std::size_t{1} << 20);
}

// Below 1 KiB glibc serves a block from its small bins without consolidating; from 1 KiB (an
// attention model's 4 heads × 49 tokens × 16 floats is 12.5 KB) the cache keeps it.
TEST_F(BlockCache, BlocksBelowOneKibAreNotKept) {
  { const Tensor a = empty({15, 16}); }  // 960 bytes
  EXPECT_EQ(detail::cached_block_bytes(), 0u);
  { const Tensor b = empty({16, 16}); }  // 1 KiB
  EXPECT_EQ(detail::cached_block_bytes(), 1024u);
}

// A stand-in run meets each size once: its blocks are given back, never kept, even when freed
// after the run ended; the next request outside one is served as before.
TEST_F(BlockCache, BlocksOfAStandInRunAreNotKept) {
  Tensor survivor;
  {
    const StandInRun stand_in;
    { const Tensor a = empty({1, 64, 64, 64}); }  // 1 MiB: mapped
    { const Tensor b = empty({1, 16, 28, 28}); }  // 49 KiB: the C allocator's
    survivor = empty({1, 32, 56, 56});            // freed after the run
    EXPECT_EQ(detail::cached_block_bytes(), 0u);
  }
  EXPECT_EQ(detail::stand_in_blocks(), 1u);
  survivor = Tensor();
  EXPECT_EQ(detail::stand_in_blocks(), 0u);
  EXPECT_EQ(detail::cached_block_bytes(), 0u);
  { const Tensor c = empty({1, 64, 64, 64}); }
  EXPECT_GE(detail::cached_block_bytes(), std::size_t{1} << 20);
}

TEST_F(BlockCache, KeepsAtMostItsBound) {
  const std::size_t size = std::size_t{64} << 20;  // 64 MiB blocks
  const std::size_t count = detail::kMaxCachedBytes / size + 2;
  std::vector<void*> blocks;
  for (std::size_t i = 0; i < count; ++i) blocks.push_back(detail::take_block(size, 64));
  for (void* b : blocks) detail::give_block(b, size, 64);
  EXPECT_LE(detail::cached_block_bytes(), detail::kMaxCachedBytes);
  EXPECT_GE(detail::cached_block_bytes(), detail::kMaxCachedBytes - size);
}

}  // namespace
}  // namespace refold
