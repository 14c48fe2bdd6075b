/*
 * Large writes into pipes: one write(2) and one writev(2) of more than the
 * pipe holds arrive whole and in order at a reader; a nonblocking write
 * into an empty pipe takes what fits; a write whose buffer runs into an
 * unmapped page delivers the bytes before it and answers their count (the
 * fault lies on a 64 KiB boundary, where Linux's page-by-page copy and
 * Lamina's staged parts stop alike); a write of zero bytes is 0 even with
 * no reader left.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static unsigned char pattern(size_t index) {
    return (unsigned char)(index * 7 + index / 251);
}

static void fill(unsigned char *bytes, size_t start, size_t length) {
    for (size_t index = 0; index < length; index++) {
        bytes[index] = pattern(start + index);
    }
}

/* A child that reads the pipe to its end and prints how much came and
 * whether every byte was the pattern's. */
static pid_t start_reader(int pipe_ends[2], const char *label) {
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        close(pipe_ends[1]);
        static unsigned char bytes[8192];
        size_t total = 0;
        int in_order = 1;
        for (;;) {
            ssize_t count = read(pipe_ends[0], bytes, sizeof bytes);
            if (count <= 0) {
                break;
            }
            for (ssize_t index = 0; index < count; index++) {
                in_order &= bytes[index] == pattern(total + index);
            }
            total += count;
        }
        printf("%s: the reader got %zu bytes, %s\n", label, total, in_order ? "in order" : "NOT in order");
        fflush(stdout);
        _exit(0);
    }
    close(pipe_ends[0]);
    return child;
}

/* The writer's lines first, then the reader's (which comes at end of file). */
static void finish(int pipe_ends[2], pid_t reader) {
    fflush(stdout);
    close(pipe_ends[1]);
    waitpid(reader, NULL, 0);
}

static void one_large_write(void) {
    size_t length = (1 << 20) + 5;
    unsigned char *bytes = malloc(length);
    fill(bytes, 0, length);
    int ends[2];
    pipe(ends);
    pid_t reader = start_reader(ends, "write 1 MiB + 5");
    CHECK("write 1 MiB + 5 into a pipe", write(ends[1], bytes, length));
    finish(ends, reader);
    free(bytes);
}

static void gathered_write(void) {
    static unsigned char first[100000], second[3], third[150001];
    fill(first, 0, sizeof first);
    fill(second, sizeof first, sizeof second);
    fill(third, sizeof first + sizeof second, sizeof third);
    struct iovec vectors[4] = {{first, sizeof first}, {NULL, 0}, {second, sizeof second}, {third, sizeof third}};
    int ends[2];
    pipe(ends);
    pid_t reader = start_reader(ends, "writev of 4 vectors");
    CHECK("writev 250004 bytes in 4 vectors (one empty) into a pipe", writev(ends[1], vectors, 4));
    finish(ends, reader);
}

static void nonblocking_write(void) {
    static unsigned char bytes[200000];
    int ends[2];
    pipe2(ends, O_NONBLOCK);
    long capacity = fcntl(ends[1], F_GETPIPE_SZ);
    CHECK("nonblocking write of 200000 bytes into an empty pipe", write(ends[1], bytes, sizeof bytes) == capacity ? 1 : 0);
    CHECK("  and again into the full pipe", write(ends[1], bytes, sizeof bytes));
    close(ends[0]);
    close(ends[1]);
}

static void write_into_a_hole(void) {
    size_t mapped = 128 * 1024;
    unsigned char *area = mmap(NULL, mapped + 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(area + mapped, 4096);
    fill(area, 0, mapped);
    int ends[2];
    pipe(ends);
    pid_t reader = start_reader(ends, "a write into a hole");
    CHECK("write 192 KiB whose last 64 KiB are unmapped", write(ends[1], area, mapped + 64 * 1024));
    CHECK("write starting in the hole", write(ends[1], area + mapped, 10));
    finish(ends, reader);
    munmap(area, mapped);
}

static void zero_bytes(void) {
    signal(SIGPIPE, SIG_IGN);
    int ends[2];
    pipe(ends);
    close(ends[0]);
    CHECK("write of 0 bytes with no reader", write(ends[1], "", 0));
    CHECK("write of 1 byte with no reader", write(ends[1], "x", 1));
    close(ends[1]);
}

int main(void) {
    one_large_write();
    gathered_write();
    nonblocking_write();
    write_into_a_hole();
    zero_bytes();
    return 0;
}
