/*
 * The first process of every guest that `cargo xtask exec` and `make run`
 * boot, on Lamina and on Linux alike: mounts /proc and /dev (Linux needs
 * them; Lamina has them and accepts the calls), makes the console the
 * controlling terminal, runs the program named in /etc/lamina-init (its
 * arguments NUL-separated; /bin/sh when the file is missing) as its child,
 * reports its exit status between the markers xtask reads, and powers off.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_ARGUMENTS 1024

static char names[65536];

static int read_arguments(char **arguments) {
    int count = 0;
    int fd = open("/etc/lamina-init", O_RDONLY);
    ssize_t length = fd >= 0 ? read(fd, names, sizeof names - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (length <= 0) {
        strcpy(names, "/bin/sh");
        length = (ssize_t)strlen(names);
    }
    names[length] = 0;
    for (char *name = names; name < names + length && count < MAX_ARGUMENTS - 1; name += strlen(name) + 1)
        if (*name)
            arguments[count++] = name;
    arguments[count] = NULL;
    return count;
}

int main(void) {
    char *arguments[MAX_ARGUMENTS];
    char *environment[] = {"HOME=/root", "PATH=/bin:/sbin:/usr/bin:/usr/sbin", "TERM=vt100", "SHELL=/bin/sh", NULL};
    mount("proc", "/proc", "proc", 0, NULL);
    mount("devtmpfs", "/dev", "devtmpfs", 0, NULL);
    int console = open("/dev/console", O_RDWR);
    if (console >= 0) {
        dup2(console, 0);
        dup2(console, 1);
        dup2(console, 2);
        if (console > 2)
            close(console);
    }
    setsid();
    ioctl(0, TIOCSCTTY, 1);
    read_arguments(arguments);
    printf("lamina-exec: start\n");
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        setpgid(0, 0);
        tcsetpgrp(0, getpid());
        execve(arguments[0], arguments, environment);
        perror(arguments[0]);
        _exit(127);
    }
    int status = 0;
    int code = 127;
    if (child > 0) {
        while (waitpid(child, &status, 0) < 0) {
        }
        code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    tcsetpgrp(0, getpgrp());
    printf("lamina-exec: exit %d\n", code);
    fflush(stdout);
    sync();
    reboot(RB_POWER_OFF);
    return code;
}
