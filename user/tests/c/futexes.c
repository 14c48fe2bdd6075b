/*
 * The whole futex: wakes (and Linux's "at least one"), bitsets, REQUEUE and
 * CMP_REQUEUE, WAKE_OP, process-shared words in MAP_SHARED memory across
 * fork (and that a private wake does not reach them), PI locks, robust
 * lists of a process that dies holding a lock, and the argument errors.
 *
 * Whether threads are waiting yet is asked of the kernel, never guessed
 * from a sleep: FUTEX_REQUEUE from a word to itself wakes no one and
 * returns how many wait there.
 */
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

/* From <linux/futex.h>, which musl's compiler wrapper does not see. */
#define FUTEX_WAIT 0
#define FUTEX_WAKE 1
#define FUTEX_REQUEUE 3
#define FUTEX_CMP_REQUEUE 4
#define FUTEX_WAKE_OP 5
#define FUTEX_LOCK_PI 6
#define FUTEX_UNLOCK_PI 7
#define FUTEX_TRYLOCK_PI 8
#define FUTEX_WAIT_BITSET 9
#define FUTEX_WAKE_BITSET 10
#define FUTEX_PRIVATE_FLAG 128
#define FUTEX_WAITERS 0x80000000u
#define FUTEX_TID_MASK 0x3fffffffu
#define FUTEX_OP(op, oparg, cmp, cmparg) (((op) << 28) | ((cmp) << 24) | ((oparg) << 12) | (cmparg))
#define FUTEX_OP_SET 0
#define FUTEX_OP_ADD 1
#define FUTEX_OP_CMP_EQ 0
#define FUTEX_OP_CMP_GT 4

static long futex(volatile uint32_t *word, int operation, uint32_t value, const void *limit_or_count, volatile uint32_t *second, uint32_t third) {
    return syscall(SYS_futex, word, operation, value, limit_or_count, second, third);
}

/* How many threads wait on `word` (private or shared operations). */
static long waiting_on(volatile uint32_t *word, int flags) {
    return futex(word, FUTEX_REQUEUE | flags, 0, (void *)(long)INT_MAX, word, 0);
}

/* Waits (at most 10 s) until `count` threads wait on `word`. */
static int await_waiters(volatile uint32_t *word, int flags, long count) {
    for (int tries = 0; tries < 10000; tries++) {
        if (waiting_on(word, flags) == count) {
            return 1;
        }
        usleep(1000);
    }
    return 0;
}

struct waiter {
    volatile uint32_t *word;
    uint32_t bitset;
    pthread_t thread;
    long result;
};

static void *wait_on_word(void *argument) {
    struct waiter *waiter = argument;
    waiter->result = futex(waiter->word, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, 0, NULL, NULL, waiter->bitset);
    return NULL;
}

static void start_waiter(struct waiter *waiter, volatile uint32_t *word, uint32_t bitset) {
    waiter->word = word;
    waiter->bitset = bitset;
    waiter->result = -99;
    pthread_create(&waiter->thread, NULL, wait_on_word, waiter);
}

static void wakes_and_bitsets(void) {
    static volatile uint32_t word;
    struct waiter one, two;
    start_waiter(&one, &word, 1);
    EXPECT("one waiter queued", await_waiters(&word, FUTEX_PRIVATE_FLAG, 1));
    CHECK("FUTEX_WAKE of 0 wakes one (as Linux)", futex(&word, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 0, NULL, NULL, 0));
    pthread_join(one.thread, NULL);
    printf("  the waiter returned %ld\n", one.result);

    start_waiter(&one, &word, 1);
    start_waiter(&two, &word, 2);
    EXPECT("two bitset waiters queued", await_waiters(&word, FUTEX_PRIVATE_FLAG, 2));
    CHECK("FUTEX_WAKE_BITSET 4 meets neither", futex(&word, FUTEX_WAKE_BITSET | FUTEX_PRIVATE_FLAG, 10, NULL, NULL, 4));
    CHECK("FUTEX_WAKE_BITSET 2 wakes the second", futex(&word, FUTEX_WAKE_BITSET | FUTEX_PRIVATE_FLAG, 10, NULL, NULL, 2));
    pthread_join(two.thread, NULL);
    CHECK("FUTEX_WAKE wakes the first", futex(&word, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 10, NULL, NULL, 0));
    pthread_join(one.thread, NULL);
    printf("  both returned %ld %ld\n", one.result, two.result);
}

static void requeues(void) {
    static volatile uint32_t from, to;
    struct waiter waiters[3];
    for (int i = 0; i < 3; i++) {
        start_waiter(&waiters[i], &from, 0xffffffff);
    }
    EXPECT("three waiters queued", await_waiters(&from, FUTEX_PRIVATE_FLAG, 3));
    CHECK("FUTEX_CMP_REQUEUE with a stale value", futex(&from, FUTEX_CMP_REQUEUE | FUTEX_PRIVATE_FLAG, 1, (void *)2L, &to, 5));
    CHECK("FUTEX_CMP_REQUEUE wake 1, move 2", futex(&from, FUTEX_CMP_REQUEUE | FUTEX_PRIVATE_FLAG, 1, (void *)2L, &to, 0));
    CHECK("  left on the first word", waiting_on(&from, FUTEX_PRIVATE_FLAG));
    CHECK("  moved to the second word", waiting_on(&to, FUTEX_PRIVATE_FLAG));
    CHECK("FUTEX_REQUEUE wake 0, move 1 back", futex(&to, FUTEX_REQUEUE | FUTEX_PRIVATE_FLAG, 0, (void *)1L, &from, 0));
    CHECK("FUTEX_WAKE on the first word", futex(&from, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 10, NULL, NULL, 0));
    CHECK("FUTEX_WAKE on the second word", futex(&to, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 10, NULL, NULL, 0));
    for (int i = 0; i < 3; i++) {
        pthread_join(waiters[i].thread, NULL);
    }
    CHECK("FUTEX_REQUEUE with a negative count", futex(&from, FUTEX_REQUEUE | FUTEX_PRIVATE_FLAG, -1, (void *)1L, &to, 0));
}

static void wake_op(void) {
    static volatile uint32_t first, second;
    struct waiter a, b;
    start_waiter(&a, &first, 0xffffffff);
    start_waiter(&b, &second, 0xffffffff);
    EXPECT("a waiter on each word", await_waiters(&first, FUTEX_PRIVATE_FLAG, 1) && await_waiters(&second, FUTEX_PRIVATE_FLAG, 1));
    CHECK("FUTEX_WAKE_OP set 5 if it was 0: wakes both", futex(&first, FUTEX_WAKE_OP | FUTEX_PRIVATE_FLAG, 1, (void *)1L, &second, FUTEX_OP(FUTEX_OP_SET, 5, FUTEX_OP_CMP_EQ, 0)));
    printf("  second word now %u\n", second);
    pthread_join(a.thread, NULL);
    pthread_join(b.thread, NULL);
    second = 0;
    start_waiter(&a, &first, 0xffffffff);
    start_waiter(&b, &second, 0xffffffff);
    EXPECT("a waiter on each word again", await_waiters(&first, FUTEX_PRIVATE_FLAG, 1) && await_waiters(&second, FUTEX_PRIVATE_FLAG, 1));
    CHECK("FUTEX_WAKE_OP add 1 if it was > 100: wakes the first", futex(&first, FUTEX_WAKE_OP | FUTEX_PRIVATE_FLAG, 1, (void *)1L, &second, FUTEX_OP(FUTEX_OP_ADD, 1, FUTEX_OP_CMP_GT, 100)));
    printf("  second word now %u\n", second);
    CHECK("FUTEX_WAKE the second word's waiter", futex(&second, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, NULL, NULL, 0));
    pthread_join(a.thread, NULL);
    pthread_join(b.thread, NULL);
    CHECK("FUTEX_WAKE_OP with an unknown operation", futex(&first, FUTEX_WAKE_OP | FUTEX_PRIVATE_FLAG, 1, (void *)1L, &second, FUTEX_OP(7, 1, 0, 0)));
}

/* A child waits on a word of MAP_SHARED memory; only a shared wake reaches it. */
static void shared_across_fork(void) {
    volatile uint32_t *word = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    *word = 0;
    pid_t child = fork();
    if (child == 0) {
        _exit(futex(word, FUTEX_WAIT, 0, NULL, NULL, 0) == 0 ? 0 : 1);
    }
    EXPECT("the child waits on the shared word", await_waiters(word, 0, 1));
    CHECK("a private wake does not reach another process", futex(word, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, NULL, NULL, 0));
    CHECK("a shared wake does", futex(word, FUTEX_WAKE, 1, NULL, NULL, 0));
    int status;
    waitpid(child, &status, 0);
    EXPECT("  the child's wait returned 0", WIFEXITED(status) && WEXITSTATUS(status) == 0);
    munmap((void *)word, 4096);
}

static volatile uint32_t pi_word;
static volatile int contender_blocks;
/* What the contender saw once the lock was handed over: printed by the
 * main thread after joining it, so the output's order never depends on
 * which thread the scheduler runs first. */
static long contender_locked, contender_unlocked, contender_unlock_errno;
static int contender_named;

static void *pi_contender(void *argument) {
    (void)argument;
    uint32_t me = syscall(SYS_gettid);
    CHECK("  another thread's FUTEX_TRYLOCK_PI", futex(&pi_word, FUTEX_TRYLOCK_PI | FUTEX_PRIVATE_FLAG, 0, NULL, NULL, 0));
    CHECK("  another thread's FUTEX_UNLOCK_PI", futex(&pi_word, FUTEX_UNLOCK_PI | FUTEX_PRIVATE_FLAG, 0, NULL, NULL, 0));
    struct timespec soon = time_after_ms(CLOCK_REALTIME, 50);
    CHECK("  FUTEX_LOCK_PI with a 50 ms limit", futex(&pi_word, FUTEX_LOCK_PI | FUTEX_PRIVATE_FLAG, 0, &soon, NULL, 0));
    contender_blocks = 1;
    contender_locked = futex(&pi_word, FUTEX_LOCK_PI | FUTEX_PRIVATE_FLAG, 0, NULL, NULL, 0);
    contender_named = (pi_word & FUTEX_TID_MASK) == me;
    errno = 0;
    contender_unlocked = futex(&pi_word, FUTEX_UNLOCK_PI | FUTEX_PRIVATE_FLAG, 0, NULL, NULL, 0);
    contender_unlock_errno = errno;
    return NULL;
}

static void pi_locks(void) {
    uint32_t me = syscall(SYS_gettid);
    CHECK("FUTEX_LOCK_PI of a free word", futex(&pi_word, FUTEX_LOCK_PI | FUTEX_PRIVATE_FLAG, 0, NULL, NULL, 0));
    EXPECT("  the word holds the owner's id", pi_word == me);
    CHECK("FUTEX_LOCK_PI again by the owner", futex(&pi_word, FUTEX_LOCK_PI | FUTEX_PRIVATE_FLAG, 0, NULL, NULL, 0));
    CHECK("FUTEX_TRYLOCK_PI by the owner", futex(&pi_word, FUTEX_TRYLOCK_PI | FUTEX_PRIVATE_FLAG, 0, NULL, NULL, 0));
    pthread_t thread;
    pthread_create(&thread, NULL, pi_contender, NULL);
    /* Whether the contender is already queued when the lock is released
     * or takes it free a moment later, it ends up owning it. */
    while (!contender_blocks) {
        usleep(1000);
    }
    usleep(20000);
    CHECK("FUTEX_UNLOCK_PI hands the lock over", futex(&pi_word, FUTEX_UNLOCK_PI | FUTEX_PRIVATE_FLAG, 0, NULL, NULL, 0));
    pthread_join(thread, NULL);
    printf("  FUTEX_LOCK_PI after the release: %ld, the word names this thread: %s\n", contender_locked, contender_named ? "yes" : "no");
    printf("  FUTEX_UNLOCK_PI by the new owner: %ld %s\n", contender_unlocked, contender_unlocked < 0 ? errno_name(contender_unlock_errno) : "OK");
    printf("  the word after both released: %u\n", pi_word);
}

/* A child takes a process-shared robust mutex and dies holding it. */
static void robust_across_fork(void) {
    pthread_mutex_t *mutex = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    pthread_mutexattr_t attributes;
    pthread_mutexattr_init(&attributes);
    pthread_mutexattr_setpshared(&attributes, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&attributes, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(mutex, &attributes);
    int ready[2];
    pipe(ready);
    pid_t child = fork();
    if (child == 0) {
        pthread_mutex_lock(mutex);
        write(ready[1], "x", 1);
        usleep(100000);
        _exit(0); /* no unlock: the kernel's robust-list walk marks it */
    }
    char byte;
    read(ready[0], &byte, 1);
    int locked = pthread_mutex_lock(mutex);
    printf("lock of a mutex whose owner died: %s\n", errno_name(locked));
    printf("  pthread_mutex_consistent: %s\n", errno_name(pthread_mutex_consistent(mutex)));
    printf("  unlock: %s\n", errno_name(pthread_mutex_unlock(mutex)));
    printf("  lock again: %s\n", errno_name(pthread_mutex_lock(mutex)));
    pthread_mutex_unlock(mutex);
    waitpid(child, NULL, 0);
    close(ready[0]);
    close(ready[1]);
}

static void robust_list_calls(void) {
    struct {
        void *next;
        long futex_offset;
        void *pending;
    } head = {&head, 0, NULL};
    void *got;
    size_t length;
    CHECK("set_robust_list with a wrong length", syscall(SYS_set_robust_list, &head, sizeof head - 1));
    CHECK("set_robust_list", syscall(SYS_set_robust_list, &head, sizeof head));
    CHECK("get_robust_list of this thread", syscall(SYS_get_robust_list, 0, &got, &length));
    EXPECT("  the same head and length", got == (void *)&head && length == sizeof head);
    CHECK("get_robust_list of no thread", syscall(SYS_get_robust_list, 999999, &got, &length));
}

static void argument_errors(void) {
    static uint32_t words[2] = {1, 0};
    struct timespec bad = {0, 1000000000};
    CHECK("FUTEX_WAKE at a misaligned address", futex((uint32_t *)((char *)words + 1), FUTEX_WAKE, 1, NULL, NULL, 0));
    CHECK("an unknown operation", futex(words, 99, 0, NULL, NULL, 0));
    CHECK("FUTEX_WAIT when the word moved on", futex(words, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 0, NULL, NULL, 0));
    CHECK("FUTEX_WAIT with a bad time", futex(words + 1, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 0, &bad, NULL, 0));
    CHECK("FUTEX_WAIT_BITSET with an empty bitset", futex(words + 1, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, 0, NULL, NULL, 0));
    CHECK("FUTEX_WAKE_BITSET with an empty bitset", futex(words + 1, FUTEX_WAKE_BITSET | FUTEX_PRIVATE_FLAG, 1, NULL, NULL, 0));
    CHECK("FUTEX_WAIT on an unmapped word", futex((uint32_t *)16, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 0, NULL, NULL, 0));
    CHECK("a shared FUTEX_WAKE on an unmapped word", futex((uint32_t *)16, FUTEX_WAKE, 1, NULL, NULL, 0));
    CHECK("a private FUTEX_WAKE on an unmapped word", futex((uint32_t *)16, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, NULL, NULL, 0));
    CHECK("FUTEX_WAKE with FUTEX_CLOCK_REALTIME", futex(words, FUTEX_WAKE | 256, 1, NULL, NULL, 0));
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    wakes_and_bitsets();
    requeues();
    wake_op();
    shared_across_fork();
    pi_locks();
    robust_across_fork();
    argument_errors();
    robust_list_calls();
    return 0;
}
