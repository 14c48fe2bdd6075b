/*
 * Signals to a process whose one accepting thread spins in user mode: the
 * shape of posix pthread_cond_timedwait/4-3, many rounds in one process.
 * Each round: a waiter (the only thread with SIGUSR1/2 unblocked) loops in
 * 1 us timed waits, a worker signals the condition, two senders kill() the
 * process with SIGUSR1/SIGUSR2 and wait on a semaphore the handler posts;
 * after 100 ms main stops them and joins with a 3 s watchdog. A lost
 * signal leaves a sender waiting: the watchdog prints sent/handled counts
 * and semaphore values (sent > handled with the semaphore at 0: lost;
 * equal with the semaphore at 1: the guest merely stalled), again 10 s
 * later, and exits 2. Signals left pending at the end of a round (a kill
 * after the waiter blocked signals to exit: Linux has them too) are
 * drained with sigtimedwait and counted. Found the lost kicks (sched
 * kick_flag). Build: musl-gcc -static -O2 -pthread -o signal_race
 * signal_race.c; run: cargo xtask exec --smp 4 [--linux] -- ./signal_race 300
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <errno.h>
#include <sys/syscall.h>

static volatile int do_it;
static sem_t s1, s2;
static volatile long sent1, sent2, handled1, handled2, waiter_done;
static sigset_t usersigs;
static pthread_mutex_t mtx = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cnd = PTHREAD_COND_INITIALIZER;
static volatile int waiter_tid;
static long leftovers;

static void h1(int s) { (void)s; handled1++; sem_post(&s1); }
static void h2(int s) { (void)s; handled2++; sem_post(&s2); }

struct arg { int sig; sem_t *sem; volatile long *sent; volatile int tid; };

static void *sendsig(void *p) {
    struct arg *a = p;
    a->tid = syscall(SYS_gettid);
    pthread_sigmask(SIG_BLOCK, &usersigs, NULL);
    while (do_it) {
        sem_wait(a->sem);
        (*a->sent)++;
        kill(getpid(), a->sig);
    }
    return NULL;
}

static void *waiter(void *p) {
    (void)p;
    waiter_tid = syscall(SYS_gettid);
    pthread_sigmask(SIG_UNBLOCK, &usersigs, NULL);
    pthread_mutex_lock(&mtx);
    while (do_it) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 1000;
        if (ts.tv_nsec >= 1000000000) { ts.tv_nsec -= 1000000000; ts.tv_sec++; }
        int r;
        do r = pthread_cond_timedwait(&cnd, &mtx, &ts); while (r == 0);
        if (r != ETIMEDOUT) { printf("timedwait %d\n", r); exit(3); }
    }
    pthread_mutex_unlock(&mtx);
    waiter_done = 1;
    return NULL;
}

static void *worker(void *p) {
    (void)p;
    pthread_sigmask(SIG_BLOCK, &usersigs, NULL);
    while (do_it) {
        struct timespec ts = {0, 700};
        nanosleep(&ts, NULL);
        pthread_cond_signal(&cnd);
    }
    return NULL;
}

/* The TLB and RES rows of /proc/interrupts (shootdowns, wake IPIs). */
static void show_interrupts(void) {
    FILE *f = fopen("/proc/interrupts", "r");
    char line[512];
    while (f && fgets(line, sizeof line, f))
        if (strstr(line, "TLB:") || strstr(line, "RES:")) fputs(line, stdout);
    if (f) fclose(f);
    f = fopen("/proc/lamina/sched", "r");
    while (f && fgets(line, sizeof line, f))
        if (strstr(line, "longest")) fputs(line, stdout);
    if (f) fclose(f);
}

/* musl's struct pthread (x86-64): tid at 48, detach_state at 56, the
   word the kernel zeroes and wakes when the thread ends. */
static void show_thread(const char *name, pthread_t t) {
    /* The kernel's view of the same words (through the page tables, not
       this CPU's TLB): written into a pipe and read back. */
    int kernel_view[4] = {-1, -1, -1, -1}, fds[2];
    if (pipe(fds) == 0) {
        if (write(fds[1], (char *)t + 48, 16) == 16 && read(fds[0], kernel_view, 16) == 16) {}
        close(fds[0]); close(fds[1]);
    }
    printf("%s: tid word %d, detach_state %d (kernel's view: %d, %d)\n", name, *(volatile int *)((char *)t + 48), *(volatile int *)((char *)t + 56), kernel_view[0], kernel_view[2]);
}

static pthread_t shown1, shown2;

static void dump(int round, int tid1, int tid2) {
    /* The scheduler's view first: the stuck threads are still there. */
    FILE *sched = fopen("/proc/lamina/sched", "r");
    char text[256];
    while (sched && fgets(text, sizeof text, sched)) fputs(text, stdout);
    if (sched) fclose(sched);
    show_thread("sender 1", shown1);
    show_thread("sender 2", shown2);
    int v1, v2;
    sem_getvalue(&s1, &v1);
    sem_getvalue(&s2, &v2);
    printf("senders' tids %d %d, waiter's %d\n", tid1, tid2, waiter_tid);
    printf("leftovers so far %ld; STUCK round %d: sent1 %ld handled1 %ld sem1 %d | sent2 %ld handled2 %ld sem2 %d | waiter_done %ld\n",
           leftovers, round, sent1, handled1, v1, sent2, handled2, v2, waiter_done);
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "SigPnd", 6) || !strncmp(line, "ShdPnd", 6) || !strncmp(line, "SigBlk", 6)) fputs(line, stdout);
    if (f) fclose(f);
    fflush(stdout);
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 20;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = h1; sigaction(SIGUSR1, &sa, NULL);
    sa.sa_handler = h2; sigaction(SIGUSR2, &sa, NULL);
    sigemptyset(&usersigs); sigaddset(&usersigs, SIGUSR1); sigaddset(&usersigs, SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &usersigs, NULL);
    for (int round = 0; round < rounds; round++) {
        do_it = 1; sent1 = sent2 = handled1 = handled2 = waiter_done = 0;
        sem_init(&s1, 0, 1); sem_init(&s2, 0, 1);
        pthread_t tw, tk, t1, t2;
        struct arg a1 = {SIGUSR1, &s1, &sent1, 0}, a2 = {SIGUSR2, &s2, &sent2, 0};
        pthread_create(&tw, NULL, waiter, NULL);
        pthread_create(&tk, NULL, worker, NULL);
        pthread_create(&t1, NULL, sendsig, &a1);
        pthread_create(&t2, NULL, sendsig, &a2);
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
        do_it = 0;
        struct timespec lim;
        clock_gettime(CLOCK_REALTIME, &lim);
        lim.tv_sec += 3;
        shown1 = t1; shown2 = t2;
        if (pthread_timedjoin_np(t1, NULL, &lim) || pthread_timedjoin_np(t2, NULL, &lim)) {
            dump(round, a1.tid, a2.tid);
            sleep(10);
            dump(round, a1.tid, a2.tid);
            return 2;
        }
        pthread_join(tk, NULL); pthread_join(tw, NULL);
        /* drain: whatever is pending and blocked stays; unblock to handle */
        struct timespec zero = {0, 0};
        while (sigtimedwait(&usersigs, NULL, &zero) > 0) leftovers++;
    }
    printf("ok %d rounds, %ld signals left pending after a round\n", rounds, leftovers);
    show_interrupts();
    return 0;
}
