// refold/memory.h: live storage bytes and their peak.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "refold/memory.h"
#include "refold/refold.h"

namespace refold {
namespace {

TEST(MemoryStats, CountsLiveStorageAndItsPeak) {
  const std::size_t base = memory_stats().current_bytes;
  reset_peak_memory();
  EXPECT_EQ(memory_stats().peak_bytes, base);
  {
    const Tensor a = zeros({1000});  // 4000 bytes
    EXPECT_EQ(memory_stats().current_bytes, base + 4000);
    {
      const Tensor b = zeros({10, 10}, DType::BFloat16);  // 200 bytes
      EXPECT_EQ(memory_stats().current_bytes, base + 4200);
      const Tensor view = a.reshape({10, 100});  // a view owns no storage
      EXPECT_EQ(memory_stats().current_bytes, base + 4200);
    }
    EXPECT_EQ(memory_stats().current_bytes, base + 4000);
    EXPECT_EQ(memory_stats().peak_bytes, base + 4200);
  }
  EXPECT_EQ(memory_stats().current_bytes, base);
  EXPECT_EQ(memory_stats().peak_bytes, base + 4200);
  reset_peak_memory();
  EXPECT_EQ(memory_stats().peak_bytes, base);
}

TEST(MemoryStats, IsConsistentAcrossThreads) {
  const std::size_t base = memory_stats().current_bytes;
  reset_peak_memory();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([] {
      for (int i = 0; i < 2000; ++i) {
        const Tensor x = empty({64 + i % 7});
        (void)x;
      }
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(memory_stats().current_bytes, base);
  // At most the four threads' largest tensors were alive at once.
  EXPECT_GE(memory_stats().peak_bytes, base + 64 * 4);
  EXPECT_LE(memory_stats().peak_bytes, base + 4 * 70 * 4);
}

}  // namespace
}  // namespace refold
