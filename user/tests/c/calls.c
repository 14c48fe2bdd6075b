/* The rest of the system-call table, one call (and its errors) at a time:
 * vector I/O, dup3, select/pselect/ppoll timeouts, the alternate signal
 * stack, tgkill, *at variants, renameat2, clock_nanosleep, futex timeouts,
 * resource usage, the terminal ioctls on a file, vfork, process groups. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/mman.h>
#define FUTEX_WAIT 0
#define FUTEX_WAKE 1
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/times.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include "check.h"

static volatile uintptr_t handler_stack;

static void on_alternate(int signal) {
    int local;
    (void)signal;
    handler_stack = (uintptr_t)&local;
}

int main(void) {
    chdir("/tmp");
    int fd = open("vectors", O_CREAT | O_RDWR | O_TRUNC, 0644);
    struct iovec out[3] = {{"one ", 4}, {"two ", 4}, {"three\n", 6}};
    CHECK("writev", writev(fd, out, 3));
    lseek(fd, 0, SEEK_SET);
    char first[4] = {0}, second[10] = {0};
    struct iovec in[2] = {{first, 3}, {second, 9}};
    CHECK("readv", readv(fd, in, 2));
    printf("readv got '%.3s' '%.9s'\n", first, second);
    CHECK("readv bad vector", readv(fd, (struct iovec *)8, 1));
    CHECK("dup3", dup3(fd, 20, O_CLOEXEC));
    CHECK("dup3 cloexec", fcntl(20, F_GETFD));
    CHECK("dup3 same", dup3(20, 20, 0));
    CHECK("dup3 bad flags", dup3(fd, 21, 1));
    CHECK("dup fcntl from 30", fcntl(fd, F_DUPFD, 30));
    CHECK("ioctl tcgets on a file", ioctl(fd, TCGETS, &(struct termios){0}));
    close(20);
    close(30);

    int ends[2];
    pipe(ends);
    fd_set readable;
    FD_ZERO(&readable);
    FD_SET(ends[0], &readable);
    struct timeval short_wait = {0, 20000};
    CHECK("select empty pipe", select(ends[0] + 1, &readable, NULL, NULL, &short_wait));
    write(ends[1], "x", 1);
    FD_SET(ends[0], &readable);
    struct timespec no_wait = {0, 0};
    CHECK("pselect ready pipe", pselect(ends[0] + 1, &readable, NULL, NULL, &no_wait, NULL));
    EXPECT("pselect marks it", FD_ISSET(ends[0], &readable));
    struct pollfd entry = {ends[0], POLLIN, 0};
    struct timespec some = {0, 10000000};
    CHECK("ppoll", ppoll(&entry, 1, &some, NULL));
    printf("ppoll revents %d\n", entry.revents);
    struct pollfd closed_entry = {99, POLLIN, 0};
    CHECK("poll closed fd", poll(&closed_entry, 1, 0));
    printf("poll closed revents %d\n", closed_entry.revents);
    CHECK("select bad fd", select(100, &(fd_set){{~0UL}}, NULL, NULL, &(struct timeval){0, 0}));

    stack_t alternate = {.ss_sp = malloc(65536), .ss_size = 65536, .ss_flags = 0};
    CHECK("sigaltstack", sigaltstack(&alternate, NULL));
    CHECK("sigaltstack too small", sigaltstack(&(stack_t){.ss_sp = alternate.ss_sp, .ss_size = 100}, NULL));
    struct sigaction action = {0};
    action.sa_handler = on_alternate;
    action.sa_flags = SA_ONSTACK;
    sigaction(SIGUSR1, &action, NULL);
    CHECK("tgkill self", syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), SIGUSR1));
    EXPECT("handler ran on the alternate stack", handler_stack >= (uintptr_t)alternate.ss_sp && handler_stack < (uintptr_t)alternate.ss_sp + 65536);
    CHECK("tgkill wrong group", syscall(SYS_tgkill, 999999, 999999, SIGUSR1));
    CHECK("tgkill bad id", syscall(SYS_tgkill, 0, 0, SIGUSR1));

    mkdir("at", 0755);
    int directory = open("at", O_RDONLY | O_DIRECTORY);
    int inside = openat(directory, "file", O_CREAT | O_WRONLY, 0600);
    CHECK("openat", inside >= 0 ? 0 : -1);
    close(inside);
    CHECK("faccessat", faccessat(directory, "file", R_OK, 0));
    CHECK("faccessat missing", faccessat(directory, "nothing", F_OK, 0));
    CHECK("fchmodat", fchmodat(directory, "file", 0640, 0));
    struct stat status;
    CHECK("fstatat", fstatat(directory, "file", &status, 0));
    printf("mode %o\n", status.st_mode & 0777);
    CHECK("symlinkat", symlinkat("file", directory, "link"));
    char target[32] = {0};
    CHECK("readlinkat", readlinkat(directory, "link", target, sizeof target));
    printf("readlinkat %s\n", target);
    CHECK("renameat2 noreplace", syscall(SYS_renameat2, directory, "link", directory, "file", 1));
    CHECK("renameat2", syscall(SYS_renameat2, directory, "link", directory, "moved", 0));
    CHECK("mkdirat", mkdirat(directory, "sub", 0700));
    CHECK("openat relative to a file", openat(fd, "x", O_RDONLY));
    CHECK("utimensat", utimensat(directory, "file", NULL, 0));
    CHECK("linkat", linkat(directory, "file", directory, "hard", 0));
    close(directory);

    struct timespec tiny = {0, 1000000};
    CHECK("clock_nanosleep", clock_nanosleep(CLOCK_MONOTONIC, 0, &tiny, NULL));
    CHECK("clock_nanosleep bad clock", clock_nanosleep(42, 0, &tiny, NULL));
    CHECK("clock_getres", clock_getres(CLOCK_MONOTONIC, &tiny));
    uint32_t word = 5;
    struct timespec futex_wait = {0, 20000000};
    CHECK("futex wait wrong value", syscall(SYS_futex, &word, FUTEX_WAIT, 6, NULL, NULL, 0));
    CHECK("futex wait times out", syscall(SYS_futex, &word, FUTEX_WAIT, 5, &futex_wait, NULL, 0));
    CHECK("futex wake nobody", syscall(SYS_futex, &word, FUTEX_WAKE, 1, NULL, NULL, 0));
    CHECK("futex unaligned", syscall(SYS_futex, (char *)&word + 1, FUTEX_WAKE, 1, NULL, NULL, 0));
    struct rusage usage;
    CHECK("getrusage", getrusage(RUSAGE_SELF, &usage));
    CHECK("getrusage bad", getrusage(42, &usage));
    struct tms tms;
    EXPECT("times", times(&tms) != (clock_t)-1);
    CHECK("prlimit bad resource", prlimit(0, 99, NULL, &(struct rlimit){0}));
    CHECK("madvise", madvise((void *)((uintptr_t)&word & ~4095UL), 4096, MADV_NORMAL));
    CHECK("mprotect unaligned", syscall(SYS_mprotect, (char *)&word + 1, 1, PROT_READ));

    pid_t child = vfork();
    if (child == 0)
        _exit(11);
    int wait_status;
    CHECK("wait4 vfork child", wait4(child, &wait_status, 0, NULL) == child ? 0 : -1);
    printf("vfork child %d\n", WEXITSTATUS(wait_status));
    child = fork();
    if (child == 0) {
        usleep(100000);
        _exit(0);
    }
    CHECK("wait4 nohang", wait4(child, &wait_status, WNOHANG, NULL));
    CHECK("setpgid child", setpgid(child, child));
    CHECK("getpgid child", getpgid(child) == child ? 0 : -1);
    CHECK("kill group", kill(-child, SIGTERM));
    waitpid(child, &wait_status, 0);
    printf("group member killed by %d\n", WTERMSIG(wait_status));
    CHECK("setpgid stranger", setpgid(1, 1));
    CHECK("getpgid none", getpgid(999999));
    CHECK("getsid none", getsid(999999));
    CHECK("wait4 bad options", wait4(-1, &wait_status, 0x1000, NULL));
    EXPECT("getppid nonzero", getppid() > 0);
    return 0;
}
