/*
 * Resource limits: the defaults a fresh process sees, setrlimit's checks
 * (soft above hard is EINVAL, an unknown resource EINVAL), limits kept
 * across fork, and RLIMIT_NOFILE enforced: no descriptor at or past the
 * soft limit (open EMFILE, dup2 EBADF, F_DUPFD EINVAL); RLIMIT_FSIZE,
 * RLIMIT_DATA, RLIMIT_CPU and RLIMIT_NPROC enforced.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <signal.h>
#include <sys/syscall.h>
#include "check.h"

static void show(const char *name, int resource) {
    struct rlimit limit;
    getrlimit(resource, &limit);
    printf("%s: soft %lld hard %lld\n", name, (long long)(limit.rlim_cur == RLIM_INFINITY ? -1 : (long long)limit.rlim_cur),
           (long long)(limit.rlim_max == RLIM_INFINITY ? -1 : (long long)limit.rlim_max));
}

/* RLIMIT_FSIZE: a short write up to it, then EFBIG and SIGXFSZ. */
static void file_size_limit(void) {
    pid_t child = fork();
    if (child == 0) {
        struct rlimit hundred = {100, 100};
        setrlimit(RLIMIT_FSIZE, &hundred);
        signal(SIGXFSZ, SIG_IGN);
        int fd = open("/tmp/limited", O_RDWR | O_CREAT | O_TRUNC, 0644);
        char bytes[150] = {0};
        CHECK("RLIMIT_FSIZE 100: a write of 150", write(fd, bytes, 150));
        CHECK("  another write", write(fd, bytes, 1));
        CHECK("  ftruncate to 200", ftruncate(fd, 200));
        CHECK("  ftruncate to 50", ftruncate(fd, 50));
        signal(SIGXFSZ, SIG_DFL);
        lseek(fd, 100, SEEK_SET);
        write(fd, bytes, 1);
        _exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    printf("  a write past it with SIGXFSZ's default action: killed by signal %d\n", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    unlink("/tmp/limited");
}

/* RLIMIT_DATA: brk refuses to grow past it. */
static void data_limit(void) {
    pid_t child = fork();
    if (child == 0) {
        long start = syscall(SYS_brk, 0);
        struct rlimit small = {1 << 20, 1 << 20};
        setrlimit(RLIMIT_DATA, &small);
        long grown = syscall(SYS_brk, start + (64 << 20));
        _exit(grown == start ? 0 : 1);
    }
    int status = 0;
    waitpid(child, &status, 0);
    printf("RLIMIT_DATA 1 MiB: brk by 64 MiB refused: %s\n", WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "yes" : "no");
}

static int warnings[2];
static void on_xcpu(int signal) {
    (void)signal;
    write(warnings[1], "x", 1);
}

/* RLIMIT_CPU: SIGXCPU at the soft limit, SIGKILL at the hard one. */
static void cpu_limit(void) {
    pipe(warnings);
    pid_t child = fork();
    if (child == 0) {
        close(warnings[0]);
        signal(SIGXCPU, on_xcpu);
        struct rlimit one_two = {1, 2};
        setrlimit(RLIMIT_CPU, &one_two);
        for (volatile unsigned long spin = 0;; spin++) {
        }
    }
    close(warnings[1]);
    int status = 0;
    waitpid(child, &status, 0);
    char byte;
    printf("RLIMIT_CPU 1 s soft, 2 s hard: SIGXCPU seen: %s, then killed by signal %d\n", read(warnings[0], &byte, 1) == 1 ? "yes" : "no",
           WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    close(warnings[0]);
}

/* RLIMIT_NPROC: a user other than root gets EAGAIN from fork and from
 * pthread_create once it has that many tasks; root is not held to it. */
static void *idle_thread(void *unused) {
    pause();
    return unused;
}

static void task_limit(void) {
    pid_t child = fork();
    if (child == 0) {
        struct rlimit three = {3, 3};
        setrlimit(RLIMIT_NPROC, &three);
        pid_t root_child = fork();
        if (root_child == 0) _exit(0);
        printf("RLIMIT_NPROC 3: root still forks: %s\n", root_child > 0 ? "yes" : "no");
        waitpid(root_child, NULL, 0);
        if (setuid(1000) != 0) _exit(1);
        /* This process is the user's first task: two more fit. */
        int made = 0;
        pid_t kids[8];
        for (int i = 0; i < 8; i++) {
            kids[i] = fork();
            if (kids[i] == 0) {
                pause();
                _exit(0);
            }
            if (kids[i] < 0) {
                printf("  as user 1000: fork %d: %s\n", i + 1, errno_name(errno));
                break;
            }
            made++;
        }
        printf("  as user 1000: forks that worked: %d\n", made);
        pthread_t thread;
        int error = pthread_create(&thread, NULL, idle_thread, NULL);
        printf("  pthread_create at the limit: %s\n", errno_name(error));
        for (int i = 0; i < made; i++) kill(kids[i], SIGKILL);
        for (int i = 0; i < made; i++) waitpid(kids[i], NULL, 0);
        error = pthread_create(&thread, NULL, idle_thread, NULL);
        printf("  pthread_create after reaping them: %s\n", errno_name(error));
        _exit(0);
    }
    waitpid(child, NULL, 0);
}

/* Uses `depth` times 64 KiB of stack, touching every page. */
static int __attribute__((noinline)) recurse(int depth) {
    volatile char frame[64 << 10];
    for (size_t i = 0; i < sizeof frame; i += 4096) frame[i] = (char)depth;
    return depth == 0 ? frame[0] : recurse(depth - 1) + frame[4096];
}

/* RLIMIT_STACK: the stack a program gets at execve is the soft limit. */
static void stack_limit(void) {
    char self[256] = {0};
    if (readlink("/proc/self/exe", self, sizeof self - 1) < 0) return;
    struct { rlim_t limit; const char *megabytes; } cases[] = {{32 << 20, "20"}, {1 << 20, "4"}};
    for (int i = 0; i < 2; i++) {
        pid_t child = fork();
        if (child == 0) {
            struct rlimit limit = {cases[i].limit, RLIM_INFINITY};
            setrlimit(RLIMIT_STACK, &limit);
            execl(self, self, "recurse", cases[i].megabytes, (char *)NULL);
            _exit(127);
        }
        int status = 0;
        waitpid(child, &status, 0);
        printf("RLIMIT_STACK %lu MiB, %s MiB used after execve: %s\n", (unsigned long)(cases[i].limit >> 20), cases[i].megabytes,
               WIFEXITED(status) ? (WEXITSTATUS(status) == 0 ? "fine" : "failed") : WTERMSIG(status) == SIGSEGV ? "SIGSEGV" : "other signal");
    }
}

/* RLIMIT_AS: mmap, mremap and brk refuse to grow the space past it. */
static void address_space_limit(void) {
    pid_t child = fork();
    if (child == 0) {
        struct rlimit limit = {64 << 20, RLIM_INFINITY};
        setrlimit(RLIMIT_AS, &limit);
        void *small = mmap(NULL, 16 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        printf("RLIMIT_AS 64 MiB: mmap 16 MiB: %s\n", small == MAP_FAILED ? errno_name(errno) : "OK");
        void *big = mmap(NULL, 64 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        printf("  mmap 64 more MiB: %s\n", big == MAP_FAILED ? errno_name(errno) : "OK");
        void *grown = mremap(small, 16 << 20, 128 << 20, MREMAP_MAYMOVE);
        printf("  mremap 16 MiB to 128: %s\n", grown == MAP_FAILED ? errno_name(errno) : "OK");
        long start = syscall(SYS_brk, 0);
        printf("  brk by 100 MiB refused: %s\n", syscall(SYS_brk, start + (100 << 20)) == start ? "yes" : "no");
        munmap(small, 16 << 20);
        void *again = mmap(NULL, 16 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        printf("  after munmap, mmap 16 MiB again: %s\n", again == MAP_FAILED ? errno_name(errno) : "OK");
        _exit(0);
    }
    waitpid(child, NULL, 0);
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "recurse") == 0) {
        recurse(atoi(argv[2]) * 16);
        return 0;
    }
    setvbuf(stdout, NULL, _IONBF, 0);
    show("RLIMIT_NOFILE", RLIMIT_NOFILE);
    show("RLIMIT_STACK", RLIMIT_STACK);
    show("RLIMIT_CORE", RLIMIT_CORE);
    show("RLIMIT_AS", RLIMIT_AS);

    struct rlimit bad = {20, 10};
    CHECK("soft above hard", setrlimit(RLIMIT_NOFILE, &bad));
    CHECK("resource 99", setrlimit(99, &bad));
    struct rlimit eight = {8, 4096};
    CHECK("NOFILE to 8", setrlimit(RLIMIT_NOFILE, &eight));
    show("RLIMIT_NOFILE now", RLIMIT_NOFILE);
    int opened = 0, last = -1;
    for (;;) {
        int fd = open("/dev/null", O_RDONLY);
        if (fd < 0) {
            printf("open stopped after %d more with %s\n", opened, errno_name(errno));
            break;
        }
        opened++;
        last = fd;
    }
    printf("highest descriptor: %d\n", last);
    CHECK("dup2 to 8", dup2(0, 8));
    CHECK("F_DUPFD from 8", fcntl(0, F_DUPFD, 8));
    close(last);
    CHECK("dup2 to 7 (under the limit)", dup2(0, 7));
    pid_t child = fork();
    if (child == 0) {
        struct rlimit inherited;
        getrlimit(RLIMIT_NOFILE, &inherited);
        _exit(inherited.rlim_cur == 8 ? 0 : 1);
    }
    int status = 0;
    waitpid(child, &status, 0);
    printf("fork keeps the limit: %s\n", WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "yes" : "no");
    for (int fd = 3; fd <= 7; fd++) {
        close(fd);
    }
    file_size_limit();
    data_limit();
    cpu_limit();
    task_limit();
    stack_limit();
    address_space_limit();
    return 0;
}
