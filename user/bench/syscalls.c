/*
 * The `syscalls` benchmark group, run the same on Lamina and on Linux:
 * `syscalls NAME[,NAME...] [ROUNDS]` (or `all`) times ROUNDS operations of
 * each kind named and prints `bench NAME <nanoseconds per operation>`. Under `-icount shift=0` the
 * guest's clock counts instructions, so the figure is guest instructions
 * per operation; under plain TCG it is wall time.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now(void) {
    struct timespec time;
    clock_gettime(CLOCK_MONOTONIC, &time);
    return (uint64_t)time.tv_sec * 1000000000u + (uint64_t)time.tv_nsec;
}

static char page[4096];

#include "lmbench_like.h"
#include "native_ipc.h"

static void getpid_loop(long rounds) {
    for (long i = 0; i < rounds; i++)
        syscall(SYS_getpid);
}

/* libc's clock_gettime: through the vDSO where the kernel gives one. */
static void clock_gettime_loop(long rounds) {
    struct timespec time;
    for (long i = 0; i < rounds; i++)
        clock_gettime(CLOCK_MONOTONIC, &time);
}

static void read_devzero(long rounds) {
    int fd = open("/dev/zero", O_RDONLY);
    for (long i = 0; i < rounds; i++)
        read(fd, page, sizeof page);
    close(fd);
}

static void write_devnull(long rounds) {
    int fd = open("/dev/null", O_WRONLY);
    for (long i = 0; i < rounds; i++)
        write(fd, page, sizeof page);
    close(fd);
}

static void pipe_pingpong(long rounds) {
    int there[2], back[2];
    pipe(there);
    pipe(back);
    char byte = 0;
    pid_t child = fork();
    if (child == 0) {
        for (long i = 0; i < rounds; i++) {
            read(there[0], &byte, 1);
            write(back[1], &byte, 1);
        }
        _exit(0);
    }
    for (long i = 0; i < rounds; i++) {
        write(there[1], &byte, 1);
        read(back[0], &byte, 1);
    }
    waitpid(child, NULL, 0);
}

static void *yielder(void *argument) {
    for (long i = 0; i < (long)argument; i++)
        sched_yield();
    return NULL;
}

/* Two threads of one process yielding to each other. */
static void yield_two(long rounds) {
    pthread_t partner;
    pthread_create(&partner, NULL, yielder, (void *)rounds);
    yielder((void *)rounds);
    pthread_join(partner, NULL);
}

static volatile uint32_t turn;

static long futex(volatile uint32_t *word, int operation, uint32_t value) {
    return syscall(SYS_futex, word, operation, value, NULL, NULL, 0);
}

/* Two threads hand a token back and forth through one futex word. */
static void *futex_partner(void *argument) {
    long rounds = (long)argument;
    for (long i = 0; i < rounds; i++) {
        while (turn != 1)
            futex(&turn, 0 /* FUTEX_WAIT */, 0);
        turn = 0;
        futex(&turn, 1 /* FUTEX_WAKE */, 1);
    }
    return NULL;
}

static void futex_pingpong(long rounds) {
    pthread_t partner;
    turn = 0;
    pthread_create(&partner, NULL, futex_partner, (void *)rounds);
    for (long i = 0; i < rounds; i++) {
        turn = 1;
        futex(&turn, 1, 1);
        while (turn != 0)
            futex(&turn, 0, 1);
    }
    pthread_join(partner, NULL);
}

static void fork_exit_wait(long rounds) {
    for (long i = 0; i < rounds; i++) {
        pid_t child = fork();
        if (child == 0)
            _exit(0);
        waitpid(child, NULL, 0);
    }
}

static void fork_exec_wait(long rounds) {
    for (long i = 0; i < rounds; i++) {
        pid_t child = fork();
        if (child == 0) {
            char *arguments[] = {"/bench/syscalls", "nothing", NULL};
            execve(arguments[0], arguments, NULL);
            _exit(127);
        }
        waitpid(child, NULL, 0);
    }
}

static void page_fault_zero(long rounds) {
    char *region = mmap(NULL, (size_t)rounds * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    for (long i = 0; i < rounds; i++)
        region[i * 4096] = 1;
    munmap(region, (size_t)rounds * 4096);
}

static void cow_fault(long rounds) {
    char *region = mmap(NULL, (size_t)rounds * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    for (long i = 0; i < rounds; i++)
        region[i * 4096] = 1;
    int ends[2];
    pipe(ends);
    pid_t child = fork();
    if (child == 0) {
        char go;
        read(ends[0], &go, 1);
        _exit(0);
    }
    uint64_t start = now();
    for (long i = 0; i < rounds; i++)
        region[i * 4096] = 2;
    uint64_t spent = now() - start;
    write(ends[1], "x", 1);
    waitpid(child, NULL, 0);
    printf("bench cow_fault %.1f\n", (double)spent / (double)rounds);
}

static void mmap_munmap(long rounds) {
    for (long i = 0; i < rounds; i++) {
        char *region = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        munmap(region, 1 << 20);
    }
}

static void file_cycle(long rounds) {
    for (long i = 0; i < rounds; i++) {
        int fd = open("/tmp/bench-file", O_CREAT | O_WRONLY | O_TRUNC, 0644);
        write(fd, page, sizeof page);
        close(fd);
        unlink("/tmp/bench-file");
    }
}

/* A 4 KiB file on /tmp (tmpfs: always cached), written once. */
static int tmpfs_file(void) {
    int fd = open("/tmp/bench-4k", O_CREAT | O_RDWR | O_TRUNC, 0644);
    pwrite(fd, page, sizeof page, 0);
    return fd;
}

static void read_tmpfs(long rounds) {
    int fd = tmpfs_file();
    for (long i = 0; i < rounds; i++)
        pread(fd, page, sizeof page, 0);
    close(fd);
}

static void write_tmpfs(long rounds) {
    int fd = tmpfs_file();
    for (long i = 0; i < rounds; i++)
        pwrite(fd, page, sizeof page, 0);
    close(fd);
}

static void stat_hot(long rounds) {
    struct stat status;
    for (long i = 0; i < rounds; i++)
        stat("/bench/syscalls", &status);
}

static void getdents_1000(long rounds) {
    mkdir("/tmp/thousand", 0755);
    char name[64];
    for (int i = 0; i < 1000; i++) {
        snprintf(name, sizeof name, "/tmp/thousand/f%d", i);
        close(open(name, O_CREAT | O_WRONLY, 0644));
    }
    uint64_t start = now();
    for (long i = 0; i < rounds; i++) {
        DIR *directory = opendir("/tmp/thousand");
        while (readdir(directory))
            ;
        closedir(directory);
    }
    printf("bench getdents_1000 %.1f\n", (double)(now() - start) / (double)rounds);
}

static void fork_64m(long rounds) {
    size_t size = 64u << 20;
    char *region = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    for (size_t offset = 0; offset < size; offset += 4096)
        region[offset] = 1;
    fork_exit_wait(0);
    uint64_t start = now();
    for (long i = 0; i < rounds; i++) {
        pid_t child = fork();
        if (child == 0)
            _exit(0);
        waitpid(child, NULL, 0);
    }
    printf("bench fork_64m %.1f\n", (double)(now() - start) / (double)rounds);
}

/* How long a 1 ms sleep really takes: the timer's precision (a kernel
 * that wakes sleepers only on its periodic tick rounds up to the tick). */
static void nanosleep_1ms(long rounds) {
    struct timespec millisecond = {0, 1000000};
    for (long i = 0; i < rounds; i++)
        nanosleep(&millisecond, NULL);
}

struct benchmark {
    const char *name;
    void (*run)(long);
    long rounds;
    int self_timed;
};

static const struct benchmark benchmarks[] = {
    {"getpid", getpid_loop, 20000, 0},
    {"clock_gettime", clock_gettime_loop, 20000, 0},
    {"read_devzero_4k", read_devzero, 5000, 0},
    {"write_devnull_4k", write_devnull, 5000, 0},
    {"pipe_pingpong", pipe_pingpong, 2000, 0},
    {"sched_yield_2threads", yield_two, 2000, 0},
    {"futex_pingpong", futex_pingpong, 2000, 0},
    {"fork_exit_wait", fork_exit_wait, 100, 0},
    {"fork_exec_wait", fork_exec_wait, 50, 0},
    {"page_fault_zero", page_fault_zero, 2000, 0},
    {"cow_fault", cow_fault, 2000, 1},
    {"mmap_munmap_1m", mmap_munmap, 2000, 0},
    {"file_create_write_close_unlink_4k", file_cycle, 2000, 0},
    {"read_tmpfs_4k", read_tmpfs, 5000, 0},
    {"write_tmpfs_4k", write_tmpfs, 5000, 0},
    {"stat_hot", stat_hot, 5000, 0},
    {"getdents_1000", getdents_1000, 20, 1},
    {"fork_64m", fork_64m, 5, 1},
    {"nanosleep_1ms", nanosleep_1ms, 100, 0},
    /* lmbench_like.h */
    {"lat_ctx", lat_ctx, 200, 1},
    {"lat_sig_install", lat_sig_install, 5000, 0},
    {"lat_sig_deliver", lat_sig_deliver, 2000, 0},
    {"waiting_calls", waiting_calls, 1000, 1},
    {"bandwidth", bandwidth, 64, 1},
    {"open_close", open_close, 5000, 0},
    {"mmap_file_fault", mmap_file_fault, 2048, 1},
    {"thread_create_join", thread_create_join, 500, 0},
    /* native_ipc.h */
    {"ipc_roundtrips", ipc_roundtrips, 2000, 1},
};

/* `timed NAME ROUNDS PROGRAM ARGS...`: runs the program ROUNDS times, one
 * after another, and prints the time per run. */
static int timed(int argc, char **argv) {
    if (argc < 5)
        return 2;
    long rounds = atol(argv[3]);
    uint64_t start = now();
    for (long i = 0; i < rounds; i++) {
        pid_t child = fork();
        if (child == 0) {
            execv(argv[4], argv + 4);
            _exit(127);
        }
        int status;
        waitpid(child, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            printf("%s failed: status %x\n", argv[2], status);
            return 1;
        }
    }
    printf("bench %s %.1f\n", argv[2], (double)(now() - start) / (double)rounds);
    return 0;
}

/* Whether `list` (`all`, or names separated by commas) names `name`. */
static int selected(const char *list, const char *name) {
    if (strcmp(list, "all") == 0)
        return 1;
    size_t length = strlen(name);
    for (const char *at = list; at; at = strchr(at, ',') ? strchr(at, ',') + 1 : NULL)
        if (strncmp(at, name, length) == 0 && (at[length] == ',' || at[length] == 0))
            return 1;
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], "nothing") == 0)
        return 0;
    if (strcmp(argv[1], "timed") == 0)
        return timed(argc, argv);
    for (size_t i = 0; i < sizeof benchmarks / sizeof benchmarks[0]; i++) {
        const struct benchmark *benchmark = &benchmarks[i];
        if (!selected(argv[1], benchmark->name))
            continue;
        long rounds = argc > 2 ? atol(argv[2]) : benchmark->rounds;
        if (benchmark->self_timed) {
            benchmark->run(rounds);
        } else {
            benchmark->run(rounds / 10 + 1); /* warm up */
            uint64_t start = now();
            benchmark->run(rounds);
            printf("bench %s %.1f\n", benchmark->name, (double)(now() - start) / (double)rounds);
        }
        fflush(stdout);
    }
    return 0;
}
