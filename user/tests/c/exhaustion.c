/*
 * Resource exhaustion from user space (issue 23): each offender runs in a
 * child and is refused or ended the way Linux does it, and afterwards the
 * system still runs programs and has its memory back:
 * a memory hog that touches more than the machine has is killed by SIGKILL
 * (the OOM killer's signal), pipes until EMFILE, the whole address space
 * mapped until ENOMEM (then unmapped and usable again), an argv larger than
 * a quarter of the stack limit (E2BIG), and recursion without end
 * (SIGSEGV at the stack's guard).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/klog.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <lamina/meminfo.h>

#include "check.h"


/* How a child ended, in words that do not depend on the kernel. */
static const char *ending(int status) {
    static char text[64];
    if (WIFEXITED(status)) snprintf(text, sizeof text, "exit %d", WEXITSTATUS(status));
    else if (WTERMSIG(status) == SIGKILL) snprintf(text, sizeof text, "SIGKILL");
    else if (WTERMSIG(status) == SIGSEGV) snprintf(text, sizeof text, "SIGSEGV");
    else snprintf(text, sizeof text, "signal %d", WTERMSIG(status));
    return text;
}

/* The rest of the system still works: a program starts and exits 0. */
static void still_runs(void) {
    pid_t child = fork();
    if (child == 0) {
        execl("/bin/true", "true", (char *)NULL);
        _exit(127);
    }
    int status = 0;
    waitpid(child, &status, 0);
    printf("  then /bin/true: %s\n", ending(status));
}

static void run_child(const char *what, void (*offender)(void)) {
    pid_t child = fork();
    if (child == 0) {
        offender();
        _exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    printf("%s: %s\n", what, ending(status));
    still_runs();
}

/* Touches 1 GiB, far more than the guest has. */
static void memory_hog(void) {
    size_t size = (size_t)1 << 30;
    char *memory = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (memory == MAP_FAILED) _exit(2);
    for (size_t at = 0; at < size; at += 4096) memory[at] = 1;
}

static void pipes_until_refused(void) {
    int ends[2], made = 0;
    while (pipe(ends) == 0) made++;
    printf("  pipes made: %d, then %s\n", made, errno_name(errno));
}

/* Maps PROT_NONE pieces (1 TiB, then smaller) until nothing fits. */
static void whole_address_space(void) {
    static void *pieces[4096];
    static size_t sizes[4096];
    int count = 0;
    uint64_t total = 0;
    int last_error = 0;
    for (size_t size = (size_t)1 << 40; size >= ((size_t)1 << 30) && count < 4096; size >>= 2) {
        for (;;) {
            void *piece = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
            if (piece == MAP_FAILED) {
                last_error = errno;
                break;
            }
            pieces[count] = piece;
            sizes[count++] = size;
            total += size;
            if (count == 4096) break;
        }
    }
    printf("  mapped at least 100 TiB: %s, then %s\n", total >= ((uint64_t)100 << 40) ? "yes" : "no", errno_name(last_error));
    for (int i = 0; i < count; i++) munmap(pieces[i], sizes[i]);
    char *small = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    printf("  unmapped, then 1 MiB: %s\n", small == MAP_FAILED ? errno_name(errno) : (small[4095] = 1, "OK"));
}

/* 4 MiB of arguments: over a quarter of the 8 MiB stack limit. */
static void huge_argv(void) {
    struct rlimit stack = {8 << 20, RLIM_INFINITY};
    setrlimit(RLIMIT_STACK, &stack);
    enum { COUNT = 1024, LENGTH = 4096 };
    static char *arguments[COUNT + 2];
    arguments[0] = "true";
    for (int i = 1; i <= COUNT; i++) {
        arguments[i] = malloc(LENGTH);
        memset(arguments[i], 'a', LENGTH - 1);
        arguments[i][LENGTH - 1] = 0;
    }
    arguments[COUNT + 1] = NULL;
    execv("/bin/true", arguments);
    printf("  execve with 4 MiB of argv: %s\n", errno_name(errno));
}

static int __attribute__((noinline)) recurse_forever(int depth) {
    volatile char frame[16 << 10];
    frame[0] = (char)depth;
    if (depth < 0) return frame[0]; /* never: the stack ends first */
    return recurse_forever(depth + 1) + frame[0];
}

static void endless_recursion(void) {
    recurse_forever(0);
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    /* Linux's OOM killer reports on the console, which the comparison
     * reads: only emergencies may print there from now on. */
    klogctl(8, NULL, 1);
    long before = meminfo_kib("MemAvailable");
    run_child("memory hog (1 GiB touched)", memory_hog);
    run_child("memory hog again", memory_hog);
    run_child("pipes until refused", pipes_until_refused);
    run_child("the whole address space", whole_address_space);
    run_child("huge argv", huge_argv);
    run_child("endless recursion", endless_recursion);
    long after = meminfo_kib("MemAvailable");
    /* Caches may keep a little: within 8 MiB counts as all back. */
    printf("memory back after the offenders: %s\n", before > 0 && after > before - 8192 ? "yes" : "no");
    return 0;
}
