/*
 * fcntl's pipe sizes (F_GETPIPE_SZ, F_SETPIPE_SZ: whole pages, a power of
 * two, EBUSY below what is queued), F_NOTIFY accepted on directories
 * only (Lamina delivers no notices yet: the test closes the directory
 * before changing it), and O_PATH|O_NOFOLLOW opening a symbolic link itself (so that
 * fchmodat(AT_SYMLINK_NOFOLLOW) on a link is EOPNOTSUPP, not ELOOP).
 * Output is identical on Lamina and Linux.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    int ends[2];
    pipe(ends);
    CHECK("F_GETPIPE_SZ", fcntl(ends[1], F_GETPIPE_SZ));
    CHECK("F_SETPIPE_SZ 1000", fcntl(ends[1], F_SETPIPE_SZ, 1000));
    CHECK("F_GETPIPE_SZ on the read end", fcntl(ends[0], F_GETPIPE_SZ));
    CHECK("F_SETPIPE_SZ 100000", fcntl(ends[0], F_SETPIPE_SZ, 100000));
    char bytes[8192] = {0};
    CHECK("write 8192", write(ends[1], bytes, sizeof bytes));
    CHECK("F_SETPIPE_SZ 4096 with 8192 queued", fcntl(ends[1], F_SETPIPE_SZ, 4096));
    int file = open("/tmp/fcntl-more", O_CREAT | O_RDWR, 0644);
    CHECK("F_GETPIPE_SZ of a file", fcntl(file, F_GETPIPE_SZ));
    int directory = open("/tmp", O_RDONLY | O_DIRECTORY);
    CHECK("F_NOTIFY on a directory", fcntl(directory, F_NOTIFY, DN_CREATE | DN_MULTISHOT));
    CHECK("F_NOTIFY on a file", fcntl(file, F_NOTIFY, DN_CREATE));
    /* Closing the directory ends the notices (Linux would send SIGIO). */
    close(directory);

    symlink("/tmp/fcntl-more", "/tmp/fcntl-link");
    CHECK("open a link O_NOFOLLOW", open("/tmp/fcntl-link", O_RDONLY | O_NOFOLLOW));
    int link = open("/tmp/fcntl-link", O_PATH | O_NOFOLLOW);
    EXPECT("open a link O_PATH|O_NOFOLLOW", link >= 0);
    struct stat status;
    fstat(link, &status);
    printf("  fstat says a link: %s\n", S_ISLNK(status.st_mode) ? "yes" : "no");
    CHECK("fchmodat(AT_SYMLINK_NOFOLLOW) of a link", fchmodat(AT_FDCWD, "/tmp/fcntl-link", 0600, AT_SYMLINK_NOFOLLOW));
    CHECK("fchmodat(AT_SYMLINK_NOFOLLOW) of a file", fchmodat(AT_FDCWD, "/tmp/fcntl-more", 0600, AT_SYMLINK_NOFOLLOW));
    unlink("/tmp/fcntl-link");
    unlink("/tmp/fcntl-more");
    return 0;
}
