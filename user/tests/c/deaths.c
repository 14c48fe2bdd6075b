/*
 * Every way a process can die leaves it reapable, with the wait status
 * Linux gives: each default signal action (core-dumping ones included:
 * no core file is written, as under Linux's default RLIMIT_CORE of 0, so
 * WCOREDUMP stays clear), abort(), a fault, SIGKILL while blocked in a
 * read, in a sleep or in a wait, exit from a thread other than the main
 * one, and a child whose parent died first (reaped by init, not by us:
 * we only check the grandchild's own end through a pipe).
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static void report(const char *label, pid_t child) {
    int status = 0;
    pid_t got = waitpid(child, &status, 0);
    if (got != child)
        printf("%s: waitpid failed %s\n", label, errno_name(errno));
    else if (WIFEXITED(status))
        printf("%s: exited %d\n", label, WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        printf("%s: killed by %d, core flag %d\n", label, WTERMSIG(status), WCOREDUMP(status) ? 1 : 0);
    else
        printf("%s: other %#x\n", label, status);
}

/* A child that raises `signal` with its default action. */
static void dies_of(int signal) {
    pid_t child = fork();
    if (child == 0) {
        signal == SIGKILL ? (void)kill(getpid(), signal) : (void)raise(signal);
        _exit(100);
    }
    char label[32];
    snprintf(label, sizeof label, "default action of %d", signal);
    report(label, child);
}

static void *exits_from_a_thread(void *unused) {
    (void)unused;
    exit(7);
}

static void *sleeps(void *unused) {
    (void)unused;
    for (;;)
        pause();
    return NULL;
}

/* Address 8: never mapped, on either kernel. */
static volatile int *volatile low_address = (volatile int *)(uintptr_t)8;

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    int signals[] = {SIGHUP, SIGINT, SIGQUIT, SIGILL, SIGTRAP, SIGABRT, SIGBUS, SIGFPE, SIGKILL, SIGUSR1,
                     SIGSEGV, SIGUSR2, SIGPIPE, SIGALRM, SIGTERM, SIGXCPU, SIGXFSZ, SIGSYS};
    for (size_t index = 0; index < sizeof signals / sizeof signals[0]; index++)
        dies_of(signals[index]);

    pid_t child = fork();
    if (child == 0)
        abort();
    report("abort", child);

    child = fork();
    if (child == 0) {
        *low_address = 1;
        _exit(100);
    }
    report("write to address 8", child);

    /* A handler for SIGABRT that returns: abort still ends the process. */
    child = fork();
    if (child == 0) {
        signal(SIGABRT, SIG_IGN);
        abort();
    }
    report("abort with SIGABRT ignored", child);

    int pipe_ends[2];
    pipe(pipe_ends);
    child = fork();
    if (child == 0) {
        char byte;
        close(pipe_ends[1]);
        read(pipe_ends[0], &byte, 1);
        _exit(100);
    }
    close(pipe_ends[0]);
    usleep(100000);
    kill(child, SIGKILL);
    report("SIGKILL while blocked in read", child);
    close(pipe_ends[1]);

    child = fork();
    if (child == 0) {
        struct timespec long_time = {1000, 0};
        nanosleep(&long_time, NULL);
        _exit(100);
    }
    usleep(100000);
    kill(child, SIGKILL);
    report("SIGKILL while in nanosleep", child);

    child = fork();
    if (child == 0) {
        pid_t grandchild = fork();
        if (grandchild == 0) {
            pause();
            _exit(100);
        }
        waitpid(grandchild, NULL, 0);
        _exit(100);
    }
    usleep(100000);
    kill(child, SIGKILL);
    report("SIGKILL while in waitpid", child);

    child = fork();
    if (child == 0) {
        signal(SIGTERM, SIG_IGN);
        sigset_t all;
        sigfillset(&all);
        sigprocmask(SIG_BLOCK, &all, NULL);
        kill(getpid(), SIGKILL);
        _exit(100);
    }
    report("SIGKILL with every signal blocked", child);

    child = fork();
    if (child == 0) {
        pthread_t thread;
        pthread_create(&thread, NULL, exits_from_a_thread, NULL);
        for (;;)
            pause();
    }
    report("exit in a second thread", child);

    child = fork();
    if (child == 0) {
        pthread_t thread;
        pthread_create(&thread, NULL, sleeps, NULL);
        usleep(50000);
        _exit(9);
    }
    report("_exit with a thread still sleeping", child);

    child = fork();
    if (child == 0) {
        pthread_t thread;
        pthread_create(&thread, NULL, sleeps, NULL);
        for (;;)
            pause();
    }
    usleep(100000);
    kill(child, SIGTERM);
    report("SIGTERM to a process of two threads", child);

    /* Parent dies first: the orphan still runs and ends (it writes a byte). */
    pipe(pipe_ends);
    child = fork();
    if (child == 0) {
        if (fork() == 0) {
            usleep(100000);
            write(pipe_ends[1], "o", 1);
            _exit(0);
        }
        _exit(0);
    }
    close(pipe_ends[1]);
    report("parent of an orphan", child);
    char byte = 0;
    ssize_t got = read(pipe_ends[0], &byte, 1);
    printf("orphan wrote: %zd %c\n", got, got == 1 ? byte : '-');
    got = read(pipe_ends[0], &byte, 1);
    printf("after the orphan ended: %zd\n", got);
    EXPECT("no child left", waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD);
    return 0;
}
