/*
 * mremap of private anonymous mappings: shrink in place, grow in place
 * into a free hole, move when the pages after are taken (contents kept,
 * the old place unmapped), refuse to move without MREMAP_MAYMOVE, move to
 * a chosen place with MREMAP_FIXED, and the argument errors.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

#define PAGE 4096

static int mapped(void *address) {
    unsigned char residency;
    return mincore(address, PAGE, &residency) == 0;
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    char *three = mmap(NULL, 3 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    three[0] = 'a';
    three[PAGE] = 'b';
    munmap(three + 2 * PAGE, PAGE);
    CHECK("grow 2 pages to 3 in place (the third is free)", mremap(three, 2 * PAGE, 3 * PAGE, 0) == three);
    three[2 * PAGE] = 'c';
    printf("  contents %c%c%c\n", three[0], three[PAGE], three[2 * PAGE]);
    CHECK("shrink to 1 page", mremap(three, 3 * PAGE, PAGE, 0) == three);
    printf("  the second page is gone: %s\n", mapped(three + PAGE) ? "no" : "yes");

    /* A page whose next page is taken. */
    char *first = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(first + PAGE, PAGE);
    char *blocker = mmap(first + PAGE, PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    EXPECT("a blocking page right after", blocker == first + PAGE);
    strcpy(first, "moved along");
    CHECK("grow without MREMAP_MAYMOVE", (long)mremap(first, PAGE, 4 * PAGE, 0));
    char *moved = mremap(first, PAGE, 4 * PAGE, MREMAP_MAYMOVE);
    EXPECT("grow with MREMAP_MAYMOVE moves it", moved != MAP_FAILED && moved != first);
    printf("  contents kept: %s, the old place unmapped: %s\n", moved, mapped(first) ? "no" : "yes");
    moved[4 * PAGE - 1] = 'z';
    printf("  the new pages are zeroed and writable: %d %c\n", moved[2 * PAGE], moved[4 * PAGE - 1]);

    char *target = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *fixed = mremap(moved, 4 * PAGE, 2 * PAGE, MREMAP_MAYMOVE | MREMAP_FIXED, target);
    EXPECT("MREMAP_FIXED to a chosen place", fixed == target);
    printf("  contents: %s\n", fixed);

    CHECK("an unaligned old address", (long)mremap(fixed + 1, PAGE, PAGE, 0));
    CHECK("an unmapped old range", (long)mremap(first, PAGE, 2 * PAGE, MREMAP_MAYMOVE));
    CHECK("unknown flags", (long)mremap(fixed, PAGE, PAGE, 0x40));
    CHECK("MREMAP_FIXED without MREMAP_MAYMOVE", (long)mremap(fixed, PAGE, PAGE, MREMAP_FIXED, target));
    CHECK("a new size of 0", (long)mremap(fixed, PAGE, 0, MREMAP_MAYMOVE));
    CHECK("MREMAP_FIXED onto the old range itself", (long)mremap(fixed, PAGE, PAGE, MREMAP_MAYMOVE | MREMAP_FIXED, fixed));

    /* A shared mapping moves with its pages: a forked child that kept the
     * old place still shares them. */
    char *shared = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    shared[0] = 'a';
    int go[2];
    pipe(go);
    pid_t child = fork();
    if (child == 0) {
        char byte;
        read(go[0], &byte, 1);
        _exit(shared[0] == 'b' && shared[PAGE] == 'c' ? 0 : 1);
    }
    char *elsewhere = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *moved_shared = mremap(shared, 2 * PAGE, 2 * PAGE, MREMAP_MAYMOVE | MREMAP_FIXED, elsewhere);
    EXPECT("a shared mapping moved", moved_shared == elsewhere);
    printf("  its contents came along: %c\n", moved_shared[0]);
    moved_shared[0] = 'b';
    moved_shared[PAGE] = 'c';
    write(go[1], "x", 1);
    int status = 0;
    waitpid(child, &status, 0);
    EXPECT("  the child sees writes made at the new place", WIFEXITED(status) && WEXITSTATUS(status) == 0);
    char *shrunk = mremap(moved_shared, 2 * PAGE, PAGE, 0);
    EXPECT("  shrinking it in place", shrunk == moved_shared && !mapped(moved_shared + PAGE));

    /* A shared file mapping grows into the file's next pages. */
    int fd = open("/tmp/mremap-file", O_RDWR | O_CREAT | O_TRUNC, 0644);
    char page[PAGE];
    for (int i = 0; i < 3; i++) {
        memset(page, 'A' + i, sizeof page);
        write(fd, page, sizeof page);
    }
    char *file_map = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    char *file_grown = mremap(file_map, PAGE, 3 * PAGE, MREMAP_MAYMOVE);
    EXPECT("growing a shared file mapping", file_grown != MAP_FAILED);
    if (file_grown != MAP_FAILED) {
        printf("  its pages are the file's: %c %c %c\n", file_grown[0], file_grown[PAGE], file_grown[2 * PAGE]);
        file_grown[2 * PAGE + 1] = 'z';
        msync(file_grown, 3 * PAGE, MS_SYNC);
        char byte = 0;
        pread(fd, &byte, 1, 2 * PAGE + 1);
        printf("  a store through a new page reaches the file: %c\n", byte);
    }
    close(fd);
    unlink("/tmp/mremap-file");
    return 0;
}
