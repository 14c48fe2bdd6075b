/*
 * Anonymous MAP_SHARED memory is shared with children forked after it is
 * made, both ways, and stays after the other process is gone; MAP_PRIVATE
 * memory is copied. The result page a test harness shares with the child
 * it forks is exactly this.
 */
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    size_t length = 3 * 4096;
    volatile uint32_t *shared = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    volatile uint32_t *private = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT("shared mapping made", shared != MAP_FAILED);
    EXPECT("shared pages start zeroed", shared[0] == 0 && shared[1024] == 0 && shared[2048] == 0);
    shared[0] = 1;
    private[0] = 1;
    pid_t child = fork();
    if (child == 0) {
        shared[0] += 10;      /* seen by the parent */
        shared[2048] = 77;    /* a page neither touched before the fork */
        private[0] = 99;      /* a copy */
        /* The parent's answer (bounded: a private copy would never see it). */
        for (int tries = 0; shared[1] != 1 && tries < 5000; tries++)
            usleep(1000);
        _exit(shared[1] == 1 ? 0 : 1);
    }
    int status = 0;
    for (int tries = 0; shared[2048] != 77 && tries < 5000; tries++)
        usleep(1000);
    printf("the child's write showed: %s\n", shared[2048] == 77 ? "yes" : "no");
    shared[1] = 1;
    waitpid(child, &status, 0);
    printf("child exited %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    printf("shared after the child: %u %u\n", shared[0], shared[2048]);
    printf("private after the child: %u\n", private[0]);

    /* A read-only shared mapping: writes fault in the child. */
    volatile uint32_t *readonly = mmap(NULL, 4096, PROT_READ, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    child = fork();
    if (child == 0) {
        readonly[0] = 1;
        _exit(0);
    }
    waitpid(child, &status, 0);
    printf("write to a read-only shared page: %s %d\n", WIFSIGNALED(status) ? "killed by" : "exited",
           WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    /* mincore and msync: residency of touched and untouched pages. */
    unsigned char *fresh = mmap(NULL, 4 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    fresh[4096] = 1;
    unsigned char resident[4] = {9, 9, 9, 9};
    CHECK("mincore", mincore(fresh, 4 * 4096, resident));
    printf("resident: %d %d %d %d\n", resident[0] & 1, resident[1] & 1, resident[2] & 1, resident[3] & 1);
    CHECK("mincore unaligned", mincore(fresh + 1, 4096, resident));
    CHECK("msync", msync(fresh, 4 * 4096, MS_SYNC));
    CHECK("msync with both flags", msync(fresh, 4096, MS_SYNC | MS_ASYNC));
    CHECK("munmap fresh", munmap(fresh, 4 * 4096));
    CHECK("msync unmapped", msync(fresh, 4096, MS_ASYNC));
    CHECK("mincore unmapped", mincore(fresh, 4096, resident));
    CHECK("munmap shared", munmap((void *)shared, length));
    CHECK("munmap read-only shared", munmap((void *)readonly, 4096));
    return 0;
}
