/*
 * madvise: MADV_DONTNEED on private anonymous memory drops the pages (they
 * read as zero afterwards, in the parent and without touching a forked
 * child's copy, across a region partly never touched); shared anonymous
 * memory keeps its contents; other advice changes nothing; the argument
 * errors (unaligned start, unknown advice, an unmapped range).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

#define PAGE 4096

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    char *private = mmap(NULL, 8 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    for (int page = 0; page < 8; page += 2)
        private[page * PAGE + 7] = (char)('a' + page);
    CHECK("MADV_NORMAL keeps the pages", madvise(private, 8 * PAGE, MADV_NORMAL));
    printf("  page 2 after NORMAL: %c\n", private[2 * PAGE + 7]);
    CHECK("MADV_WILLNEED", madvise(private, 8 * PAGE, MADV_WILLNEED));

    pid_t child = fork();
    if (child == 0) {
        /* The parent's discard below must not reach this copy. */
        usleep(100000);
        _exit(private[4 * PAGE + 7] == 'e' ? 0 : 1);
    }
    CHECK("MADV_DONTNEED of pages 2..5", madvise(private + 2 * PAGE, 4 * PAGE, MADV_DONTNEED));
    printf("  pages 0 2 4 6 now: %d %d %d %d\n", private[7], private[2 * PAGE + 7], private[4 * PAGE + 7], private[6 * PAGE + 7]);
    private[2 * PAGE + 7] = 'x';
    printf("  page 2 written again: %c\n", private[2 * PAGE + 7]);
    int status = 0;
    waitpid(child, &status, 0);
    printf("  the child kept its copy of page 4: %s\n", WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "yes" : "no");

    char *shared = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    shared[0] = 's';
    CHECK("MADV_DONTNEED of shared memory", madvise(shared, 2 * PAGE, MADV_DONTNEED));
    printf("  shared page after: %c\n", shared[0]);

    CHECK("a length not a page multiple rounds up", madvise(private + 6 * PAGE, 1, MADV_DONTNEED));
    printf("  page 6 after: %d\n", private[6 * PAGE + 7]);
    CHECK("zero length", madvise(private, 0, MADV_DONTNEED));
    CHECK("unaligned start", madvise(private + 1, PAGE, MADV_DONTNEED));
    CHECK("unknown advice", madvise(private, PAGE, 77));
    munmap(private + 7 * PAGE, PAGE);
    CHECK("a range reaching unmapped memory", madvise(private + 6 * PAGE, 2 * PAGE, MADV_DONTNEED));
    return 0;
}
