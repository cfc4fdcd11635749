// refold/memory.h: live storage bytes, their peak, and the memory limit.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "refold/memory.h"
#include "refold/refold.h"
#include "testing/error_table.h"

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

// docs/reliability.md G1: set_memory_limit bounds live tensor bytes; the process-wide limit is
// restored by each test (the tests share one process).
class MemoryLimit : public ::testing::Test {
 protected:
  void TearDown() override { set_memory_limit(0); }
};

TEST_F(MemoryLimit, RefusesAnAllocationPastTheLimitBeforeTakingIt) {
  const std::size_t base = memory_stats().current_bytes;
  reset_peak_memory();
  set_memory_limit(base + (std::size_t{1} << 20));  // 1 MiB above what is live now
  EXPECT_EQ(memory_limit(), base + (std::size_t{1} << 20));
  const Tensor a = zeros({100'000});  // 400 000 bytes: within the limit
  try {
    const Tensor b = empty({1, 3, 400, 300});  // 1 440 000 bytes: a + b is over
    ADD_FAILURE() << "allocated " << b.description();
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("would allocate 1.4 MiB (float32[1, 3, 400, 300]) with "), std::string::npos)
        << m;
    EXPECT_NE(m.find(" live > memory limit "), std::string::npos) << m;
  }
  // Nothing was taken: live bytes and the peak are what they were before the request.
  EXPECT_EQ(memory_stats().current_bytes, base + 400'000);
  EXPECT_EQ(memory_stats().peak_bytes, base + 400'000);
}

TEST_F(MemoryLimit, NamesTheSizesInTheMessage) {
  set_memory_limit(std::size_t{2} << 30);
  EXPECT_TRUE(testing::throws_error(
      [] {
        empty({1, 3, 40000, 9000});
      },
      "would allocate 4.0 GiB (float32[1, 3, 40000, 9000]) with "));
  EXPECT_TRUE(testing::throws_error(
      [] {
        empty({1, 3, 40000, 9000});
      },
      "> memory limit 2.0 GiB (set_memory_limit, --max-memory)"));
}

TEST_F(MemoryLimit, AllocationsWithinTheLimitAndViewsSucceed) {
  const std::size_t base = memory_stats().current_bytes;
  set_memory_limit(base + 8000);
  Tensor a = zeros({1000});  // 4000 bytes
  const Tensor b = ones({1000});
  EXPECT_EQ(memory_stats().current_bytes, base + 8000);  // exactly at the limit is allowed
  {
    const Tensor view = a.reshape({10, 100});  // a view takes no storage
    EXPECT_EQ(view.numel(), 1000);
  }
  EXPECT_THROW(empty({1}), Error);  // one more byte is not
  a = Tensor();                     // freeing makes room again
  EXPECT_NO_THROW(empty({1000}));
}

TEST_F(MemoryLimit, ZeroMeansNoLimitAndIsTheDefault) {
  EXPECT_EQ(memory_limit(), 0u);
  set_memory_limit(1);
  EXPECT_THROW(empty({16}), Error);
  set_memory_limit(0);
  EXPECT_EQ(memory_limit(), 0u);
  EXPECT_NO_THROW(empty({1 << 20}));
}

TEST_F(MemoryLimit, AFailedOpLeavesLiveBytesAsBefore) {
  const Tensor x = randn({1, 8, 64, 64});  // 128 KiB
  const std::size_t before = memory_stats().current_bytes;
  set_memory_limit(before + 100'000);
  // relu's output, the channels_last copy and the concatenation each want 128 KiB or more.
  EXPECT_THROW(functional::relu(x), Error);
  EXPECT_THROW(x.contiguous(MemoryFormat::ChannelsLast), Error);
  EXPECT_THROW(functional::cat({x, x}, 1), Error);
  EXPECT_EQ(memory_stats().current_bytes, before);
  set_memory_limit(0);
  EXPECT_NO_THROW(functional::relu(x));
}

TEST_F(MemoryLimit, HoldsAcrossThreads) {
  const std::size_t base = memory_stats().current_bytes;
  set_memory_limit(base + 4 * 4096);
  std::vector<std::thread> threads;
  std::atomic<int> refused{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 500; ++i) {
        try {
          const Tensor x = empty({1024});  // 4096 bytes; at most 4 alive at once
          EXPECT_LE(memory_stats().current_bytes, base + 4 * 4096);
        } catch (const Error&) {
          ++refused;
        }
      }
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(memory_stats().current_bytes, base);
}

}  // namespace
}  // namespace refold
