/*
 * System calls a signal interrupts: run again after a handler with
 * SA_RESTART, EINTR after one without, run again when no handler runs (a
 * stop and a continue), and EINTR from pause whatever the flags — Linux's
 * rules. A helper child sends the signal while this process is blocked.
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static volatile sig_atomic_t handled;

static void on_signal(int signal) {
    (void)signal;
    handled++;
}

static void set_handler(int flags) {
    struct sigaction action = {0};
    action.sa_handler = on_signal;
    action.sa_flags = flags;
    sigemptyset(&action.sa_mask);
    sigaction(SIGUSR1, &action, NULL);
}

/* A child that, after a pause, sends SIGUSR1 to us, then after another
 * writes a byte to `pipe_end` (if >= 0) and exits with `code`. */
static pid_t nudger(int pipe_end, int code) {
    pid_t parent = getpid();
    pid_t child = fork();
    if (child == 0) {
        usleep(100000);
        kill(parent, SIGUSR1);
        usleep(100000);
        if (pipe_end >= 0)
            write(pipe_end, "x", 1);
        _exit(code);
    }
    return child;
}

static void waitpid_case(const char *label, int flags) {
    set_handler(flags);
    handled = 0;
    pid_t child = nudger(-1, 5);
    int status = 0;
    pid_t got = waitpid(child, &status, 0);
    int error = got < 0 ? errno : 0;
    if (got < 0)
        got = waitpid(child, &status, 0);
    printf("%s: first waitpid %s, then child exited %d, handler ran %d\n", label, errno_name(error),
           got == child && WIFEXITED(status) ? WEXITSTATUS(status) : -1, (int)handled);
}

static void read_case(const char *label, int flags) {
    set_handler(flags);
    handled = 0;
    int ends[2];
    pipe(ends);
    pid_t child = nudger(ends[1], 0);
    char byte = 0;
    ssize_t got = read(ends[0], &byte, 1);
    int error = got < 0 ? errno : 0;
    if (got < 0)
        got = read(ends[0], &byte, 1);
    printf("%s: first read %s, then read %zd '%c', handler ran %d\n", label, errno_name(error), got, got == 1 ? byte : '-',
           (int)handled);
    waitpid(child, NULL, 0);
    close(ends[0]);
    close(ends[1]);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    waitpid_case("waitpid, SA_RESTART", SA_RESTART);
    waitpid_case("waitpid, no SA_RESTART", 0);
    read_case("pipe read, SA_RESTART", SA_RESTART);
    read_case("pipe read, no SA_RESTART", 0);

    /* Stopped and continued while blocked in read: no handler, so the
     * read goes on and gets the byte written after the continue. */
    int ends[2];
    pipe(ends);
    pid_t child = fork();
    if (child == 0) {
        char byte = 0;
        ssize_t got = read(ends[0], &byte, 1);
        _exit(got == 1 ? byte : 100 + errno);
    }
    usleep(100000);
    kill(child, SIGSTOP);
    int status = 0;
    waitpid(child, &status, WUNTRACED);
    printf("stopped in read: %s\n", WIFSTOPPED(status) ? "yes" : "no");
    kill(child, SIGCONT);
    usleep(100000);
    write(ends[1], "y", 1);
    waitpid(child, &status, 0);
    printf("continued read returned: %c\n", WIFEXITED(status) ? WEXITSTATUS(status) : '?');

    /* nanosleep stopped and continued (no handler): it sleeps on to its
     * end and returns 0 (restart_syscall), not EINTR. */
    child = fork();
    if (child == 0) {
        struct timespec nap = {0, 400000000};
        _exit(nanosleep(&nap, NULL) == 0 ? 0 : 100 + errno);
    }
    usleep(100000);
    kill(child, SIGSTOP);
    waitpid(child, &status, WUNTRACED);
    kill(child, SIGCONT);
    waitpid(child, &status, 0);
    printf("nanosleep stopped and continued: exit %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);

    /* pause: EINTR after a handler, SA_RESTART or not. */
    set_handler(SA_RESTART);
    handled = 0;
    child = nudger(-1, 0);
    int paused = pause();
    printf("pause with SA_RESTART: %d %s, handler ran %d\n", paused, errno_name(errno), (int)handled);
    waitpid(child, NULL, 0);
    return 0;
}
