/*
 * Signal masks and pending sets per thread, as on Linux: a signal sent to
 * the process runs its handler in a thread that does not block it; one
 * sent to a thread (pthread_kill) runs there or stays pending for that
 * thread alone; sigpending shows the caller's own pending signals and the
 * process's; a new thread starts with its creator's mask and without an
 * alternate stack; sigwait in one thread takes a signal every thread
 * blocks.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"

static volatile pid_t handled_by;
static volatile int handled;

static pid_t thread_id(void) { return (pid_t)syscall(SYS_gettid); }

static void on_signal(int signal) {
    (void)signal;
    handled_by = thread_id();
    handled++;
}

static void handle(int signal) {
    struct sigaction action = {0};
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    sigaction(signal, &action, NULL);
}

static void block(int how, int signal) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, signal);
    pthread_sigmask(how, &set, NULL);
}

/* Steps the threads take in turn. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static int step;

static void wait_step(int wanted) {
    pthread_mutex_lock(&lock);
    while (step < wanted)
        pthread_cond_wait(&changed, &lock);
    pthread_mutex_unlock(&lock);
}

static void set_step(int value) {
    pthread_mutex_lock(&lock);
    step = value;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
}

static volatile pid_t worker_tid;
static volatile int worker_saw_pending, worker_inherited_block, worker_alt_disabled, waited_signal;

/* Blocks SIGUSR1 (the creator blocked SIGUSR2 before creating it). */
static void *worker(void *unused) {
    (void)unused;
    worker_tid = thread_id();
    sigset_t mask;
    pthread_sigmask(SIG_BLOCK, NULL, &mask);
    worker_inherited_block = sigismember(&mask, SIGUSR2);
    stack_t alternate;
    sigaltstack(NULL, &alternate);
    worker_alt_disabled = (alternate.ss_flags & SS_DISABLE) != 0;
    block(SIG_BLOCK, SIGUSR1);
    set_step(1);
    /* Step 2: main sent SIGUSR1 to this thread alone; it stays pending here. */
    wait_step(2);
    sigset_t pending;
    sigpending(&pending);
    worker_saw_pending = sigismember(&pending, SIGUSR1);
    set_step(3);
    /* Step 4: SIGTERM, blocked everywhere, sent to the process: sigwait takes it. */
    wait_step(4);
    sigset_t wanted;
    sigemptyset(&wanted);
    sigaddset(&wanted, SIGTERM);
    int signal = 0;
    sigwait(&wanted, &signal);
    waited_signal = signal;
    /* The SIGUSR1 still pending for this thread runs its handler here. */
    block(SIG_UNBLOCK, SIGUSR1);
    return NULL;
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    handle(SIGUSR1);
    handle(SIGUSR2);
    /* An alternate stack on the main thread: a new thread has none. */
    static char alternate_stack[1 << 16];
    stack_t alternate = {.ss_sp = alternate_stack, .ss_size = sizeof alternate_stack};
    sigaltstack(&alternate, NULL);
    block(SIG_BLOCK, SIGUSR2);
    block(SIG_BLOCK, SIGTERM);
    pthread_t thread;
    pthread_create(&thread, NULL, worker, NULL);
    wait_step(1);
    EXPECT("new thread inherits its creator's mask", worker_inherited_block);
    EXPECT("new thread has no alternate stack", worker_alt_disabled);

    /* The worker blocks SIGUSR1, main does not: main runs the handler. */
    block(SIG_UNBLOCK, SIGUSR2);
    CHECK("kill(self, SIGUSR1)", kill(getpid(), SIGUSR1));
    EXPECT("process signal handled by the thread that does not block it", handled == 1 && handled_by == thread_id());

    /* To the worker alone: pending there, not in main's set. */
    CHECK("pthread_kill(worker, SIGUSR1)", pthread_kill(thread, SIGUSR1));
    sigset_t pending;
    sigpending(&pending);
    EXPECT("main does not see the worker's pending signal", !sigismember(&pending, SIGUSR1));
    EXPECT("no handler ran for it yet", handled == 1);
    set_step(2);
    wait_step(3);
    EXPECT("the worker sees it pending", worker_saw_pending);

    /* To main alone: its handler runs in main. */
    handled_by = 0;
    CHECK("pthread_kill(main, SIGUSR2)", pthread_kill(pthread_self(), SIGUSR2));
    EXPECT("thread signal handled by that thread", handled == 2 && handled_by == thread_id());

    /* SIGTERM blocked in both: the worker's sigwait takes it. */
    CHECK("kill(self, SIGTERM)", kill(getpid(), SIGTERM));
    set_step(4);
    pthread_join(thread, NULL);
    EXPECT("sigwait in the worker took the process's SIGTERM", waited_signal == SIGTERM);
    EXPECT("the worker's pending SIGUSR1 ran when it unblocked it", handled == 3 && handled_by == worker_tid);
    sigpending(&pending);
    EXPECT("nothing left pending", !sigismember(&pending, SIGTERM) && !sigismember(&pending, SIGUSR1));

    /* A thread id with the wrong process id. */
    CHECK("tgkill(wrong pid, thread, 0)", syscall(SYS_tgkill, getpid() + 100000, thread_id(), 0));
    return 0;
}
