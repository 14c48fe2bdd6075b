/*
 * CPU affinity as Linux keeps it: a thread's mask is what it set (only
 * CPUs that exist), a new thread and a forked child start with their
 * creator's, and the errors: EINVAL for a mask with no existing CPU or a
 * size too small to read it into, ESRCH for a thread that does not exist.
 * And a mask is obeyed: a thread pinned to a CPU runs there (the caller
 * before sched_setaffinity returns; a thread spinning in user mode, pinned
 * by another, within a few seconds at most), and a new thread starts on
 * its creator's only CPU.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>
#include <sys/wait.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"

static int first_cpu_only(void) {
    cpu_set_t set;
    CPU_ZERO(&set);
    sched_getaffinity(0, sizeof set, &set);
    return CPU_COUNT(&set) == 1 && CPU_ISSET(0, &set);
}

static void *thread_body(void *result) {
    *(int *)result = first_cpu_only();
    return NULL;
}

static atomic_int spinner_cpu = -1;
static atomic_int spinner_stop;

/* Spins in user mode, publishing the CPU it runs on. */
static void *spin_body(void *unused) {
    (void)unused;
    while (!atomic_load(&spinner_stop))
        atomic_store(&spinner_cpu, sched_getcpu());
    return NULL;
}

static void *report_cpu(void *cpu) {
    *(int *)cpu = sched_getcpu();
    return NULL;
}

static double now_seconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec + now.tv_nsec / 1e9;
}

/* Pins the caller to each online CPU in turn, then a spinning thread to
 * the last CPU from outside, then to CPU 0. */
static void masks_are_obeyed(void) {
    int cpus = sysconf(_SC_NPROCESSORS_ONLN), everywhere = 1;
    cpu_set_t set;
    for (int cpu = 0; cpu < cpus; cpu++) {
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        sched_setaffinity(0, sizeof set, &set);
        everywhere &= sched_getcpu() == cpu;
    }
    EXPECT("pinned to each CPU in turn, the caller runs there", everywhere);
    int thread_cpu = -1;
    pthread_t thread;
    pthread_create(&thread, NULL, report_cpu, &thread_cpu);
    pthread_join(thread, NULL);
    EXPECT("its new thread starts on that CPU", thread_cpu == cpus - 1);
    CPU_ZERO(&set);
    CPU_SET(0, &set);
    sched_setaffinity(0, sizeof set, &set);
    pthread_create(&thread, NULL, spin_body, NULL);
    for (int target = cpus - 1, round = 0; round < 2; round++, target = 0) {
        CPU_ZERO(&set);
        CPU_SET(target, &set);
        pthread_setaffinity_np(thread, sizeof set, &set);
        double deadline = now_seconds() + 5;
        while (atomic_load(&spinner_cpu) != target && now_seconds() < deadline)
            sched_yield();
        /* Still there after another look: it does not wander off. */
        int arrived = atomic_load(&spinner_cpu) == target;
        EXPECT(round == 0 ? "a spinning thread pinned by another moves to the last CPU" : "and back to CPU 0", arrived);
    }
    atomic_store(&spinner_stop, 1);
    pthread_join(thread, NULL);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    cpu_set_t set;
    CPU_ZERO(&set);
    CHECK("sched_getaffinity", sched_getaffinity(0, sizeof set, &set));
    EXPECT("every online CPU", CPU_COUNT(&set) == sysconf(_SC_NPROCESSORS_ONLN));
    CPU_ZERO(&set);
    CPU_SET(0, &set);
    CHECK("pin to CPU 0", sched_setaffinity(0, sizeof set, &set));
    EXPECT("reads back CPU 0 alone", first_cpu_only());
    int in_thread = 0;
    pthread_t thread;
    pthread_create(&thread, NULL, thread_body, &in_thread);
    pthread_join(thread, NULL);
    EXPECT("a new thread starts with it", in_thread);
    pid_t child = fork();
    if (child == 0)
        _exit(first_cpu_only() ? 0 : 1);
    int status = 0;
    waitpid(child, &status, 0);
    EXPECT("a forked child starts with it", WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CPU_ZERO(&set);
    CHECK("an empty mask", sched_setaffinity(0, sizeof set, &set));
    CPU_SET(1000, &set);
    CHECK("only a CPU that does not exist", sched_setaffinity(0, sizeof set, &set));
    CHECK("no such thread", sched_setaffinity(999999, sizeof set, &set));
    CHECK("negative id (set)", sched_setaffinity(-1, sizeof set, &set));
    CHECK("negative id (get)", sched_getaffinity(-1, sizeof set, &set));
    CHECK("get into 4 bytes", syscall(SYS_sched_getaffinity, 0, 4, &set));
    CPU_ZERO(&set);
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
        CPU_SET(cpu, &set);
    CHECK("every CPU again", sched_setaffinity(0, sizeof set, &set));
    EXPECT("back to every online CPU", (sched_getaffinity(0, sizeof set, &set), CPU_COUNT(&set) == sysconf(_SC_NPROCESSORS_ONLN)));
    masks_are_obeyed();
    return 0;
}
