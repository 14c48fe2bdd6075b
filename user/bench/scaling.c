/*
 * How multi-CPU paths scale: one worker process per online CPU, each
 * pinned to its CPU, repeats an operation for a fixed time; prints the
 * operations per second of all workers together, one `bench NAME VALUE`
 * line per operation. xtask runs it with 1, 2, 4 and 8 CPUs on Lamina and
 * on Linux (`make bench BENCH=scaling`) and names the records by CPU count.
 *
 * usage: scaling [MILLISECONDS]   (each operation's run; default 1000)
 *
 * Operations: page_fault (a fresh 64 KiB anonymous mapping touched page
 * by page: 16 faults, counted each), mmap_munmap (4 KiB anonymous), open_close
 * (one file all workers open), pipe (one byte through the worker's own pipe
 * and back out), futex_wake (a wake with nobody waiting on the worker's own
 * word, in memory all workers share).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_WORKERS 64
#define FUTEX_WAKE 1 /* <linux/futex.h>, which musl-gcc does not see */
#define SHARED_FILE "/tmp/scaling-file"

/* Written by the parent (stop) and by each worker (its own count). */
struct board {
    volatile int stop;
    volatile long counts[MAX_WORKERS];
    volatile uint32_t futex_words[MAX_WORKERS * 16];
};

static uint64_t now_ns(void) {
    struct timespec time;
    clock_gettime(CLOCK_MONOTONIC, &time);
    return (uint64_t)time.tv_sec * 1000000000u + (uint64_t)time.tv_nsec;
}

static void pin_to(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof set, &set);
}

/* One unit of `operation` by worker `me`; returns the operations it made
 * (0: it failed, and the worker stops). */
static long one_round(const char *operation, int me, struct board *board, int ends[2]) {
    if (operation[0] == 'p' && operation[1] == 'a') { /* page_fault */
        char *region = mmap(NULL, 16 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (region == MAP_FAILED)
            return 0;
        for (int page = 0; page < 16; page++)
            region[page * 4096] = 1;
        munmap(region, 16 * 4096);
        return 16;
    }
    if (operation[0] == 'm') { /* mmap_munmap */
        void *region = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (region == MAP_FAILED)
            return 0;
        munmap(region, 4096);
        return 1;
    }
    if (operation[0] == 'o') { /* open_close */
        int fd = open(SHARED_FILE, O_RDONLY);
        if (fd < 0)
            return 0;
        close(fd);
        return 1;
    }
    if (operation[0] == 'p') { /* pipe */
        char byte = 'x';
        if (write(ends[1], &byte, 1) != 1 || read(ends[0], &byte, 1) != 1)
            return 0;
        return 1;
    }
    /* futex_wake: each worker's word on its own cache line */
    if (syscall(SYS_futex, &board->futex_words[me * 16], FUTEX_WAKE, 1, NULL, NULL, 0) < 0)
        return 0;
    return 1;
}

static void work(const char *operation, int me, struct board *board) {
    pin_to(me);
    int ends[2];
    if (pipe(ends) < 0)
        _exit(1);
    long done = 0;
    while (!board->stop) {
        long made = one_round(operation, me, board, ends);
        if (made == 0)
            _exit(1);
        done += made;
    }
    board->counts[me] = done;
    _exit(0);
}

/* All workers at `operation` for `milliseconds`: operations per second, or
 * -1 when a worker failed. */
static double measure(const char *operation, int workers, long milliseconds, struct board *board) {
    board->stop = 0;
    pid_t children[MAX_WORKERS];
    for (int me = 0; me < workers; me++) {
        board->counts[me] = 0;
        children[me] = fork();
        if (children[me] == 0)
            work(operation, me, board);
    }
    uint64_t start = now_ns();
    struct timespec pause = {milliseconds / 1000, (milliseconds % 1000) * 1000000};
    nanosleep(&pause, NULL);
    board->stop = 1;
    int failed = 0;
    for (int me = 0; me < workers; me++) {
        int status;
        waitpid(children[me], &status, 0);
        failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    }
    double seconds = (double)(now_ns() - start) / 1e9;
    if (failed)
        return -1;
    long total = 0;
    for (int me = 0; me < workers; me++)
        total += board->counts[me];
    return (double)total / seconds;
}

int main(int argc, char **argv) {
    long milliseconds = argc > 1 ? atol(argv[1]) : 1000;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    int workers = online < 1 ? 1 : online > MAX_WORKERS ? MAX_WORKERS : (int)online;
    struct board *board = mmap(NULL, sizeof *board, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    int file = open(SHARED_FILE, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (board == MAP_FAILED || file < 0 || write(file, "x", 1) != 1) {
        perror("scaling: setting up");
        return 1;
    }
    close(file);
    const char *operations[] = {"page_fault", "mmap_munmap", "open_close", "pipe", "futex_wake"};
    int status = 0;
    for (unsigned index = 0; index < sizeof operations / sizeof operations[0]; index++) {
        double rate = measure(operations[index], workers, milliseconds, board);
        if (rate < 0) {
            printf("scaling: %s failed in a worker\n", operations[index]);
            status = 1;
            continue;
        }
        printf("bench scale_%s %.0f\n", operations[index], rate);
    }
    unlink(SHARED_FILE);
    return status;
}
