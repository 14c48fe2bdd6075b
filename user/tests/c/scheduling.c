/*
 * Scheduling policies, memory locking, setting the clock and waiting for
 * signals: sched_* by raw system call (musl's wrappers for the per-process
 * ones return ENOSYS by design), mlock/mlockall, clock_settime and
 * settimeofday (the clock is put back), and sigtimedwait/sigwaitinfo with
 * blocked signals, ignored-but-blocked ones and time limits. Prints no
 * times or pids, only what does not depend on the kernel's speed.
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static void scheduling(void) {
    struct sched_param param = {0};
    int policies[] = {SCHED_OTHER, SCHED_FIFO, SCHED_RR, SCHED_BATCH, SCHED_IDLE, 4, -1};
    for (unsigned i = 0; i < sizeof policies / sizeof *policies; i++) {
        printf("policy %d: ", policies[i]);
        CHECK("max", syscall(SYS_sched_get_priority_max, policies[i]));
        printf("policy %d: ", policies[i]);
        CHECK("min", syscall(SYS_sched_get_priority_min, policies[i]));
    }
    CHECK("getscheduler(0)", syscall(SYS_sched_getscheduler, 0));
    CHECK("getscheduler(-1)", syscall(SYS_sched_getscheduler, -1));
    CHECK("getscheduler(no such pid)", syscall(SYS_sched_getscheduler, 999999));
    param.sched_priority = 0;
    CHECK("setscheduler FIFO 0", syscall(SYS_sched_setscheduler, 0, SCHED_FIFO, &param));
    CHECK("setscheduler OTHER NULL", syscall(SYS_sched_setscheduler, 0, SCHED_OTHER, NULL));
    CHECK("setscheduler bad policy", syscall(SYS_sched_setscheduler, 0, 42, &param));
    param.sched_priority = 10;
    CHECK("setscheduler RR 10", syscall(SYS_sched_setscheduler, 0, SCHED_RR, &param));
    CHECK("getscheduler after", syscall(SYS_sched_getscheduler, getpid()));
    param.sched_priority = -1;
    CHECK("getparam", syscall(SYS_sched_getparam, 0, &param));
    printf("priority %d\n", param.sched_priority);
    param.sched_priority = 100;
    CHECK("setparam 100", syscall(SYS_sched_setparam, 0, &param));
    param.sched_priority = 20;
    CHECK("setparam 20", syscall(SYS_sched_setparam, 0, &param));
    struct timespec slice = {-1, -1};
    CHECK("rr_get_interval", syscall(SYS_sched_rr_get_interval, 0, &slice));
    printf("RR slice: %s\n", slice.tv_sec == 0 && slice.tv_nsec > 0 ? "positive, under 1 s" : "other");
    pid_t child = fork();
    if (child == 0) {
        param.sched_priority = -1;
        syscall(SYS_sched_getparam, 0, &param);
        printf("child: policy %ld priority %d\n", syscall(SYS_sched_getscheduler, 0), param.sched_priority);
        exit(0);
    }
    waitpid(child, NULL, 0);
    param.sched_priority = 5;
    CHECK("setscheduler FIFO|RESET_ON_FORK", syscall(SYS_sched_setscheduler, 0, SCHED_FIFO | 0x40000000, &param));
    CHECK("getscheduler with the flag", syscall(SYS_sched_getscheduler, 0));
    child = fork();
    if (child == 0) {
        printf("reset child: policy %ld\n", syscall(SYS_sched_getscheduler, 0));
        exit(0);
    }
    waitpid(child, NULL, 0);
    param.sched_priority = 0;
    CHECK("back to OTHER", syscall(SYS_sched_setscheduler, 0, SCHED_OTHER, &param));
    CHECK("FIFO rr_get_interval", syscall(SYS_sched_rr_get_interval, -1, &slice));
}

static void locking(void) {
    char *page = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK("mlock", mlock(page + 100, 5000));
    CHECK("munlock", munlock(page, 8192));
    munmap(page + 4096, 4096);
    CHECK("mlock over a hole", mlock(page, 8192));
    CHECK("mlockall 0", mlockall(0));
    CHECK("mlockall ONFAULT alone", mlockall(4));
    CHECK("mlockall CURRENT|FUTURE", mlockall(MCL_CURRENT | MCL_FUTURE));
    CHECK("munlockall", munlockall());
}

static void setting_the_clock(void) {
    struct timespec before, set, after, bad = {0, 1000000000};
    clock_gettime(CLOCK_REALTIME, &before);
    CHECK("settime MONOTONIC", clock_settime(CLOCK_MONOTONIC, &before));
    CHECK("settime CPU clock", clock_settime(CLOCK_PROCESS_CPUTIME_ID, &before));
    CHECK("settime bad nanoseconds", clock_settime(CLOCK_REALTIME, &bad));
    set.tv_sec = before.tv_sec + 1000000;
    set.tv_nsec = 0;
    CHECK("settime a million seconds on", clock_settime(CLOCK_REALTIME, &set));
    clock_gettime(CLOCK_REALTIME, &after);
    EXPECT("the clock moved on", after.tv_sec >= set.tv_sec && after.tv_sec < set.tv_sec + 100);
    struct timeval back = {before.tv_sec, 0};
    CHECK("settimeofday back", settimeofday(&back, NULL));
    clock_gettime(CLOCK_REALTIME, &after);
    EXPECT("the clock is back", after.tv_sec >= before.tv_sec && after.tv_sec < before.tv_sec + 100);
}

static void waiting_for_signals(void) {
    sigset_t set;
    siginfo_t info;
    struct timespec zero = {0, 0}, short_wait = {0, 20000000};
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGCHLD);
    sigprocmask(SIG_BLOCK, &set, NULL);
    CHECK("sigtimedwait, none pending, no wait", sigtimedwait(&set, &info, &zero));
    CHECK("sigtimedwait, none pending, 20 ms", sigtimedwait(&set, &info, &short_wait));
    kill(getpid(), SIGUSR1);
    CHECK("sigtimedwait after kill", sigtimedwait(&set, &info, &zero));
    printf("info: signo %d code %d pid is mine %s\n", info.si_signo, info.si_code, info.si_pid == getpid() ? "yes" : "no");
    union sigval carried = {.sival_int = 42};
    sigqueue(getpid(), SIGUSR1, carried);
    CHECK("sigwaitinfo after sigqueue", sigwaitinfo(&set, &info));
    printf("info: code %d value %d\n", info.si_code, info.si_value.sival_int);
    pid_t child = fork();
    if (child == 0)
        exit(3);
    int signal = 0;
    CHECK("sigwait for the blocked, ignored SIGCHLD", sigwait(&set, &signal));
    printf("signal %d\n", signal);
    waitpid(child, NULL, 0);
    struct timespec bad = {0, -1};
    CHECK("sigtimedwait bad time", sigtimedwait(&set, &info, &bad));
    sigset_t pending;
    sigpending(&pending);
    EXPECT("nothing left pending", !sigismember(&pending, SIGUSR1) && !sigismember(&pending, SIGCHLD));
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    scheduling();
    locking();
    setting_the_clock();
    waiting_for_signals();
    return 0;
}
