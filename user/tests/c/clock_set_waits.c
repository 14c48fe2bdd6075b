/*
 * Waits until a CLOCK_REALTIME time follow the clock when it is set (as
 * Linux's absolute timers do): set past the limit, they end at once; set
 * back, they wait on. A POSIX timer armed for such a time expires too. Waits on the monotonic clock or for a span are not
 * moved. Raw futex calls, because musl's timed waits turn the limit into
 * a relative one first. The clock is put back at the end. Prints only
 * results and whether each wait lasted about as long as it should.
 */
#include <fcntl.h>
#include <mqueue.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

#define FUTEX_WAIT_BITSET 9
#define FUTEX_PRIVATE_FLAG 128
#define FUTEX_CLOCK_REALTIME 256
#define FUTEX_BITSET_MATCH_ANY 0xffffffff

/* A wall-clock limit this far on: long enough that a wait which ignores
 * the clock being set lasts clearly longer than one which follows it. */
#define LIMIT_SECONDS 20

enum wait_kind { FUTEX_REALTIME, NANOSLEEP_REALTIME, MQ_RECEIVE, FUTEX_MONOTONIC };

struct waiter {
    enum wait_kind kind;
    struct timespec limit;
    long result;
    int error;
    long lasted_ms;
};

static mqd_t queue;

static long ms_since(struct timespec from) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (now.tv_sec - from.tv_sec) * 1000 + (now.tv_nsec - from.tv_nsec) / 1000000;
}

static void *wait_once(void *argument) {
    struct waiter *waiter = argument;
    static uint32_t word;
    struct timespec start;
    char message[64];
    clock_gettime(CLOCK_MONOTONIC, &start);
    errno = 0;
    switch (waiter->kind) {
    case FUTEX_REALTIME:
        waiter->result = syscall(SYS_futex, &word, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME, 0,
                                 &waiter->limit, NULL, FUTEX_BITSET_MATCH_ANY);
        waiter->error = errno;
        break;
    case NANOSLEEP_REALTIME:
        waiter->error = clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &waiter->limit, NULL);
        waiter->result = waiter->error ? -1 : 0;
        break;
    case MQ_RECEIVE:
        waiter->result = mq_timedreceive(queue, message, sizeof message, NULL, &waiter->limit);
        waiter->error = errno;
        break;
    case FUTEX_MONOTONIC:
        waiter->result = syscall(SYS_futex, &word, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, 0, &waiter->limit, NULL,
                                 FUTEX_BITSET_MATCH_ANY);
        waiter->error = errno;
        break;
    }
    __atomic_store_n(&waiter->lasted_ms, ms_since(start), __ATOMIC_RELEASE);
    return NULL;
}

static void set_clock_by(long seconds) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    now.tv_sec += seconds;
    if (clock_settime(CLOCK_REALTIME, &now) != 0)
        printf("clock_settime by %ld s: %s\n", seconds, errno_name(errno));
}

static void print_end(const char *label, const struct waiter *waiter) {
    printf("%s: %ld %s\n", label, waiter->result, waiter->result < 0 ? errno_name(waiter->error) : "OK");
}

static const char *const names[] = {"futex until a realtime time", "clock_nanosleep until a realtime time",
                                    "mq_timedreceive until a realtime time"};

/* Each realtime wait, with the clock set a long way past its limit while
 * it waits: it ends soon after, not at the uptime it first stood for. */
static void clock_set_past_the_limit(void) {
    struct waiter waiters[3];
    pthread_t threads[3];
    for (int i = 0; i < 3; i++) {
        waiters[i] = (struct waiter){.kind = (enum wait_kind)i, .limit = time_after_ms(CLOCK_REALTIME, LIMIT_SECONDS * 1000)};
        pthread_create(&threads[i], NULL, wait_once, &waiters[i]);
    }
    usleep(200000);
    set_clock_by(1000);
    for (int i = 0; i < 3; i++) {
        pthread_join(threads[i], NULL);
        print_end(names[i], &waiters[i]);
        printf("  ended well before its limit's uptime: %s\n", waiters[i].lasted_ms < LIMIT_SECONDS * 500 ? "yes" : "no");
    }
    set_clock_by(-1000);
}

/* Set back while a realtime wait runs, it does not end when its limit's
 * old uptime passes; set forward again, it ends. */
static void clock_set_back(void) {
    struct waiter waiter = {.kind = FUTEX_REALTIME, .limit = time_after_ms(CLOCK_REALTIME, 300)};
    pthread_t thread;
    pthread_create(&thread, NULL, wait_once, &waiter);
    usleep(100000);
    /* Not far back: a kernel that misses the set forward waits this out. */
    set_clock_by(-LIMIT_SECONDS);
    usleep(600000);
    printf("set back: still waiting after its old limit: %s\n", __atomic_load_n(&waiter.lasted_ms, __ATOMIC_ACQUIRE) == 0 ? "yes" : "no");
    set_clock_by(LIMIT_SECONDS);
    pthread_join(thread, NULL);
    print_end("set back then forward", &waiter);
    printf("  lasted 500 ms to 10 s: %s\n", waiter.lasted_ms >= 500 && waiter.lasted_ms < 10000 ? "yes" : "no");
}

/* A monotonic limit is not moved by the wall clock. */
static void monotonic_wait_ignores_the_clock(void) {
    struct waiter waiter = {.kind = FUTEX_MONOTONIC, .limit = time_after_ms(CLOCK_MONOTONIC, 500)};
    pthread_t thread;
    pthread_create(&thread, NULL, wait_once, &waiter);
    usleep(100000);
    set_clock_by(1000);
    pthread_join(thread, NULL);
    set_clock_by(-1000);
    print_end("futex until a monotonic time, clock set meanwhile", &waiter);
    printf("  lasted 400 ms to 10 s: %s\n", waiter.lasted_ms >= 400 && waiter.lasted_ms < 10000 ? "yes" : "no");
}

/* A POSIX timer armed for an absolute CLOCK_REALTIME time expires when
 * the clock is set past it. */
static void realtime_timer_follows_the_clock(void) {
    sigset_t alarm;
    sigemptyset(&alarm);
    sigaddset(&alarm, SIGUSR1);
    sigprocmask(SIG_BLOCK, &alarm, NULL);
    struct sigevent event = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGUSR1};
    timer_t timer;
    CHECK("timer_create on CLOCK_REALTIME", timer_create(CLOCK_REALTIME, &event, &timer));
    struct itimerspec at = {.it_value = time_after_ms(CLOCK_REALTIME, LIMIT_SECONDS * 1000)};
    CHECK("timer_settime, absolute", timer_settime(timer, TIMER_ABSTIME, &at, NULL));
    struct timespec start, wait = {LIMIT_SECONDS / 2, 0};
    clock_gettime(CLOCK_MONOTONIC, &start);
    set_clock_by(1000);
    int signal = sigtimedwait(&alarm, NULL, &wait);
    set_clock_by(-1000);
    printf("timer's signal: %s\n", signal == SIGUSR1 ? "SIGUSR1" : errno_name(errno));
    printf("  well before its limit's uptime: %s\n", ms_since(start) < LIMIT_SECONDS * 500 ? "yes" : "no");
    timer_delete(timer);
    sigprocmask(SIG_UNBLOCK, &alarm, NULL);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    struct mq_attr attributes = {.mq_maxmsg = 4, .mq_msgsize = 64};
    queue = mq_open("/clock-set-waits", O_RDWR | O_CREAT | O_EXCL, 0600, &attributes);
    CHECK("mq_open", queue < 0 ? -1 : 0);
    mq_unlink("/clock-set-waits");
    clock_set_past_the_limit();
    clock_set_back();
    monotonic_wait_ignores_the_clock();
    realtime_timer_follows_the_clock();
    return 0;
}
