/*
 * A tmpfs holds as much as memory allows, not as much as the kernel heap
 * (a sixteenth of memory): 64 MiB written to a file in /tmp on a 256 MiB
 * machine reads back intact, and its pages come back when the file goes
 * (four rounds would not fit otherwise). Holes read as zeroes; a cut file
 * grows back with zeroes.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

#define CHUNK (1 << 20)
#define CHUNKS 64

static unsigned char chunk[CHUNK];

static void fill(unsigned index) {
    for (size_t i = 0; i < CHUNK; i += 8) {
        uint64_t word = ((uint64_t)index << 32) | i;
        memcpy(chunk + i, &word, 8);
    }
}

/* Writes CHUNKS MiB to `path`, reads them back; whether all went well. */
static int round_trip(const char *path) {
    int fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0600);
    if (fd < 0)
        return 0;
    for (unsigned index = 0; index < CHUNKS; index++) {
        fill(index);
        if (write(fd, chunk, CHUNK) != CHUNK) {
            printf("  write of MiB %u: %s\n", index, errno_name(errno));
            close(fd);
            unlink(path);
            return 0;
        }
    }
    static unsigned char back[CHUNK];
    int intact = 1;
    for (unsigned index = 0; index < CHUNKS && intact; index++) {
        fill(index);
        intact = pread(fd, back, CHUNK, (off_t)index * CHUNK) == CHUNK && memcmp(back, chunk, CHUNK) == 0;
    }
    close(fd);
    unlink(path);
    return intact;
}

static void holes_and_cuts(void) {
    int fd = open("/tmp/holes", O_CREAT | O_TRUNC | O_RDWR, 0600);
    CHECK("open /tmp/holes", fd < 0 ? -1 : 0);
    CHECK("pwrite 3 bytes at 10 MiB", pwrite(fd, "end", 3, 10 << 20));
    unsigned char bytes[8192];
    memset(bytes, 0xAA, sizeof bytes);
    CHECK("pread in the hole", pread(fd, bytes, sizeof bytes, 5 << 20));
    int zero = 1;
    for (size_t i = 0; i < sizeof bytes; i++)
        zero &= bytes[i] == 0;
    EXPECT("the hole reads as zeroes", zero);
    CHECK("pwrite a page of 0x55 at 4000", pwrite(fd, memset(bytes, 0x55, 4096), 4096, 4000));
    CHECK("ftruncate to 4100", ftruncate(fd, 4100));
    CHECK("ftruncate to 9000", ftruncate(fd, 9000));
    memset(bytes, 0xAA, sizeof bytes);
    CHECK("pread 9000 bytes", pread(fd, bytes, sizeof bytes, 0));
    int kept = 1, zeroed = 1;
    for (size_t i = 4000; i < sizeof bytes; i++) {
        if (i < 4100)
            kept &= bytes[i] == 0x55;
        else
            zeroed &= bytes[i] == 0;
    }
    EXPECT("bytes before the cut kept", kept);
    EXPECT("bytes after the cut are zeroes", zeroed);
    close(fd);
    unlink("/tmp/holes");
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    mkdir("/tmp", 01777);
    for (int round = 1; round <= 4; round++) {
        printf("round %d: ", round);
        EXPECT("64 MiB written to /tmp read back intact", round_trip("/tmp/big"));
    }
    holes_and_cuts();
    return 0;
}
