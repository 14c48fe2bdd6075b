/*
 * Private mappings of a file (how the dynamic linker maps libraries):
 * they show the file's bytes, a store into one changes neither the file
 * nor another mapping of it (Lamina shares the pages until the first
 * write), a file rewritten is seen by the next mapping, the bytes past the
 * end of the file in its last page read as zeroes, and a mapping larger
 * than the file reads zeroes where the file ends.
 */
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"

#define LENGTH (3 * 4096 + 100)

static char *map_private(int fd, size_t length, int protection) {
    char *mapped = mmap(NULL, length, protection, MAP_PRIVATE, fd, 0);
    return mapped == MAP_FAILED ? NULL : mapped;
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    static char bytes[LENGTH];
    for (int i = 0; i < LENGTH; i++)
        bytes[i] = 'a' + i % 26;
    int fd = open("/tmp/private-maps", O_CREAT | O_TRUNC | O_RDWR, 0600);
    CHECK("write the file", write(fd, bytes, LENGTH));

    char *first = map_private(fd, LENGTH, PROT_READ | PROT_WRITE);
    char *second = map_private(fd, LENGTH, PROT_READ);
    EXPECT("both mapped", first && second);
    if (!first || !second)
        return 1;
    EXPECT("the first shows the file", memcmp(first, bytes, LENGTH) == 0);
    first[5000] = '#';
    EXPECT("a store lands in the first", first[5000] == '#');
    EXPECT("the second still shows the file", memcmp(second, bytes, LENGTH) == 0);
    char back[8];
    CHECK("pread the file", pread(fd, back, 1, 5000));
    EXPECT("the file is unchanged", back[0] == bytes[5000]);
    int zeroes = 1;
    for (int i = LENGTH; i < 4 * 4096; i++)
        zeroes &= second[i] == 0;
    EXPECT("past the end of the file in its last page: zeroes", zeroes);

    CHECK("rewrite the file's first page", pwrite(fd, "REWRITTEN", 9, 0));
    char *third = map_private(fd, LENGTH, PROT_READ | PROT_EXEC);
    EXPECT("a new mapping shows the rewritten file", third && memcmp(third, "REWRITTEN", 9) == 0 && memcmp(third + 9, bytes + 9, LENGTH - 9) == 0);
    CHECK("mprotect the third writable", mprotect(third, 4096, PROT_READ | PROT_WRITE));
    third[0] = '!';
    char *fourth = map_private(fd, LENGTH, PROT_READ);
    EXPECT("a store after mprotect stays in its mapping", fourth && fourth[0] == 'R' && third[0] == '!');

    munmap(first, LENGTH);
    munmap(second, LENGTH);
    munmap(third, LENGTH);
    munmap(fourth, LENGTH);
    close(fd);
    unlink("/tmp/private-maps");
    return 0;
}
