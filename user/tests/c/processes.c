/* Processes and signals: fork, wait4 statuses, exit codes, ECHILD,
 * execve (success and errors), pipes between processes, EPIPE/SIGPIPE,
 * close-on-exec, kill and handlers, the blocked mask, pending signals,
 * process groups and sessions. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "check.h"

static volatile int handled;

static void on_signal(int signal) {
    handled = signal;
}

static void report_status(const char *label, int status) {
    if (WIFEXITED(status))
        printf("%s: exited %d\n", label, WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        printf("%s: killed by %d\n", label, WTERMSIG(status));
    else
        printf("%s: other %x\n", label, status);
}

int main(void) {
    int status = 0;
    CHECK("wait without children", wait(&status));
    pid_t child = fork();
    if (child == 0)
        _exit(42);
    EXPECT("fork gave a pid", child > 0);
    CHECK("waitpid nohang or child", waitpid(child, &status, 0) == child ? 0 : -1);
    report_status("child", status);
    CHECK("wait again", wait(&status));

    child = fork();
    if (child == 0) {
        pause();
        _exit(0);
    }
    CHECK("kill child", kill(child, SIGTERM));
    waitpid(child, &status, 0);
    report_status("terminated child", status);
    CHECK("kill gone", kill(child, 0));
    CHECK("kill bad signal", kill(getpid(), 99));

    int ends[2];
    CHECK("pipe", pipe(ends));
    child = fork();
    if (child == 0) {
        close(ends[0]);
        const char message[] = "through the pipe";
        write(ends[1], message, sizeof message);
        _exit(0);
    }
    close(ends[1]);
    char buffer[64] = {0};
    CHECK("read pipe", read(ends[0], buffer, sizeof buffer));
    printf("got: %s\n", buffer);
    CHECK("read at eof", read(ends[0], buffer, sizeof buffer));
    waitpid(child, &status, 0);
    close(ends[0]);

    CHECK("pipe2", pipe2(ends, O_CLOEXEC | O_NONBLOCK));
    CHECK("empty nonblocking read", read(ends[0], buffer, 1));
    CHECK("getfd cloexec", fcntl(ends[0], F_GETFD));
    CHECK("getfl", fcntl(ends[0], F_GETFL) & (O_NONBLOCK | O_ACCMODE));
    struct pollfd poll_set[2] = {{ends[0], POLLIN, 0}, {ends[1], POLLOUT, 0}};
    CHECK("poll", poll(poll_set, 2, 0));
    printf("revents: %d %d\n", poll_set[0].revents, poll_set[1].revents);
    signal(SIGPIPE, SIG_IGN);
    close(ends[0]);
    CHECK("write without reader", write(ends[1], "x", 1));
    close(ends[1]);
    CHECK("pipe bad flags", pipe2(ends, 0x12345));
    int lowest_before = dup(0);
    close(lowest_before);
    CHECK("pipe bad pointer", syscall(SYS_pipe2, (int *)8, 0));
    int lowest_after = dup(0);
    close(lowest_after);
    EXPECT("a refused pipe leaves no descriptor behind", lowest_after == lowest_before);

    child = fork();
    if (child == 0) {
        char *arguments[] = {"/bin/busybox", "echo", "exec works", NULL};
        execve(arguments[0], arguments, NULL);
        _exit(99);
    }
    waitpid(child, &status, 0);
    report_status("exec child", status);
    char *none[] = {"x", NULL};
    CHECK("execve missing", execve("/nope", none, NULL));
    CHECK("execve directory", execve("/tmp", none, NULL));
    int script = open("/tmp/not-a-program", O_CREAT | O_WRONLY | O_TRUNC, 0755);
    write(script, "garbage\n", 8);
    close(script);
    CHECK("execve garbage", execve("/tmp/not-a-program", none, NULL));
    CHECK("execve bad pointer", syscall(SYS_execve, (char *)1, none, NULL));

    struct sigaction action = {0};
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    CHECK("sigaction", sigaction(SIGUSR1, &action, NULL));
    CHECK("raise", raise(SIGUSR1));
    printf("handled: %d\n", handled);
    sigset_t block, pending;
    sigemptyset(&block);
    sigaddset(&block, SIGUSR2);
    signal(SIGUSR2, on_signal);
    handled = 0;
    CHECK("block usr2", sigprocmask(SIG_BLOCK, &block, NULL));
    kill(getpid(), SIGUSR2);
    printf("handled while blocked: %d\n", handled);
    sigpending(&pending);
    EXPECT("usr2 pending", sigismember(&pending, SIGUSR2));
    CHECK("unblock usr2", sigprocmask(SIG_UNBLOCK, &block, NULL));
    printf("handled after unblock: %d\n", handled);
    CHECK("sigaction kill", sigaction(SIGKILL, &action, NULL));
    CHECK("sigaction bad", sigaction(0, &action, NULL));

    child = fork();
    if (child == 0) {
        CHECK("setpgid self", setpgid(0, 0));
        EXPECT("own group", getpgrp() == getpid());
        CHECK("setsid as leader", setsid());
        _exit(0);
    }
    waitpid(child, &status, 0);
    child = fork();
    if (child == 0) {
        pid_t session = setsid();
        EXPECT("new session", session == getpid() && getsid(0) == getpid());
        _exit(3);
    }
    waitpid(child, &status, 0);
    report_status("session child", status);
    child = fork();
    if (child == 0) {
        *(volatile int *)8 = 1;
        _exit(0);
    }
    waitpid(child, &status, 0);
    report_status("segfaulting child", status);
    return 0;
}
