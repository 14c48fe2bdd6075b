/*
 * /proc/<pid>/mem: the file offset is the address. A process reads and
 * writes its own memory through /proc/self/mem (pread, pwrite, lseek and
 * read); a page that is not mapped ends a read (EIO when it is the first);
 * a parent reads its child's; a user other than the target's gets EACCES;
 * a reaped child's file is gone, and a descriptor opened before its
 * process ended reads as end of file.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

#define PAGE 4096

static volatile long secret = 0x5ec1e7;

static void own_memory(void) {
    int fd = open("/proc/self/mem", O_RDWR);
    CHECK("open /proc/self/mem read-write", fd >= 0 ? 0 : -1);
    long value = 0;
    CHECK("pread of a variable", pread(fd, &value, sizeof value, (off_t)(uintptr_t)&secret));
    EXPECT("  it is the variable's value", value == 0x5ec1e7);
    long changed = 42;
    CHECK("pwrite into the variable", pwrite(fd, &changed, sizeof changed, (off_t)(uintptr_t)&secret));
    EXPECT("  the variable changed", secret == 42);
    CHECK("lseek to the variable", lseek(fd, (off_t)(uintptr_t)&secret, SEEK_SET) == (off_t)(uintptr_t)&secret ? 0 : -1);
    value = 0;
    CHECK("read at the offset", read(fd, &value, sizeof value));
    EXPECT("  the new value", value == 42);
    char *area = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(area, 'a', PAGE);
    munmap(area + PAGE, PAGE);
    char bytes[2 * PAGE];
    CHECK("pread of a mapped page then an unmapped one", pread(fd, bytes, sizeof bytes, (off_t)(uintptr_t)area));
    CHECK("pread of the unmapped page", pread(fd, bytes, 16, (off_t)(uintptr_t)(area + PAGE)));
    munmap(area, PAGE);
    close(fd);
}

static void a_child(void) {
    int gate[2];
    pipe(gate);
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        secret = 0xc41d;
        close(gate[0]);
        write(gate[1], "r", 1);
        pause();
        _exit(0);
    }
    close(gate[1]);
    char ready;
    read(gate[0], &ready, 1);
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/mem", child);
    int fd = open(path, O_RDONLY);
    CHECK("open the child's mem", fd >= 0 ? 0 : -1);
    long value = 0;
    CHECK("pread of the child's variable", pread(fd, &value, sizeof value, (off_t)(uintptr_t)&secret));
    EXPECT("  it is the child's value", value == 0xc41d);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    CHECK("pread after the child was reaped", pread(fd, &value, sizeof value, (off_t)(uintptr_t)&secret));
    close(fd);
    CHECK("open the reaped child's mem", open(path, O_RDONLY));
}

static void another_user(void) {
    pid_t root = getpid();
    fflush(stdout);
    pid_t user = fork();
    if (user == 0) {
        setresgid(1000, 1000, 1000);
        setresuid(1000, 1000, 1000);
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/mem", root);
        CHECK("uid 1000 opens root's mem", open(path, O_RDONLY));
        fflush(stdout);
        _exit(0);
    }
    waitpid(user, NULL, 0);
}

int main(void) {
    own_memory();
    a_child();
    another_user();
    return 0;
}
