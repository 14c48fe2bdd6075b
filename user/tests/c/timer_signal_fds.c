/*
 * timerfd and signalfd: a timer's expirations read as a count (one shot,
 * periodic, absolute on CLOCK_REALTIME), seen by poll and epoll; signals
 * of a mask read as signalfd_siginfo records (kill, sigqueue with a value,
 * a child's SIGCHLD with its status), a new mask for the same descriptor,
 * a blocking read woken by another process's signal; the argument errors.
 * Counts of periodic expirations are checked as ranges, never exactly.
 */
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static long elapsed_ms(struct timespec from) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (now.tv_sec - from.tv_sec) * 1000 + (now.tv_nsec - from.tv_nsec) / 1000000;
}

static void timers(void) {
    int timer = timerfd_create(CLOCK_MONOTONIC, 0);
    EXPECT("timerfd_create(CLOCK_MONOTONIC)", timer >= 0);
    struct itimerspec current;
    CHECK("timerfd_gettime of an unarmed timer", timerfd_gettime(timer, &current));
    EXPECT("  disarmed", current.it_value.tv_sec == 0 && current.it_value.tv_nsec == 0);

    struct itimerspec once = {{0, 0}, {0, 50000000}};
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    CHECK("timerfd_settime 50 ms, one shot", timerfd_settime(timer, 0, &once, NULL));
    uint64_t count = 0;
    CHECK("  a blocking read", read(timer, &count, sizeof count));
    long took = elapsed_ms(start);
    printf("  expirations %llu, after 40 ms to 5 s: %s\n", (unsigned long long)count, took >= 40 && took < 5000 ? "yes" : "no");

    struct itimerspec periodic = {{0, 20000000}, {0, 20000000}}, old;
    timerfd_settime(timer, 0, &periodic, NULL);
    usleep(110000);
    read(timer, &count, sizeof count);
    EXPECT("periodic every 20 ms, read after 110 ms: 3 to 20 expirations", count >= 3 && count <= 20);
    timerfd_gettime(timer, &current);
    EXPECT("  timerfd_gettime: the interval, and time left", current.it_interval.tv_nsec == 20000000 && current.it_value.tv_nsec > 0);
    struct itimerspec off = {{0, 0}, {0, 0}};
    CHECK("  disarm", timerfd_settime(timer, 0, &off, &old));
    EXPECT("  the old setting's interval", old.it_interval.tv_nsec == 20000000);
    close(timer);

    int nonblocking = timerfd_create(CLOCK_REALTIME, TFD_NONBLOCK | TFD_CLOEXEC);
    CHECK("a nonblocking read of an unexpired timer", read(nonblocking, &count, sizeof count));
    struct itimerspec absolute = {{0, 0}, time_after_ms(CLOCK_REALTIME, 50)};
    CHECK("timerfd_settime absolute on CLOCK_REALTIME", timerfd_settime(nonblocking, TFD_TIMER_ABSTIME, &absolute, NULL));
    struct pollfd entry = {nonblocking, POLLIN, 0};
    CHECK("  poll until it expires", poll(&entry, 1, 5000));
    printf("  revents %#x\n", entry.revents);
    int epoll = epoll_create1(0);
    struct epoll_event event = {EPOLLIN, {.u64 = 7}}, got;
    epoll_ctl(epoll, EPOLL_CTL_ADD, nonblocking, &event);
    CHECK("  epoll_wait sees it", epoll_wait(epoll, &got, 1, 1000));
    CHECK("  read", read(nonblocking, &count, sizeof count));
    printf("  expirations %llu; epoll after the read: %d\n", (unsigned long long)count, epoll_wait(epoll, &got, 1, 0));
    close(epoll);

    CHECK("a read of 4 bytes", read(nonblocking, &count, 4));
    CHECK("a write", write(nonblocking, &count, sizeof count));
    CHECK("timerfd_create(CLOCK_PROCESS_CPUTIME_ID)", timerfd_create(CLOCK_PROCESS_CPUTIME_ID, 0));
    CHECK("timerfd_create with a bad flag", timerfd_create(CLOCK_MONOTONIC, 1));
    CHECK("timerfd_settime CANCEL_ON_SET without ABSTIME", timerfd_settime(nonblocking, TFD_TIMER_CANCEL_ON_SET, &once, NULL));
    struct itimerspec bad = {{0, 0}, {0, 1000000000}};
    CHECK("timerfd_settime with a bad time", timerfd_settime(nonblocking, 0, &bad, NULL));
    int counter = eventfd(0, 0);
    CHECK("timerfd_settime of an eventfd", timerfd_settime(counter, 0, &once, NULL));
    CHECK("timerfd_gettime of a bad descriptor", timerfd_gettime(999, &current));
    close(counter);
    close(nonblocking);
}

static void signals(void) {
    sigset_t blocked, mask;
    sigemptyset(&blocked);
    sigaddset(&blocked, SIGUSR1);
    sigaddset(&blocked, SIGUSR2);
    sigaddset(&blocked, SIGCHLD);
    sigprocmask(SIG_BLOCK, &blocked, NULL);
    sigemptyset(&mask);
    sigaddset(&mask, SIGUSR1);
    int reader = signalfd(-1, &mask, SFD_NONBLOCK);
    EXPECT("signalfd for SIGUSR1", reader >= 0);
    struct signalfd_siginfo info;
    CHECK("  a read with nothing pending", read(reader, &info, sizeof info));
    kill(getpid(), SIGUSR1);
    struct pollfd entry = {reader, POLLIN, 0};
    CHECK("  poll after kill", poll(&entry, 1, 1000));
    CHECK("  read", read(reader, &info, sizeof info));
    printf("  signo %u code %d from this process: %s\n", info.ssi_signo, info.ssi_code, info.ssi_pid == (uint32_t)getpid() ? "yes" : "no");
    union sigval value = {.sival_int = 77};
    sigqueue(getpid(), SIGUSR1, value);
    read(reader, &info, sizeof info);
    printf("  sigqueue: signo %u code %d int %d\n", info.ssi_signo, info.ssi_code, info.ssi_int);

    kill(getpid(), SIGUSR2);
    CHECK("  SIGUSR2 is not in the mask", read(reader, &info, sizeof info));
    sigaddset(&mask, SIGUSR2);
    CHECK("signalfd with a new mask for the same descriptor", signalfd(reader, &mask, 0) == reader);
    CHECK("  read", read(reader, &info, sizeof info));
    printf("  signo %u\n", info.ssi_signo);
    CHECK("  a read of 64 bytes", read(reader, &info, 64));

    /* Two pending signals, one read with room for both. */
    kill(getpid(), SIGUSR1);
    kill(getpid(), SIGUSR2);
    struct signalfd_siginfo both[4];
    CHECK("  one read takes both pending", read(reader, both, sizeof both));
    close(reader);

    /* A blocking read woken by another process's signal. */
    int blocking = signalfd(-1, &mask, 0);
    pid_t parent = getpid();
    pid_t child = fork();
    if (child == 0) {
        usleep(50000);
        kill(parent, SIGUSR2);
        _exit(3);
    }
    CHECK("a blocking read until another process signals", read(blocking, &info, sizeof info));
    printf("  signo %u from the child: %s\n", info.ssi_signo, info.ssi_pid == (uint32_t)child ? "yes" : "no");
    close(blocking);

    /* The child's SIGCHLD, read with its status. */
    sigset_t children;
    sigemptyset(&children);
    sigaddset(&children, SIGCHLD);
    int child_reader = signalfd(-1, &children, 0);
    CHECK("a read of SIGCHLD", read(child_reader, &info, sizeof info));
    printf("  signo %u code %d status %d from the child: %s\n", info.ssi_signo, info.ssi_code, info.ssi_status, info.ssi_pid == (uint32_t)child ? "yes" : "no");
    waitpid(child, NULL, 0);
    close(child_reader);

    CHECK("signalfd4 with a mask size of 4", syscall(SYS_signalfd4, -1, &mask, 4, 0));
    CHECK("signalfd4 with a bad flag", syscall(SYS_signalfd4, -1, &mask, 8, 1));
    CHECK("signalfd on a descriptor that is not one", signalfd(0, &mask, 0));
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    timers();
    signals();
    return 0;
}
