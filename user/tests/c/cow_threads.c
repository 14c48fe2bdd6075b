/*
 * Memory stays coherent while a threaded process forks: threads on other
 * CPUs keep incrementing their own counters on pages the fork makes
 * copy-on-write, and no increment may be lost. An increment is lost when
 * a thread still writes through a TLB entry that allows writing to the
 * old frame after another thread has copied the page (a fork that lets
 * its threads fault before their CPUs' TLBs are flushed), or when a
 * thread reads a frame the kernel already replaced.
 *
 * Each writer is pinned to its own CPU (where there are several), so the
 * test means something only on a machine with two CPUs or more; its
 * output is the same on any.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

#define WRITERS 3
#define PAGES 16
#define FORKS 300
#define LINE 64

static unsigned char *area;
static atomic_int stop;
static atomic_int running;
static long cpus;

struct writer {
    int index;
    unsigned long increments;
    unsigned long lost;
};

static void pin_to(long cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu % cpus, &set);
    sched_setaffinity(0, sizeof set, &set);
}

/* Increments its counter on every page, round and round, until told to
 * stop; then compares each counter with the increments it made there. */
static void *writer_body(void *argument) {
    struct writer *self = argument;
    pin_to(self->index + 1);
    unsigned long made[PAGES] = {0};
    atomic_fetch_add(&running, 1);
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        for (int page = 0; page < PAGES; page++) {
            volatile unsigned long *counter = (volatile unsigned long *)(area + page * 4096 + self->index * LINE);
            *counter = *counter + 1;
            made[page]++;
        }
    }
    for (int page = 0; page < PAGES; page++) {
        unsigned long seen = *(volatile unsigned long *)(area + page * 4096 + self->index * LINE);
        self->increments += made[page];
        if (seen != made[page])
            self->lost += made[page] > seen ? made[page] - seen : seen - made[page];
    }
    return NULL;
}

int main(void) {
    cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus < 1)
        cpus = 1;
    area = mmap(NULL, PAGES * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT("mmap the pages", area != MAP_FAILED);
    if (area == MAP_FAILED)
        return 1;
    pin_to(0);
    pthread_t threads[WRITERS];
    struct writer writers[WRITERS] = {0};
    for (int i = 0; i < WRITERS; i++) {
        writers[i].index = i;
        pthread_create(&threads[i], NULL, writer_body, &writers[i]);
    }
    while (atomic_load(&running) < WRITERS)
        sched_yield();
    int forked = 0, children_ok = 0;
    for (int round = 0; round < FORKS; round++) {
        pid_t child = fork();
        if (child == 0) {
            /* The child reads its snapshot once: every counter is some value. */
            _exit(area[0] == 0xff && area[1] == 0xff ? 1 : 0);
        }
        if (child < 0)
            break;
        forked++;
        /* The parent writes too, so pages are copied while the writers run. */
        area[(round % PAGES) * 4096 + 4000] = (unsigned char)round;
        int status = 0;
        if (waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0)
            children_ok++;
    }
    atomic_store(&stop, 1);
    unsigned long lost = 0, increments = 0;
    for (int i = 0; i < WRITERS; i++) {
        pthread_join(threads[i], NULL);
        lost += writers[i].lost;
        increments += writers[i].increments;
    }
    int marks_ok = 1;
    for (int page = 0; page < PAGES; page++) {
        int last = -1;
        for (int round = 0; round < forked; round++)
            if (round % PAGES == page)
                last = round;
        if (last >= 0 && area[page * 4096 + 4000] != (unsigned char)last)
            marks_ok = 0;
    }
    printf("forks: %d, children that exited 0: %d\n", forked, children_ok);
    EXPECT("writers made increments", increments > 0);
    printf("increments lost: %lu\n", lost);
    EXPECT("parent's own marks kept", marks_ok);
    return lost == 0 && marks_ok ? 0 : 1;
}
