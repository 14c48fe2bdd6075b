/*
 * The `fs` benchmark group, run the same on Lamina and on Linux over the
 * same kind of virtio disk holding a fresh ext4 mounted at DIRECTORY:
 *
 *   fs DIRECTORY DEVICE
 *
 * prints `bench NAME <nanoseconds>` per record: per file, per 4 KiB
 * operation, per insert, or per whole run (`_256m`, `_64m`, `tar_`). Under
 * `-icount shift=0` the figures are guest instructions. Before each
 * reading record the file system is unmounted and mounted again, so both
 * kernels read from the disk rather than from a cache.
 *
 * Records: files_4k_fsync (create, write 4 KiB, fsync, close; 1,000 files),
 * seq_write_256m (1 MiB writes, then fsync), seq_read_256m, random_read_4k
 * and random_write_4k (2,000 each in the 256 MiB file; the writes end with
 * one fsync), mmap_read_64m (every page of 64 MiB through a shared
 * mapping), tar_extract_5000 (BusyBox tar of /bench/tree.tar, 5,000
 * files, then sync), sqlite_insert_autocommit and sqlite_insert_one_txn
 * (per row, with /bench/sqlite3 when it is there).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MIB (1024 * 1024)
#define BIG_MIB 256
#define RANDOM_OPERATIONS 2000
#define FILES 1000
#define SQLITE_ROWS 300

static const char *directory;
static const char *device;
static char buffer[MIB];

static uint64_t now(void) {
    struct timespec time;
    clock_gettime(CLOCK_MONOTONIC, &time);
    return (uint64_t)time.tv_sec * 1000000000u + (uint64_t)time.tv_nsec;
}

static void fail(const char *what) {
    printf("fs: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void report(const char *name, uint64_t started, long operations) {
    printf("bench %s %.1f\n", name, (double)(now() - started) / (double)operations);
    fflush(stdout);
}

static void path(char *out, const char *name) {
    snprintf(out, 512, "%s/%s", directory, name);
}

/* Unmounted and mounted again: nothing of the file system stays cached. */
static void remount(void) {
    sync();
    if (umount2(directory, 0) != 0)
        fail("umount");
    if (mount(device, directory, "ext4", 0, NULL) != 0)
        fail("mount");
}

static void files_4k_fsync(void) {
    char name[512];
    mkdir(strcat(strcpy(name, directory), "/small"), 0755);
    uint64_t started = now();
    for (int i = 0; i < FILES; i++) {
        snprintf(name, sizeof name, "%s/small/f%d", directory, i);
        int fd = open(name, O_CREAT | O_WRONLY | O_TRUNC, 0644);
        if (fd < 0 || write(fd, buffer, 4096) != 4096 || fsync(fd) != 0)
            fail("files_4k_fsync");
        close(fd);
    }
    report("files_4k_fsync", started, FILES);
}

static void seq_write(void) {
    char name[512];
    path(name, "big");
    uint64_t started = now();
    int fd = open(name, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (fd < 0)
        fail("open big");
    for (int i = 0; i < BIG_MIB; i++) {
        buffer[0] = (char)i;
        if (write(fd, buffer, MIB) != MIB)
            fail("seq_write");
    }
    if (fsync(fd) != 0)
        fail("fsync big");
    close(fd);
    report("seq_write_256m", started, 1);
}

static void seq_read(void) {
    char name[512];
    path(name, "big");
    remount();
    uint64_t started = now();
    int fd = open(name, O_RDONLY);
    if (fd < 0)
        fail("open big");
    long total = 0;
    for (;;) {
        ssize_t got = read(fd, buffer, MIB);
        if (got < 0)
            fail("seq_read");
        if (got == 0)
            break;
        total += got;
    }
    close(fd);
    if (total != (long)BIG_MIB * MIB) {
        printf("fs: read %ld bytes of %d MiB\n", total, BIG_MIB);
        exit(1);
    }
    report("seq_read_256m", started, 1);
}

static uint64_t random_state = 88172645463325252ull;
static off_t random_block(void) {
    random_state ^= random_state << 13;
    random_state ^= random_state >> 7;
    random_state ^= random_state << 17;
    return (off_t)(random_state % ((uint64_t)BIG_MIB * MIB / 4096)) * 4096;
}

static void random_io(int writing) {
    char name[512];
    path(name, "big");
    remount();
    int fd = open(name, writing ? O_WRONLY : O_RDONLY);
    if (fd < 0)
        fail("open big");
    uint64_t started = now();
    for (int i = 0; i < RANDOM_OPERATIONS; i++) {
        ssize_t done = writing ? pwrite(fd, buffer, 4096, random_block()) : pread(fd, buffer, 4096, random_block());
        if (done != 4096)
            fail(writing ? "random_write" : "random_read");
    }
    if (writing && fsync(fd) != 0)
        fail("fsync");
    close(fd);
    report(writing ? "random_write_4k" : "random_read_4k", started, RANDOM_OPERATIONS);
}

static void mmap_read(void) {
    char name[512];
    path(name, "big");
    remount();
    uint64_t started = now();
    int fd = open(name, O_RDONLY);
    size_t length = 64 * (size_t)MIB;
    unsigned char *mapped = fd < 0 ? MAP_FAILED : mmap(NULL, length, PROT_READ, MAP_SHARED, fd, 0);
    if (mapped == MAP_FAILED)
        fail("mmap");
    unsigned long sum = 0;
    for (size_t at = 0; at < length; at += 4096)
        sum += mapped[at];
    munmap(mapped, length);
    close(fd);
    report("mmap_read_64m", started, 1);
    if (sum == 1)
        printf("fs: (sum %lu)\n", sum);
}

/* Runs a program to its end with standard input from `input` (or none). */
static int run(char *const arguments[], const char *input) {
    pid_t child = fork();
    if (child == 0) {
        if (input != NULL) {
            int fd = open(input, O_RDONLY);
            if (fd < 0 || dup2(fd, 0) < 0)
                _exit(126);
        }
        execv(arguments[0], arguments);
        _exit(127);
    }
    int status;
    if (child < 0 || waitpid(child, &status, 0) != child)
        return -1;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static void tar_extract(void) {
    char target[512];
    path(target, "tree");
    mkdir(target, 0755);
    if (access("/bench/tree.tar", R_OK) != 0)
        return;
    uint64_t started = now();
    char *arguments[] = {"/bin/busybox", "tar", "-xf", "/bench/tree.tar", "-C", target, NULL};
    if (run(arguments, NULL) != 0)
        fail("tar");
    sync();
    report("tar_extract_5000", started, 1);
}

static void sqlite_inserts(int one_transaction) {
    if (access("/bench/sqlite3", X_OK) != 0)
        return;
    char database[512], script[512];
    path(database, one_transaction ? "one.db" : "each.db");
    snprintf(script, sizeof script, "/tmp/inserts-%d.sql", one_transaction);
    FILE *out = fopen(script, "w");
    if (out == NULL)
        fail("script");
    fprintf(out, "create table t(id integer primary key, v text);\n");
    if (one_transaction)
        fprintf(out, "begin;\n");
    for (int i = 0; i < SQLITE_ROWS; i++)
        fprintf(out, "insert into t(v) values('row %d of the benchmark, some text to store');\n", i);
    if (one_transaction)
        fprintf(out, "commit;\n");
    fclose(out);
    char *arguments[] = {"/bench/sqlite3", database, NULL};
    uint64_t started = now();
    if (run(arguments, script) != 0)
        fail("sqlite3");
    report(one_transaction ? "sqlite_insert_one_txn" : "sqlite_insert_autocommit", started, SQLITE_ROWS);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: fs DIRECTORY DEVICE\n");
        return 2;
    }
    directory = argv[1];
    device = argv[2];
    memset(buffer, 0x5A, sizeof buffer);
    files_4k_fsync();
    seq_write();
    seq_read();
    random_io(0);
    random_io(1);
    mmap_read();
    tar_extract();
    sqlite_inserts(0);
    sqlite_inserts(1);
    return 0;
}
