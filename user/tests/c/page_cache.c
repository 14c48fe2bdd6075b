/*
 * File data as the page cache serves it, in the directory given as the
 * first argument (default /tmp; the ext4 write check runs it on a disk):
 * read and pread see every write, whole and across page boundaries, again
 * and again; a truncation's cut bytes read as zeroes when the file grows
 * again; stores through a shared mapping are seen by read at once and by
 * the file after msync, and a mapping sees write; a file made after
 * another was unlinked (its inode may be reused) never shows the old
 * file's bytes; an unlinked file still open keeps its own. Files
 * `msynced` and `left-for-sync` are stored to through mappings and never
 * read: the ext4 check finds their bytes on the disk image.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

#define PAGE 4096

static char directory[256] = "/tmp";

static const char *path(const char *name) {
    static char joined[512];
    snprintf(joined, sizeof joined, "%s/%s", directory, name);
    return joined;
}

static unsigned char pattern(long at, int seed) {
    return (unsigned char)(at * 7 + seed * 13 + 3);
}

static void fill(unsigned char *bytes, long length, long from, int seed) {
    for (long i = 0; i < length; i++) {
        bytes[i] = pattern(from + i, seed);
    }
}

/* Whether `bytes` holds the pattern of `seed` from offset `from` on. */
static int holds(const unsigned char *bytes, long length, long from, int seed) {
    for (long i = 0; i < length; i++) {
        if (bytes[i] != pattern(from + i, seed)) {
            return 0;
        }
    }
    return 1;
}

static int all_zero(const unsigned char *bytes, long length) {
    for (long i = 0; i < length; i++) {
        if (bytes[i] != 0) {
            return 0;
        }
    }
    return 1;
}

static void reads_see_writes(void) {
    const long size = 5 * PAGE + 100;
    unsigned char *bytes = malloc(size), *back = malloc(size);
    fill(bytes, size, 0, 1);
    int fd = open(path("cached"), O_RDWR | O_CREAT | O_TRUNC, 0644);
    CHECK("write 5 pages and 100 bytes", write(fd, bytes, size) == size ? 0 : -1);
    for (int round = 0; round < 3; round++) {
        lseek(fd, 0, SEEK_SET);
        long done = 0, got;
        while ((got = read(fd, back + done, 3000)) > 0) {
            done += got;
        }
        printf("  read %d in 3000-byte pieces: %ld bytes, %s\n", round, done, done == size && holds(back, size, 0, 1) ? "same" : "DIFFERENT");
    }
    unsigned char piece[700];
    int odd_ok = 1;
    for (long at = 1; at < size; at += 2999) {
        long got = pread(fd, piece, sizeof piece, at);
        long want = size - at < (long)sizeof piece ? size - at : (long)sizeof piece;
        odd_ok &= got == want && holds(piece, got, at, 1);
    }
    printf("  pread at odd offsets: %s\n", odd_ok ? "same" : "DIFFERENT");
    printf("  pread at the end: %ld, past it: %ld\n", (long)pread(fd, piece, 10, size), (long)pread(fd, piece, 10, size + PAGE));

    fill(piece, 10, 2 * PAGE - 5, 2);
    pwrite(fd, piece, 10, 2 * PAGE - 5);
    memset(piece, 0, sizeof piece);
    pread(fd, piece, 30, 2 * PAGE - 15);
    printf("  a write across a page boundary, read around it: %s %s %s\n", holds(piece, 10, 2 * PAGE - 15, 1) ? "old" : "WRONG",
           holds(piece + 10, 10, 2 * PAGE - 5, 2) ? "new" : "WRONG", holds(piece + 20, 10, 2 * PAGE + 5, 1) ? "old" : "WRONG");

    CHECK("ftruncate to 2 pages and 10 bytes", ftruncate(fd, 2 * PAGE + 10));
    printf("  pread past the new end: %ld\n", (long)pread(fd, piece, 100, 2 * PAGE + 10));
    CHECK("ftruncate to 4 pages", ftruncate(fd, 4 * PAGE));
    memset(back, 0xee, size);
    long got = pread(fd, back, 4 * PAGE, 0);
    printf("  after growing: %ld bytes, kept %s, the cut part %s\n", got, holds(back, 2 * PAGE - 5, 0, 1) ? "same" : "DIFFERENT",
           all_zero(back + 2 * PAGE + 10, 2 * PAGE - 10) ? "zeroes" : "NOT ZEROES");
    close(fd);
    free(bytes);
    free(back);
}

static void mappings_and_reads_meet(void) {
    int fd = open(path("mapped"), O_RDWR | O_CREAT | O_TRUNC, 0644);
    unsigned char bytes[3 * PAGE];
    fill(bytes, sizeof bytes, 0, 3);
    write(fd, bytes, sizeof bytes);
    unsigned char *map = mmap(NULL, sizeof bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    EXPECT("mmap MAP_SHARED of 3 pages", map != MAP_FAILED);
    fill(map + PAGE, PAGE, PAGE, 4);
    unsigned char back[PAGE];
    pread(fd, back, PAGE, PAGE);
    printf("  pread of a page stored through the mapping: %s\n", holds(back, PAGE, PAGE, 4) ? "the stores" : "NOT THE STORES");
    fill(bytes, 100, 2 * PAGE + 50, 5);
    pwrite(fd, bytes, 100, 2 * PAGE + 50);
    printf("  the mapping after pwrite: %s\n", holds(map + 2 * PAGE + 50, 100, 2 * PAGE + 50, 5) ? "the write" : "NOT THE WRITE");
    CHECK("msync(MS_SYNC)", msync(map, sizeof bytes, MS_SYNC));
    CHECK("munmap", munmap(map, sizeof bytes));
    close(fd);
    fd = open(path("mapped"), O_RDONLY);
    pread(fd, back, PAGE, PAGE);
    printf("  reopened, page 1: %s\n", holds(back, PAGE, PAGE, 4) ? "the stores" : "NOT THE STORES");
    close(fd);

    /* Stores left for sync (the caller's) or the commit thread to write. */
    fd = open(path("unsynced"), O_RDWR | O_CREAT | O_TRUNC, 0644);
    ftruncate(fd, 2 * PAGE);
    map = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    fill(map, 2 * PAGE, 0, 6);
    munmap(map, 2 * PAGE);
    close(fd);
    fd = open(path("unsynced"), O_RDONLY);
    unsigned char both[2 * PAGE];
    long got = read(fd, both, sizeof both);
    printf("  stores without msync, read after munmap: %ld bytes, %s\n", got, holds(both, sizeof both, 0, 6) ? "the stores" : "NOT THE STORES");
    close(fd);
}

/* Files whose stores only msync, or only the caller's sync, can bring to
 * the disk: nothing here reads them (the ext4 check reads the image). */
static void stores_nobody_reads(void) {
    const char *names[2] = {"msynced", "left-for-sync"};
    for (int which = 0; which < 2; which++) {
        int fd = open(path(names[which]), O_RDWR | O_CREAT | O_TRUNC, 0644);
        ftruncate(fd, 3 * PAGE);
        unsigned char *map = mmap(NULL, 3 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        fill(map, 3 * PAGE, 0, 20 + which);
        if (which == 0) {
            CHECK("msync(MS_SYNC) of stores never read", msync(map, 3 * PAGE, MS_SYNC));
        }
        munmap(map, 3 * PAGE);
        close(fd);
    }
}

static void new_files_never_show_old_bytes(void) {
    unsigned char bytes[2 * PAGE], back[2 * PAGE];
    int clean = 1;
    for (int round = 0; round < 20; round++) {
        int fd = open(path("reused"), O_RDWR | O_CREAT | O_EXCL, 0644);
        /* New (no O_TRUNC to clear anything) and grown without a write:
         * only zeroes, whatever the last file with its inode held. */
        ftruncate(fd, sizeof back);
        memset(back, 0xee, sizeof back);
        clean &= pread(fd, back, sizeof back, 0) == sizeof back && all_zero(back, sizeof back);
        fill(bytes, sizeof bytes, 0, 10 + round);
        write(fd, bytes, sizeof bytes);
        pread(fd, back, sizeof back, 0);
        clean &= holds(back, sizeof back, 0, 10 + round);
        close(fd);
        unlink(path("reused"));
    }
    printf("  20 files made, read and unlinked in turn: %s\n", clean ? "each its own bytes" : "OLD BYTES SEEN");

    int kept = open(path("kept"), O_RDWR | O_CREAT | O_TRUNC, 0644);
    fill(bytes, sizeof bytes, 0, 40);
    write(kept, bytes, sizeof bytes);
    unlink(path("kept"));
    int other = open(path("other"), O_RDWR | O_CREAT | O_TRUNC, 0644);
    fill(bytes, sizeof bytes, 0, 41);
    write(other, bytes, sizeof bytes);
    pread(kept, back, sizeof back, 0);
    printf("  an unlinked file still open: %s\n", holds(back, sizeof back, 0, 40) ? "its own bytes" : "NOT ITS BYTES");
    pread(other, back, sizeof back, 0);
    printf("  a file made after it: %s\n", holds(back, sizeof back, 0, 41) ? "its own bytes" : "NOT ITS BYTES");
    close(kept);
    int third = open(path("third"), O_RDWR | O_CREAT | O_EXCL, 0644);
    ftruncate(third, sizeof back);
    memset(back, 0xee, sizeof back);
    pread(third, back, sizeof back, 0);
    printf("  a file made after its last close, grown: %s\n", all_zero(back, sizeof back) ? "zeroes" : "OLD BYTES");
    close(third);
    close(other);
    unlink(path("other"));
    unlink(path("third"));
}

static void a_large_file_reads_the_same_twice(void) {
    const long size = 8L << 20;
    unsigned char *bytes = malloc(1 << 20), *back = malloc(1 << 20);
    int fd = open(path("large"), O_RDWR | O_CREAT | O_TRUNC, 0644);
    for (long at = 0; at < size; at += 1 << 20) {
        fill(bytes, 1 << 20, at, 7);
        write(fd, bytes, 1 << 20);
    }
    for (int round = 0; round < 2; round++) {
        int same = 1;
        for (long at = 0; at < size; at += 1 << 20) {
            same &= pread(fd, back, 1 << 20, at) == 1 << 20 && holds(back, 1 << 20, at, 7);
        }
        printf("  8 MiB read %s: %s\n", round == 0 ? "once" : "again", same ? "same" : "DIFFERENT");
    }
    close(fd);
    unlink(path("large"));
    free(bytes);
    free(back);
}

int main(int argc, char **argv) {
    if (argc > 1) {
        snprintf(directory, sizeof directory, "%s", argv[1]);
    }
    setvbuf(stdout, NULL, _IONBF, 0);
    printf("reads see writes\n");
    reads_see_writes();
    printf("mappings and reads meet\n");
    mappings_and_reads_meet();
    stores_nobody_reads();
    printf("new files never show old bytes\n");
    new_files_never_show_old_bytes();
    printf("a large file\n");
    a_large_file_reads_the_same_twice();
    unlink(path("cached"));
    return 0;
}
