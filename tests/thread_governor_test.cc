// The CPU thread governor: its policy (cores left to this process), the /proc parsers it reads
// through, and one real reading.
#include "engine/ops/cpu/thread_governor.h"

#include <gtest/gtest.h>

namespace xlate {
namespace {

TEST(ThreadsForShare, FollowsTheCoresOthersLeave) {
  EXPECT_EQ(threads_for_share(2, 2, 2, 0.1), 2);   // idle but for a light client
  EXPECT_EQ(threads_for_share(2, 2, 2, 1.0), 1);   // a busy loop on one of 2 cores
  EXPECT_EQ(threads_for_share(2, 2, 2, 0.67), 1);  // the loop's share beside 2 server threads
  EXPECT_EQ(threads_for_share(8, 8, 8, 2.2), 6);
  EXPECT_EQ(threads_for_share(2, 2, 2, 5.0), 1);   // never fewer than one
  EXPECT_EQ(threads_for_share(4, 8, 8, 0.0), 4);   // never more than asked for
  // A container limited to 2 of 64 busy cores: the others are elsewhere.
  EXPECT_EQ(threads_for_share(64, 2, 64, 50.0), 2);
  EXPECT_EQ(threads_for_share(2, 2, 2, -1.0), 2);  // ticks that went backwards count as none
}

TEST(ProcParsing, MachineBusyTicksSkipIdleAndIowait) {
  // user nice system idle iowait irq softirq steal guest guest_nice
  auto busy =
      machine_busy_ticks("cpu  100 2 30 5000 40 6 7 8 0 0\ncpu0 50 1 15 2500 20 3 3 4 0 0\n");
  ASSERT_TRUE(busy.ok()) << busy.status();
  EXPECT_EQ(*busy, 100 + 2 + 30 + 6 + 7 + 8);
  EXPECT_FALSE(machine_busy_ticks("cpu0 1 2 3 4 5 6 7 8\n").ok());
  EXPECT_FALSE(machine_busy_ticks("cpu 1 2 3\n").ok());
  EXPECT_FALSE(machine_busy_ticks("cpu 1 2 x 4 5 6 7 8\n").ok());
  EXPECT_FALSE(machine_busy_ticks("").ok());
}

TEST(ProcParsing, ProcessBusyTicksCountFromTheEndOfTheName) {
  // A command name with spaces and a parenthesis must not shift the fields.
  const char* stat =
      "4242 (xlate (x) srv) S 1 4242 4242 0 -1 4194560 1000 0 0 0 731 269 0 0 20 0 3 0 100";
  auto busy = process_busy_ticks(stat);
  ASSERT_TRUE(busy.ok()) << busy.status();
  EXPECT_EQ(*busy, 731 + 269);
  EXPECT_FALSE(process_busy_ticks("4242 xlate S 1").ok());
  EXPECT_FALSE(process_busy_ticks("4242 (xlate) S 1 2 3").ok());
}

TEST(CpuThreadGovernor, ReadsThisMachine) {
  EXPECT_GE(usable_cores(), 1);
  CpuThreadGovernor governor(3, absl::ZeroDuration());
  const absl::Time start = absl::Now();
  EXPECT_EQ(governor.threads(start), 3);  // nothing measured yet
  const int later = governor.threads(start + absl::Seconds(1));
  EXPECT_GE(later, 1);
  EXPECT_LE(later, 3);
}

}  // namespace
}  // namespace xlate
