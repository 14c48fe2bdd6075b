/* Memory: brk, anonymous and file mappings, unmapping, protection, and a
 * SIGSEGV handler that sees the fault. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "check.h"

static sigjmp_buf recovery;

static void on_segv(int signal) {
    siglongjmp(recovery, signal);
}

static int touch(volatile char *address, int write) {
    if (sigsetjmp(recovery, 1))
        return -1;
    if (write)
        *address = 1;
    else
        (void)*address;
    return 0;
}

int main(void) {
    uintptr_t start = (uintptr_t)syscall(SYS_brk, 0);
    uintptr_t grown = (uintptr_t)syscall(SYS_brk, start + 100000);
    EXPECT("brk grows", grown == start + 100000);
    memset((void *)start, 7, 100000);
    EXPECT("brk memory usable", ((char *)start)[99999] == 7);
    EXPECT("brk shrinks", (uintptr_t)syscall(SYS_brk, start + 10) == start + 10);
    EXPECT("brk below start refused", (uintptr_t)syscall(SYS_brk, start - 4096 * 1000) == start + 10);

    char *anonymous = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT("mmap anonymous", anonymous != MAP_FAILED);
    EXPECT("zero filled", anonymous[0] == 0 && anonymous[3 * 4096 - 1] == 0);
    strcpy(anonymous, "mapped");
    printf("content: %s\n", anonymous);
    CHECK("mmap length 0", mmap(NULL, 0, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED ? -1 : 0);
    CHECK("mmap no type", mmap(NULL, 4096, PROT_READ, MAP_ANONYMOUS, -1, 0) == MAP_FAILED ? -1 : 0);
    CHECK("mmap bad fd", mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, 77, 0) == MAP_FAILED ? -1 : 0);
    CHECK("munmap unaligned", munmap(anonymous + 1, 4096));

    struct sigaction action = {0};
    action.sa_handler = on_segv;
    sigemptyset(&action.sa_mask);
    sigaction(SIGSEGV, &action, NULL);
    CHECK("mprotect read-only", mprotect(anonymous, 4096, PROT_READ));
    CHECK("write to read-only", touch(anonymous, 1));
    CHECK("read read-only", touch(anonymous, 0));
    CHECK("munmap middle", munmap(anonymous + 4096, 4096));
    CHECK("read unmapped", touch(anonymous + 4096, 0));
    CHECK("write after hole", touch(anonymous + 8192, 1));
    CHECK("read null", touch((char *)0, 0));

    int fd = open("/tmp/mapped-file", O_CREAT | O_RDWR | O_TRUNC, 0644);
    write(fd, "file contents here", 18);
    char *file = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
    EXPECT("mmap file", file != MAP_FAILED);
    printf("file mapping: %.18s\n", file);
    EXPECT("past end zero", file[100] == 0);
    close(fd);
    char *big = malloc(1 << 20);
    EXPECT("malloc 1 MiB", big != NULL);
    memset(big, 1, 1 << 20);
    free(big);
    return 0;
}
