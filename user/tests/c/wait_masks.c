/*
 * The signal masks of ppoll, pselect and epoll_pwait: a signal the
 * caller blocks but the call's mask lets through interrupts the wait
 * (EINTR, its handler runs) and the old mask is back afterwards; when the
 * call returns for a ready descriptor, a signal its old mask blocks stays
 * pending; a bad mask size is EINVAL.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static volatile int handled;
static void on_usr1(int signal) {
    (void)signal;
    handled++;
}

/* A child that sends SIGUSR1 to this process after 50 ms. */
static pid_t signal_soon(void) {
    pid_t parent = getpid();
    pid_t child = fork();
    if (child == 0) {
        usleep(50000);
        kill(parent, SIGUSR1);
        _exit(0);
    }
    return child;
}

static int usr1_blocked(void) {
    sigset_t now;
    sigprocmask(SIG_BLOCK, NULL, &now);
    return sigismember(&now, SIGUSR1);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    signal(SIGUSR1, on_usr1);
    sigset_t blocked, open_mask;
    sigemptyset(&blocked);
    sigaddset(&blocked, SIGUSR1);
    sigprocmask(SIG_BLOCK, &blocked, NULL);
    sigemptyset(&open_mask);
    struct timespec two_seconds = {2, 0};

    pid_t child = signal_soon();
    CHECK("ppoll with a mask that lets SIGUSR1 in", ppoll(NULL, 0, &two_seconds, &open_mask));
    printf("  handled %d, blocked again after: %s\n", handled, usr1_blocked() ? "yes" : "no");
    waitpid(child, NULL, 0);

    child = signal_soon();
    CHECK("pselect with it", pselect(0, NULL, NULL, NULL, &two_seconds, &open_mask));
    printf("  handled %d, blocked again after: %s\n", handled, usr1_blocked() ? "yes" : "no");
    waitpid(child, NULL, 0);

    int epoll = epoll_create1(0);
    child = signal_soon();
    struct epoll_event event;
    CHECK("epoll_pwait with it", epoll_pwait(epoll, &event, 1, 2000, &open_mask));
    printf("  handled %d, blocked again after: %s\n", handled, usr1_blocked() ? "yes" : "no");
    waitpid(child, NULL, 0);

    child = signal_soon();
    CHECK("ppoll without a mask: SIGUSR1 stays blocked, the wait times out", ppoll(NULL, 0, &(struct timespec){0, 300000000}, NULL));
    waitpid(child, NULL, 0);
    sigset_t pending;
    sigpending(&pending);
    printf("  handled %d, pending: %s\n", handled, sigismember(&pending, SIGUSR1) ? "yes" : "no");

    /* Pending and let in by the mask, but a descriptor is ready: Linux
     * returns the descriptor, restores the old mask, and the signal stays
     * pending. */
    int ends[2];
    pipe(ends);
    write(ends[1], "x", 1);
    struct pollfd ready = {ends[0], POLLIN, 0};
    long got = ppoll(&ready, 1, &two_seconds, &open_mask);
    printf("ppoll with a ready descriptor and a pending signal: %ld (EINTR: %s)\n", got > 0 ? 1L : got, got < 0 && errno == EINTR ? "yes" : "no");
    sigpending(&pending);
    printf("  handled %d, blocked: %s\n", handled, usr1_blocked() ? "yes" : "no");

    CHECK("ppoll with a mask size of 4", syscall(SYS_ppoll, NULL, 0, &two_seconds, &open_mask, 4));
    CHECK("epoll_pwait with a mask size of 4", syscall(SYS_epoll_pwait, epoll, &event, 1, 0, &open_mask, 4));
    sigprocmask(SIG_UNBLOCK, &blocked, NULL);
    printf("unblocked: handled %d\n", handled);
    return 0;
}
