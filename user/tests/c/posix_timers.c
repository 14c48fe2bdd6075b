/*
 * POSIX timers: timer_create with each kind of notification (the default
 * SIGALRM, a chosen signal with a value, none, and musl's SIGEV_THREAD
 * built on SIGEV_THREAD_ID), relative and absolute settings, timer_gettime,
 * overruns while the signal is blocked, timer_delete, the errors Linux
 * gives, and a forked child that has no timers. Prints no times.
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static volatile int thread_calls;
static volatile int thread_value;

static void on_expiry(union sigval value) {
    thread_value = value.sival_int;
    thread_calls++;
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGALRM);
    sigaddset(&set, SIGUSR1);
    sigprocmask(SIG_BLOCK, &set, NULL);
    siginfo_t info;

    timer_t plain;
    CHECK("create with no sigevent", timer_create(CLOCK_MONOTONIC, NULL, &plain));
    struct itimerspec now, off = {{0, 0}, {0, 0}}, once = {{0, 0}, {0, 30000000}};
    CHECK("gettime of a new timer", timer_gettime(plain, &now));
    EXPECT("disarmed", now.it_value.tv_sec == 0 && now.it_value.tv_nsec == 0);
    CHECK("settime 30 ms", timer_settime(plain, 0, &once, NULL));
    CHECK("gettime while armed", timer_gettime(plain, &now));
    EXPECT("time left is within 30 ms", now.it_value.tv_sec == 0 && now.it_value.tv_nsec > 0 && now.it_value.tv_nsec <= 30000000);
    CHECK("sigwaitinfo", sigwaitinfo(&set, &info));
    printf("signo %d code %d value is the id %s\n", info.si_signo, info.si_code, info.si_value.sival_int == (int)(long)plain ? "yes" : "no");
    CHECK("gettime after a one-shot expiry", timer_gettime(plain, &now));
    EXPECT("disarmed again", now.it_value.tv_sec == 0 && now.it_value.tv_nsec == 0);

    struct sigevent event = {0};
    event.sigev_notify = SIGEV_SIGNAL;
    event.sigev_signo = SIGUSR1;
    event.sigev_value.sival_int = 1234;
    timer_t chosen;
    CHECK("create with SIGUSR1", timer_create(CLOCK_REALTIME, &event, &chosen));
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    wall.tv_nsec += 20000000;
    if (wall.tv_nsec >= 1000000000) {
        wall.tv_sec++;
        wall.tv_nsec -= 1000000000;
    }
    struct itimerspec absolute = {{0, 0}, wall};
    CHECK("settime absolute, 20 ms on", timer_settime(chosen, TIMER_ABSTIME, &absolute, NULL));
    CHECK("sigwaitinfo", sigwaitinfo(&set, &info));
    printf("signo %d code %d value %d\n", info.si_signo, info.si_code, info.si_value.sival_int);

    struct itimerspec every = {{0, 5000000}, {0, 5000000}}, old;
    CHECK("settime every 5 ms", timer_settime(chosen, 0, &every, NULL));
    struct timespec pause_for = {0, 200000000};
    nanosleep(&pause_for, NULL);
    CHECK("sigwaitinfo", sigwaitinfo(&set, &info));
    int overruns = timer_getoverrun(chosen);
    printf("overruns while blocked: %s\n", overruns >= 5 ? "5 or more" : "fewer than 5");
    EXPECT("si_overrun is what timer_getoverrun says", info.si_overrun == overruns);
    nanosleep(&pause_for, NULL);
    EXPECT("the count stays latched until the next signal is taken", timer_getoverrun(chosen) == overruns);
    CHECK("settime off, old value", timer_settime(chosen, 0, &off, &old));
    EXPECT("the old interval was 5 ms", old.it_interval.tv_sec == 0 && old.it_interval.tv_nsec == 5000000);

    event.sigev_notify = SIGEV_NONE;
    timer_t silent;
    CHECK("create with SIGEV_NONE", timer_create(CLOCK_MONOTONIC, &event, &silent));
    struct itimerspec second = {{0, 0}, {1, 0}};
    CHECK("settime 1 s", timer_settime(silent, 0, &second, NULL));
    CHECK("gettime", timer_gettime(silent, &now));
    EXPECT("between 0 and 1 s left", now.it_value.tv_sec * 1000000000L + now.it_value.tv_nsec > 0 && now.it_value.tv_sec * 1000000000L + now.it_value.tv_nsec <= 1000000000L);

    pid_t child = fork();
    if (child == 0) {
        printf("child: ");
        CHECK("gettime of the parent's timer", timer_gettime(silent, &now));
        exit(0);
    }
    waitpid(child, NULL, 0);

    event.sigev_notify = SIGEV_THREAD;
    event.sigev_notify_function = on_expiry;
    event.sigev_notify_attributes = NULL;
    event.sigev_value.sival_int = 77;
    timer_t threaded;
    CHECK("create with SIGEV_THREAD", timer_create(CLOCK_MONOTONIC, &event, &threaded));
    CHECK("settime 10 ms", timer_settime(threaded, 0, &once, NULL));
    for (int i = 0; i < 200 && thread_calls == 0; i++)
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    printf("thread calls %d value %d\n", thread_calls, thread_value);
    CHECK("delete the thread timer", timer_delete(threaded));

    struct itimerspec bad = {{0, 0}, {0, 1000000000}};
    CHECK("settime bad nanoseconds", timer_settime(silent, 0, &bad, NULL));
    CHECK("delete", timer_delete(silent));
    CHECK("delete again", timer_delete(silent));
    CHECK("gettime of a deleted timer", timer_gettime(silent, &now));
    CHECK("getoverrun of a deleted timer", timer_getoverrun(silent));
    timer_t unused;
    CHECK("create on a bad clock", timer_create(99, NULL, &unused));
    CHECK("create on MONOTONIC_RAW", timer_create(CLOCK_MONOTONIC_RAW, NULL, &unused));
    event.sigev_notify = 99;
    CHECK("create with a bad notify", timer_create(CLOCK_MONOTONIC, &event, &unused));
    event.sigev_notify = SIGEV_SIGNAL;
    event.sigev_signo = 0;
    CHECK("create with signal 0", timer_create(CLOCK_MONOTONIC, &event, &unused));
    CHECK("delete", timer_delete(plain));
    CHECK("delete", timer_delete(chosen));
    return 0;
}
