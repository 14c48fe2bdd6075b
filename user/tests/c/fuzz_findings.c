/*
 * Regressions for what the system-call fuzzer (user/fuzz/syscall_fuzz.c)
 * and the allocation-failure driver (user/fuzz/allocation_failures.c)
 * found, each once a kernel hang, a leak or a wrong answer on Lamina:
 * - kill(0, sig) signals the caller's own process group (it deadlocked the
 *   caller's CPU on its own state lock);
 * - sched_getparam into a page that must be faulted in (a fresh shared
 *   file mapping) while another thread takes the process's locks;
 * - an orphan goes to its nearest living PR_SET_CHILD_SUBREAPER ancestor,
 *   which reaps it (it went to init);
 * - two threads of one process calling execve at once: one wins, the
 *   process runs the new program (both waited for the other to leave, and
 *   the process hung beyond SIGKILL);
 * - path lookups by a process with 60,000 supplementary groups (each
 *   lookup copied the list; with several at once the heap ran out);
 * - a memfd mapped shared, unmapped and closed gives its memory back (the
 *   mapping held the nameless file for good: 32 KiB lost a cycle).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <grp.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <lamina/meminfo.h>

#include "check.h"

static volatile sig_atomic_t got;
static void on_signal(int signal) { got = signal; }


static pthread_barrier_t both_ready;

static void *exec_too(void *unused) {
    (void)unused;
    pthread_barrier_wait(&both_ready);
    execl("/bin/true", "true", (char *)NULL);
    return NULL;
}

/* A process whose two threads both call execve at once; its exit status. */
static int exec_race(void) {
    pid_t child = fork();
    if (child == 0) {
        pthread_t other;
        pthread_barrier_init(&both_ready, NULL, 2);
        pthread_create(&other, NULL, exec_too, NULL);
        pthread_barrier_wait(&both_ready);
        execl("/bin/true", "true", (char *)NULL);
        _exit(99);
    }
    int status = 0;
    waitpid(child, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void *spin_on_signals(void *unused) {
    (void)unused;
    sigset_t set;
    for (int i = 0; i < 2000; i++) sigprocmask(SIG_BLOCK, NULL, &set);
    return NULL;
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);

    /* kill(0, ...) reaches the caller itself, in its own group. */
    signal(SIGUSR1, on_signal);
    CHECK("setpgid(0, 0)", setpgid(0, 0));
    CHECK("kill(0, SIGUSR1)", kill(0, SIGUSR1));
    printf("  the caller got signal %d\n", (int)got);
    got = 0;
    CHECK("kill(-getpgrp(), SIGUSR1)", kill(-getpgrp(), SIGUSR1));
    printf("  the caller got signal %d\n", (int)got);

    /* sched_getparam's copy out faults in a shared file page while a
     * second thread keeps taking the process's signal state. */
    int file = open("/tmp/fuzz_findings.page", O_RDWR | O_CREAT | O_TRUNC, 0600);
    CHECK("ftruncate", ftruncate(file, 4096));
    struct sched_param *param = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, file, 0);
    printf("mmap: %s\n", param == MAP_FAILED ? "failed" : "OK");
    pthread_t spinner;
    pthread_create(&spinner, NULL, spin_on_signals, NULL);
    /* musl's wrapper answers ENOSYS without asking: the call itself. */
    CHECK("sched_getparam into a fresh shared page", (int)syscall(SYS_sched_getparam, 0, param));
    printf("  priority %d\n", param->sched_priority);
    pthread_join(spinner, NULL);
    munmap(param, 4096);
    close(file);
    unlink("/tmp/fuzz_findings.page");

    /* A subreaper adopts its grandchild when the child between ends. */
    CHECK("PR_SET_CHILD_SUBREAPER", prctl(PR_SET_CHILD_SUBREAPER, 1));
    int report[2];
    pipe(report);
    pid_t reaper = getpid();
    pid_t middle = fork();
    if (middle == 0) {
        if (fork() == 0) {
            /* The middle process exits at once; wait to be adopted. */
            char answer = 'n';
            for (int polls = 0; polls < 5000; polls++) {
                if (getppid() == reaper) {
                    answer = 'y';
                    break;
                }
                usleep(1000);
            }
            write(report[1], &answer, 1);
            _exit(7);
        }
        _exit(0);
    }
    int status = 0;
    CHECK("waitpid(middle)", waitpid(middle, &status, 0) == middle ? 0 : -1);
    char answer = '?';
    read(report[0], &answer, 1);
    printf("  the orphan's parent is the subreaper: %c\n", answer);
    pid_t reaped = waitpid(-1, &status, 0);
    printf("  the subreaper reaped it: %s, exit %d\n", reaped > 0 ? "yes" : "no", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    CHECK("waitpid: nothing left", waitpid(-1, &status, WNOHANG));

    int odd = 0;
    for (int round = 0; round < 20; round++)
        if (exec_race() != 0) odd++;
    printf("two threads exec at once, 20 times: %d ended other than by true's exit 0\n", odd);

    static gid_t many[60000];
    for (int i = 0; i < 60000; i++) many[i] = (gid_t)(1000 + i);
    CHECK("setgroups(60000)", setgroups(60000, many));
    printf("  getgroups: %d\n", getgroups(0, NULL));
    int found = 0;
    struct stat status_of;
    for (int i = 0; i < 500; i++) found += stat("/tmp", &status_of) == 0;
    printf("  500 lookups with 60000 groups: %d found\n", found);
    CHECK("setgroups(0)", setgroups(0, NULL));

    long free_before = meminfo_kib("MemFree");
    for (int cycle = 0; cycle < 200; cycle++) {
        int memory = memfd_create("cycle", 0);
        if (memory < 0 || ftruncate(memory, 32 << 10) != 0) break;
        char *mapped = mmap(NULL, 32 << 10, PROT_READ | PROT_WRITE, MAP_SHARED, memory, 0);
        if (mapped != MAP_FAILED) {
            mapped[20000] = 1;
            munmap(mapped, 32 << 10);
        }
        close(memory);
    }
    printf("200 memfds of 32 KiB mapped, unmapped and closed: memory back: %s\n", meminfo_kib("MemFree") > free_before - 2048 ? "yes" : "no");
    return 0;
}
