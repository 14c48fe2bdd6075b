/*
 * futex time limits on each clock: FUTEX_WAIT takes a relative time,
 * FUTEX_WAIT_BITSET an absolute one on CLOCK_MONOTONIC, or on
 * CLOCK_REALTIME with FUTEX_CLOCK_REALTIME (glibc's timed waits use both).
 * Each wait must last about as long as asked: not end at once, not hang.
 */
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

/* From <linux/futex.h>, which musl's compiler wrapper does not see. */
#define FUTEX_WAIT 0
#define FUTEX_WAIT_BITSET 9
#define FUTEX_PRIVATE_FLAG 128
#define FUTEX_CLOCK_REALTIME 256
#define FUTEX_BITSET_MATCH_ANY 0xffffffff

static long elapsed_ms(struct timespec from) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (now.tv_sec - from.tv_sec) * 1000 + (now.tv_nsec - from.tv_nsec) / 1000000;
}

static void wait_on(const char *label, int operation, const struct timespec *limit) {
    static uint32_t word;
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    CHECK(label, syscall(SYS_futex, &word, operation, 0, limit, NULL, FUTEX_BITSET_MATCH_ANY));
    long took = elapsed_ms(start);
    printf("  lasted 40 ms to 5 s: %s\n", took >= 40 && took < 5000 ? "yes" : "no");
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    struct timespec relative = {0, 50000000};
    wait_on("FUTEX_WAIT, 50 ms relative", FUTEX_WAIT | FUTEX_PRIVATE_FLAG, &relative);
    struct timespec monotonic = time_after_ms(CLOCK_MONOTONIC, 50);
    wait_on("FUTEX_WAIT_BITSET, monotonic deadline 50 ms on", FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, &monotonic);
    struct timespec realtime = time_after_ms(CLOCK_REALTIME, 50);
    wait_on("FUTEX_WAIT_BITSET|CLOCK_REALTIME, deadline 50 ms on", FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME, &realtime);
    struct timespec past = {1, 0};
    CHECK("FUTEX_WAIT_BITSET, a deadline long past", syscall(SYS_futex, &(uint32_t){0}, FUTEX_WAIT_BITSET, 0, &past, NULL, FUTEX_BITSET_MATCH_ANY));
    return 0;
}
