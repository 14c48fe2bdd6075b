/* Time and system information: clocks move forward, sleeps last, uname
 * looks like Linux, random bytes come, limits, affinity and getcpu answer, and
 * unknown system calls are ENOSYS. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <sys/time.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include "check.h"

static int64_t nanoseconds(clockid_t clock) {
    struct timespec now;
    clock_gettime(clock, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

int main(void) {
    int64_t before = nanoseconds(CLOCK_MONOTONIC);
    struct timespec pause = {0, 50 * 1000 * 1000};
    CHECK("nanosleep", nanosleep(&pause, NULL));
    int64_t slept = nanoseconds(CLOCK_MONOTONIC) - before;
    EXPECT("slept at least 50 ms", slept >= 50 * 1000 * 1000);
    EXPECT("slept under 2 s", slept < 2000LL * 1000 * 1000);
    EXPECT("realtime after 2020", nanoseconds(CLOCK_REALTIME) > 1577836800LL * 1000000000);
    struct timeval tv;
    CHECK("gettimeofday", gettimeofday(&tv, NULL));
    EXPECT("gettimeofday after 2020", tv.tv_sec > 1577836800);
    CHECK("clock_gettime bad clock", clock_gettime(99, &pause));
    pause.tv_nsec = 2000000000;
    CHECK("nanosleep bad", nanosleep(&pause, NULL));
    struct utsname name;
    CHECK("uname", uname(&name));
    printf("sysname %s machine %s\n", name.sysname, name.machine);
    unsigned char random[32] = {0};
    CHECK("getrandom", getrandom(random, sizeof random, 0));
    int nonzero = 0;
    for (int i = 0; i < 32; i++)
        nonzero += random[i] != 0;
    EXPECT("random bytes vary", nonzero > 16);
    CHECK("getrandom bad flags", getrandom(random, 4, 0x100));
    struct rlimit limit;
    CHECK("getrlimit nofile", getrlimit(RLIMIT_NOFILE, &limit));
    EXPECT("nofile at least 256", limit.rlim_cur >= 256);
    CHECK("getrlimit bad", getrlimit(999, &limit));
    cpu_set_t cpus;
    CHECK("sched_getaffinity", sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? 0 : -1);
    EXPECT("at least one cpu", CPU_COUNT(&cpus) >= 1);
    unsigned cpu = 999, node = 999;
    CHECK("getcpu", syscall(SYS_getcpu, &cpu, &node, NULL));
    EXPECT("  a CPU of the machine, node 0", (long)cpu < sysconf(_SC_NPROCESSORS_ONLN) && node == 0);
    EXPECT("  sched_getcpu agrees in range", sched_getcpu() >= 0 && sched_getcpu() < sysconf(_SC_NPROCESSORS_ONLN));
    CHECK("getcpu with null pointers", syscall(SYS_getcpu, NULL, NULL, NULL));
    CHECK("getcpu into a bad pointer", syscall(SYS_getcpu, (void *)8, NULL, NULL));
    struct sysinfo info;
    CHECK("sysinfo", sysinfo(&info));
    EXPECT("some memory", info.totalram > 0);
    CHECK("getuid", getuid());
    CHECK("geteuid", geteuid());
    CHECK("unknown system call", syscall(1000));
    CHECK("sched_yield", sched_yield());
    return 0;
}
