/*
 * CPU-time accounting: the CPU clocks (process, thread, another process's
 * and another thread's), times(), getrusage() for the process, the thread
 * and the waited-for children, wait4's rusage and /proc/self/stat. Work is
 * spun for a stretch of elapsed time; the checks are loose bounds (at
 * least half of it counted, sleeping not counted), never exact times.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/syscall.h>
#include <sys/times.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static long ms_of(struct timespec at) {
    return at.tv_sec * 1000 + at.tv_nsec / 1000000;
}

static long clock_ms(clockid_t clock) {
    struct timespec now;
    if (clock_gettime(clock, &now) != 0) {
        return -1;
    }
    return ms_of(now);
}

static long timeval_ms(struct timeval value) {
    return value.tv_sec * 1000 + value.tv_usec / 1000;
}

/* Computes until this thread's CPU clock has advanced `ms`, asking the
 * clock rarely (so that nearly all of it is user time). By CPU time, not
 * elapsed time: a guest whose virtual CPU the host leaves waiting (a
 * loaded machine) gets less CPU time per elapsed millisecond, on Linux as
 * here. At most 30 s elapsed, so a clock that never moves still ends it
 * (and the checks after it fail). */
static volatile unsigned long sink;
static void spin_ms(long ms) {
    long until = clock_ms(CLOCK_THREAD_CPUTIME_ID) + ms;
    long give_up = clock_ms(CLOCK_MONOTONIC) + 30000;
    while (clock_ms(CLOCK_THREAD_CPUTIME_ID) < until && clock_ms(CLOCK_MONOTONIC) < give_up) {
        for (int i = 0; i < 200000; i++) {
            sink = sink * 6364136223846793005ul + 1;
        }
    }
}

/* Waits (asleep) until `clock` shows `ms` or 10 s have passed; what it shows. */
static long wait_for_clock(clockid_t clock, long ms) {
    long give_up = clock_ms(CLOCK_MONOTONIC) + 10000;
    long shown;
    while ((shown = clock_ms(clock)) < ms && clock_ms(CLOCK_MONOTONIC) < give_up) {
        usleep(20000);
    }
    return shown;
}

/* Computes until `*flag` is set by a signal handler (at most 5 s),
 * reading the clock rarely so that nearly all of it is user time (the
 * clock may be a system call). */
static void compute_until_set(volatile int *flag) {
    long until = clock_ms(CLOCK_MONOTONIC) + 5000;
    while (*flag == 0 && clock_ms(CLOCK_MONOTONIC) < until) {
        for (int i = 0; i < 200000 && *flag == 0; i++) {
            sink = sink * 3 + 1;
        }
    }
}

static volatile int virtual_alarms, profile_alarms;
static void count_alarm(int signal) {
    if (signal == SIGVTALRM) {
        virtual_alarms++;
    } else {
        profile_alarms++;
    }
}

/* ITIMER_VIRTUAL and ITIMER_PROF run on CPU time, not while asleep. */
static void cpu_interval_timers(void) {
    signal(SIGVTALRM, count_alarm);
    signal(SIGPROF, count_alarm);
    struct itimerval fifty_ms = {{0, 0}, {0, 50000}}, current;
    CHECK("setitimer(ITIMER_VIRTUAL, 50 ms)", setitimer(ITIMER_VIRTUAL, &fifty_ms, NULL));
    usleep(300000);
    EXPECT("  300 ms asleep: no SIGVTALRM", virtual_alarms == 0);
    CHECK("getitimer(ITIMER_VIRTUAL)", getitimer(ITIMER_VIRTUAL, &current));
    EXPECT("  more than 20 ms left", current.it_value.tv_sec == 0 && current.it_value.tv_usec > 20000);
    compute_until_set(&virtual_alarms);
    EXPECT("  computing: one SIGVTALRM", virtual_alarms == 1);
    getitimer(ITIMER_VIRTUAL, &current);
    EXPECT("  then disarmed", current.it_value.tv_sec == 0 && current.it_value.tv_usec == 0);

    struct itimerval every_20_ms = {{0, 20000}, {0, 20000}}, old;
    CHECK("setitimer(ITIMER_PROF, every 20 ms)", setitimer(ITIMER_PROF, &every_20_ms, NULL));
    spin_ms(300);
    struct itimerval off = {{0, 0}, {0, 0}};
    CHECK("setitimer(ITIMER_PROF, off)", setitimer(ITIMER_PROF, &off, &old));
    EXPECT("  300 ms computing: 3 to 30 SIGPROFs", profile_alarms >= 3 && profile_alarms <= 30);
    EXPECT("  the old setting kept its interval", old.it_interval.tv_usec == 20000);
    CHECK("setitimer(3)", setitimer(3, &off, NULL));
    signal(SIGVTALRM, SIG_DFL);
    signal(SIGPROF, SIG_DFL);
}

static volatile int timer_signals;
static void count_timer(int signal) {
    (void)signal;
    timer_signals++;
}

/* POSIX timers on the process's and the thread's CPU clocks. */
static void cpu_clock_timers(void) {
    signal(SIGUSR1, count_timer);
    struct sigevent event = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGUSR1};
    timer_t timer;
    CHECK("timer_create(CLOCK_PROCESS_CPUTIME_ID)", timer_create(CLOCK_PROCESS_CPUTIME_ID, &event, &timer));
    struct itimerspec fifty_ms = {{0, 0}, {0, 50000000}}, current;
    CHECK("  timer_settime 50 ms of CPU time", timer_settime(timer, 0, &fifty_ms, NULL));
    usleep(300000);
    EXPECT("  300 ms asleep: no expiry", timer_signals == 0);
    timer_gettime(timer, &current);
    EXPECT("  more than 20 ms left", current.it_value.tv_sec == 0 && current.it_value.tv_nsec > 20000000);
    compute_until_set(&timer_signals);
    EXPECT("  computing: it expires once", timer_signals == 1);
    timer_gettime(timer, &current);
    EXPECT("  then disarmed", current.it_value.tv_sec == 0 && current.it_value.tv_nsec == 0);
    timer_delete(timer);

    timer_signals = 0;
    CHECK("timer_create(CLOCK_THREAD_CPUTIME_ID)", timer_create(CLOCK_THREAD_CPUTIME_ID, &event, &timer));
    struct itimerspec every_20_ms = {{0, 20000000}, {0, 20000000}};
    timer_settime(timer, 0, &every_20_ms, NULL);
    spin_ms(300);
    timer_delete(timer);
    EXPECT("  every 20 ms, 300 ms computing: 3 to 30 expiries", timer_signals >= 3 && timer_signals <= 30);
    signal(SIGUSR1, SIG_DFL);
}

static void *spinning_thread(void *argument) {
    (void)argument;
    spin_ms(300);
    return NULL;
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    long process_before = clock_ms(CLOCK_PROCESS_CPUTIME_ID);
    long thread_before = clock_ms(CLOCK_THREAD_CPUTIME_ID);
    spin_ms(300);
    long process_spun = clock_ms(CLOCK_PROCESS_CPUTIME_ID) - process_before;
    long thread_spun = clock_ms(CLOCK_THREAD_CPUTIME_ID) - thread_before;
    EXPECT("300 ms of spinning: the process clock counts 150 to 1000 ms", process_spun >= 150 && process_spun < 1000);
    EXPECT("  and the thread clock 150 to 1000 ms", thread_spun >= 150 && thread_spun < 1000);

    long before_sleep = clock_ms(CLOCK_PROCESS_CPUTIME_ID);
    usleep(300000);
    EXPECT("300 ms asleep add under 100 ms", clock_ms(CLOCK_PROCESS_CPUTIME_ID) - before_sleep < 100);

    struct tms tms;
    clock_t ticks = times(&tms);
    EXPECT("times: user ticks at least 15", tms.tms_utime >= 15);
    EXPECT("  no children's time yet", tms.tms_cutime == 0 && tms.tms_cstime == 0);
    EXPECT("  returns a tick count", ticks != (clock_t)-1);

    struct rusage usage;
    CHECK("getrusage(RUSAGE_SELF)", getrusage(RUSAGE_SELF, &usage));
    EXPECT("  user time at least 150 ms", timeval_ms(usage.ru_utime) >= 150);
    CHECK("getrusage(RUSAGE_THREAD)", getrusage(RUSAGE_THREAD, &usage));
    EXPECT("  user time at least 150 ms", timeval_ms(usage.ru_utime) >= 150);
    CHECK("getrusage(RUSAGE_CHILDREN)", getrusage(RUSAGE_CHILDREN, &usage));
    EXPECT("  nothing yet", timeval_ms(usage.ru_utime) == 0 && timeval_ms(usage.ru_stime) == 0);
    CHECK("getrusage(2)", getrusage(2, &usage));

    /* System time: reading /dev/zero is work done in the kernel. */
    int zero = open("/dev/zero", O_RDONLY);
    static char buffer[1 << 20];
    getrusage(RUSAGE_SELF, &usage);
    long system_before = timeval_ms(usage.ru_stime);
    long until = clock_ms(CLOCK_THREAD_CPUTIME_ID) + 300;
    long give_up = clock_ms(CLOCK_MONOTONIC) + 30000;
    while (clock_ms(CLOCK_THREAD_CPUTIME_ID) < until && clock_ms(CLOCK_MONOTONIC) < give_up) {
        read(zero, buffer, sizeof buffer);
    }
    getrusage(RUSAGE_SELF, &usage);
    EXPECT("300 ms of reading /dev/zero: system time grew by at least 30 ms", timeval_ms(usage.ru_stime) - system_before >= 30);
    close(zero);

    /* Another thread's clock, and the process's that includes it. */
    pthread_t thread;
    clockid_t thread_clock;
    long process_at_start = clock_ms(CLOCK_PROCESS_CPUTIME_ID);
    long own_at_start = clock_ms(CLOCK_THREAD_CPUTIME_ID);
    pthread_create(&thread, NULL, spinning_thread, NULL);
    CHECK("pthread_getcpuclockid", pthread_getcpuclockid(thread, &thread_clock));
    long other_thread = wait_for_clock(thread_clock, 100);
    EXPECT("  the spinning thread's clock shows 100 ms or more", other_thread >= 100);
    pthread_join(thread, NULL);
    EXPECT("  the process clock includes it", clock_ms(CLOCK_PROCESS_CPUTIME_ID) - process_at_start >= 150);
    /* Had it included the spinner's 300 ms it would show 300 or more; its
     * own polling is a few ms, but a loaded host can charge a guest thread
     * for the time its vCPU was descheduled (seen once on Linux: over
     * 100 ms), so the bound sits between the two. */
    EXPECT("  this waiting thread's own clock does not", clock_ms(CLOCK_THREAD_CPUTIME_ID) - own_at_start < 200);

    /* A child: its clock while it runs, then its time once waited for. */
    pid_t child = fork();
    if (child == 0) {
        spin_ms(300);
        _exit(0);
    }
    clockid_t child_clock;
    CHECK("clock_getcpuclockid of a child", clock_getcpuclockid(child, &child_clock));
    EXPECT("  its clock shows 100 ms or more", wait_for_clock(child_clock, 100) >= 100);
    struct rusage child_usage;
    int status;
    CHECK("wait4 with a rusage", wait4(child, &status, 0, &child_usage) == child);
    EXPECT("  the child's user time: 150 to 1000 ms", timeval_ms(child_usage.ru_utime) >= 150 && timeval_ms(child_usage.ru_utime) < 1000);
    getrusage(RUSAGE_CHILDREN, &usage);
    EXPECT("getrusage(RUSAGE_CHILDREN) now counts it", timeval_ms(usage.ru_utime) >= 150);
    times(&tms);
    EXPECT("times: children's user ticks at least 15", tms.tms_cutime >= 15);

    /* /proc/self/stat: utime (field 14) in ticks. */
    FILE *stat = fopen("/proc/self/stat", "r");
    unsigned long utime = 0;
    if (stat) {
        fscanf(stat, "%*d (%*[^)]) %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu", &utime);
        fclose(stat);
    }
    EXPECT("/proc/self/stat: user ticks at least 30", utime >= 30);

    cpu_interval_timers();
    cpu_clock_timers();

    struct timespec any;
    CHECK("clock_gettime of a process that does not exist", clock_gettime((clockid_t)((~999999 << 3) | 2), &any));
    CHECK("clock_gettime of a malformed CPU clock", clock_gettime((clockid_t)((~0 << 3) | 3), &any));
    CHECK("clock_getres(CLOCK_PROCESS_CPUTIME_ID)", clock_getres(CLOCK_PROCESS_CPUTIME_ID, &any));
    return 0;
}
