/*
 * chown family and statfs: one user owns every file on Lamina, so chown
 * changes nothing, but like Linux each call needs its file or descriptor
 * to exist and refuses bad flags; statfs/fstatfs likewise.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "check.h"

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    int file = open("/tmp/owned", O_CREAT | O_RDWR, 0600);
    symlink("/tmp/nowhere", "/tmp/dangling");
    CHECK("chown an existing file to root", chown("/tmp/owned", 0, 0));
    CHECK("chown with -1 ids", chown("/tmp/owned", -1, -1));
    CHECK("chown a missing file", chown("/tmp/missing", 0, 0));
    CHECK("chown through a file as directory", chown("/tmp/owned/x", 0, 0));
    CHECK("chown a dangling link (follows)", chown("/tmp/dangling", 0, 0));
    CHECK("lchown a dangling link", lchown("/tmp/dangling", 0, 0));
    CHECK("fchown an open file", fchown(file, 0, 0));
    CHECK("fchown a bad descriptor", fchown(999, 0, 0));
    CHECK("fchownat AT_EMPTY_PATH", fchownat(file, "", 0, 0, AT_EMPTY_PATH));
    CHECK("fchownat AT_SYMLINK_NOFOLLOW", fchownat(AT_FDCWD, "/tmp/dangling", 0, 0, AT_SYMLINK_NOFOLLOW));
    CHECK("fchownat bad flags", fchownat(AT_FDCWD, "/tmp/owned", 0, 0, 0x4));
    struct statfs status;
    CHECK("statfs /tmp", statfs("/tmp", &status));
    CHECK("statfs a missing path", statfs("/tmp/missing", &status));
    CHECK("fstatfs an open file", fstatfs(file, &status));
    CHECK("fstatfs a bad descriptor", fstatfs(999, &status));
    CHECK("fstatfs descriptor 0", fstatfs(0, &status));
    close(file);
    unlink("/tmp/owned");
    unlink("/tmp/dangling");
    return 0;
}
