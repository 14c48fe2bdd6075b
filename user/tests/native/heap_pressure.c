/*
 * Program data cannot take the kernel's last part of its heap (issue 23;
 * `kernel_memory::program_data_fits`). Pipes enlarged to 1 MiB and filled,
 * and writers blocked on full pipes, ask for far more than the kernel heap
 * holds: the pipes stop taking bytes (a short write, EAGAIN or ENOMEM)
 * while the kernel still forks, runs a child that asks for 65,536
 * supplementary groups (a 256 KiB copy: it gets them or ENOMEM, and the
 * kernel goes on) and reaps it. Closing the pipes gives the heap back.
 * Before the fix a run like this emptied the heap and panicked the kernel
 * in an infallible allocation (CI's fuzz run, stop 55). Lamina only (the
 * heap is Lamina's); each line says what was checked, "FAIL" marks a failure.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <lamina/meminfo.h>

#define PIPES 96
#define WRITERS 8
#define MIB (1 << 20)

static int failures;

static void check(const char *what, int ok) {
    printf("%s %s\n", ok ? "ok" : "FAIL", what);
    fflush(stdout);
    if (!ok) failures++;
}

/* Kernel heap in use, KiB: what /proc/meminfo counts as neither free
 * frames nor page cache. */
static long heap_used_kib(void) {
    return meminfo_kib("MemTotal") - meminfo_kib("MemFree") - meminfo_kib("Cached");
}

static int ends[PIPES][2];
static char *chunk;

/* A writer that blocks on a full pipe with a 1 MiB request. */
static void *blocked_writer(void *argument) {
    int fd = ends[(long)argument][1];
    int flags = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    write(fd, chunk, MIB);
    return NULL;
}

/* A child asking for 65,536 groups: 0 if it got them or ENOMEM, else 1. */
static int many_groups(void) {
    static gid_t groups[65536];
    for (int index = 0; index < 65536; index++) groups[index] = index;
    int result = setgroups(65536, groups);
    return result == 0 || errno == ENOMEM ? 0 : 1;
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    chunk = malloc(MIB);
    memset(chunk, 'x', MIB);
    long used_before = heap_used_kib();
    long held = 0;
    int refused = 0;
    for (int index = 0; index < PIPES; index++) {
        if (pipe2(ends[index], O_NONBLOCK) != 0) {
            check("pipe2", 0);
            return 1;
        }
        fcntl(ends[index][1], F_SETPIPE_SZ, MIB);
        ssize_t written = write(ends[index][1], chunk, MIB);
        if (written > 0) held += written;
        if (written < MIB) refused++;
    }
    printf("pipes hold %ld KiB of program data, %d of %d pipes refused part of 1 MiB\n", held / 1024, refused, PIPES);
    check("the pipes were refused before they held 96 MiB", refused > 0);
    pthread_t writers[WRITERS];
    for (long index = 0; index < WRITERS; index++) {
        pthread_create(&writers[index], NULL, blocked_writer, (void *)index);
    }
    usleep(200 * 1000);
    pid_t child = fork();
    if (child == 0) _exit(many_groups());
    check("fork with the heap pressed by pipes", child > 0);
    int status = -1;
    check("reaping the child", child > 0 && waitpid(child, &status, 0) == child);
    check("the child's setgroups(65536) gave the groups or ENOMEM", WIFEXITED(status) && WEXITSTATUS(status) == 0);
    for (int index = 0; index < PIPES; index++) close(ends[index][0]);
    for (long index = 0; index < WRITERS; index++) pthread_join(writers[index], NULL);
    for (int index = 0; index < PIPES; index++) close(ends[index][1]);
    long grown = heap_used_kib() - used_before;
    printf("heap in use after closing the pipes: %+ld KiB against before\n", grown);
    check("closing the pipes gave the heap back (within 512 KiB)", grown < 512);
    return failures ? 1 : 0;
}
