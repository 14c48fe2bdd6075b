/*
 * Descriptors used right after they change: what a kernel that remembers
 * its last descriptor look-ups must still get right. A closed descriptor
 * is EBADF at once; a pipe's reader sees end-of-file as soon as the writer
 * closes, though the writer had just used it; a reused number reaches the
 * new file; dup2 over a used descriptor redirects it; a descriptor closed
 * by another thread is EBADF for this one; numbers that share low bits do
 * not mix up their files.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

static long size_of(const char *path) {
    struct stat status;
    return stat(path, &status) == 0 ? (long)status.st_size : -1;
}

static int shared_fd;

static void *close_it(void *unused) {
    (void)unused;
    close(shared_fd);
    return NULL;
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    int null = open("/dev/null", O_WRONLY);
    CHECK("write to /dev/null", write(null, "x", 1));
    CHECK("close it", close(null));
    CHECK("write to the closed descriptor", write(null, "x", 1));

    int ends[2];
    CHECK("pipe", pipe(ends));
    CHECK("write to the pipe", write(ends[1], "ab", 2));
    CHECK("close the writer just used", close(ends[1]));
    char buffer[8];
    CHECK("read what was written", read(ends[0], buffer, sizeof buffer));
    CHECK("then end-of-file", read(ends[0], buffer, sizeof buffer));
    close(ends[0]);

    int first = open("/tmp/reuse-a", O_CREAT | O_TRUNC | O_WRONLY, 0644);
    CHECK("write 3 bytes to a", write(first, "aaa", 3));
    close(first);
    int second = open("/tmp/reuse-b", O_CREAT | O_TRUNC | O_WRONLY, 0644);
    EXPECT("b got a's number", second == first);
    CHECK("write 5 bytes through the number", write(second, "bbbbb", 5));
    printf("  sizes a b: %ld %ld\n", size_of("/tmp/reuse-a"), size_of("/tmp/reuse-b"));

    int third = open("/tmp/reuse-c", O_CREAT | O_TRUNC | O_WRONLY, 0644);
    CHECK("write 1 byte to c", write(third, "c", 1));
    CHECK("dup2 b over c", dup2(second, third) == third ? 0 : -1);
    CHECK("write 2 bytes through c's number", write(third, "bb", 2));
    printf("  sizes b c: %ld %ld\n", size_of("/tmp/reuse-b"), size_of("/tmp/reuse-c"));
    close(second);
    close(third);

    shared_fd = open("/dev/null", O_WRONLY);
    CHECK("write before the other thread closes", write(shared_fd, "x", 1));
    pthread_t thread;
    pthread_create(&thread, NULL, close_it, NULL);
    pthread_join(thread, NULL);
    CHECK("write after it closed", write(shared_fd, "x", 1));

    /* Four descriptors whose numbers differ by 4: each keeps its file. */
    int spread[4] = {-1, -1, -1, -1}, opened[16], count = 0;
    for (int attempt = 0; attempt < 16; attempt++) {
        opened[count] = open("/tmp/reuse-a", O_RDONLY);
        if (opened[count] < 0)
            break;
        count++;
    }
    int base = opened[0];
    for (int index = 0; index < 4; index++) {
        char path[32];
        snprintf(path, sizeof path, "/tmp/reuse-s%d", index);
        int fd = base + 4 * index;
        if (fd < opened[0] + count) {
            close(fd);
            spread[index] = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
        }
    }
    for (int round = 0; round < 3; round++)
        for (int index = 0; index < 4; index++)
            if (spread[index] >= 0 && write(spread[index], buffer, (size_t)index + 1) < 0)
                printf("  write %d failed\n", index);
    for (int index = 0; index < 4; index++) {
        char path[32];
        snprintf(path, sizeof path, "/tmp/reuse-s%d", index);
        printf("  file %d: %ld bytes (same number back: %s)\n", index, size_of(path), spread[index] == base + 4 * index ? "yes" : "no");
    }
    return 0;
}
