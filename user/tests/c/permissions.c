/*
 * File permissions for a process that gave up root: the owner's, group's
 * and others' bits decide open, access (real ids) and exec; new files are
 * the creator's; chmod and chown follow Linux's rules; a directory's write
 * bit guards its entries and the sticky bit keeps others' files in /tmp;
 * a directory without search permission hides what is in it; root reads
 * and writes anything but executes only what has an execute bit.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static void make(const char *path, mode_t mode, uid_t owner, gid_t group) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    write(fd, "#!/bin/sh\nexit 0\n", 17);
    close(fd);
    chown(path, owner, group);
    chmod(path, mode);
}

static void as_alice(void) {
    gid_t groups[1] = {300};
    setgroups(1, groups);
    setgid(100);
    setuid(1000);
    CHECK("open own 0600 for writing", open("/tmp/p-own", O_WRONLY));
    CHECK("open own 0400 for writing", open("/tmp/p-own-ro", O_WRONLY));
    CHECK("open root's 0600 for reading", open("/tmp/p-root", O_RDONLY));
    CHECK("open root's 0644 for reading", open("/tmp/p-public", O_RDONLY) >= 0);
    CHECK("open root's 0644 with O_TRUNC", open("/tmp/p-public", O_RDONLY | O_TRUNC));
    CHECK("open a group-300 0640 file for reading (a supplementary group)", open("/tmp/p-group", O_RDONLY) >= 0);
    CHECK("access R_OK of root's 0600", access("/tmp/p-root", R_OK));
    CHECK("access W_OK of own", access("/tmp/p-own", W_OK));
    CHECK("access X_OK of a 0644 script", access("/tmp/p-public", X_OK));
    CHECK("chmod of root's file", chmod("/tmp/p-public", 0777));
    CHECK("chmod of own file", chmod("/tmp/p-own", 0640));
    CHECK("chown of own file to root", chown("/tmp/p-own", 0, -1));
    CHECK("chown of own file to a group it is in", chown("/tmp/p-own", -1, 300));
    CHECK("chown of own file to a group it is not in", chown("/tmp/p-own", -1, 999));
    CHECK("create in a root 0755 directory", open("/tmp/p-dir/new", O_WRONLY | O_CREAT, 0600));
    CHECK("mkdir in it", mkdir("/tmp/p-dir/sub", 0755));
    CHECK("unlink in it", unlink("/tmp/p-dir/kept"));
    CHECK("unlink root's file in sticky /tmp", unlink("/tmp/p-public"));
    int made = open("/tmp/p-made", O_WRONLY | O_CREAT, 0644);
    struct stat status;
    fstat(made, &status);
    printf("a new file is the creator's: uid %u gid %u\n", status.st_uid, status.st_gid);
    CHECK("unlink own file in sticky /tmp", unlink("/tmp/p-made"));
    CHECK("open a 0644 file in a root 0700 directory", open("/tmp/p-private/file", O_RDONLY));
    CHECK("stat of it", stat("/tmp/p-private/file", &status));
    struct timespec times[2] = {{1, 0}, {1, 0}};
    CHECK("utimensat explicit times on root's 0666 file", utimensat(AT_FDCWD, "/tmp/p-dir/kept-by-root", times, 0));
    CHECK("utimensat now on root's 0666 file", utimensat(AT_FDCWD, "/tmp/p-dir/kept-by-root", NULL, 0));
    CHECK("utimensat now on root's 0644 file", utimensat(AT_FDCWD, "/tmp/p-group", NULL, 0));
    CHECK("utimensat explicit times on own file", utimensat(AT_FDCWD, "/tmp/p-own", times, 0));
    CHECK("exec of root's 0700 program", execl("/tmp/p-root", "p-root", (char *)NULL));
    _exit(0);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    make("/tmp/p-own", 0600, 1000, 100);
    make("/tmp/p-own-ro", 0400, 1000, 100);
    make("/tmp/p-root", 0700, 0, 0);
    make("/tmp/p-public", 0644, 0, 0);
    make("/tmp/p-group", 0640, 0, 300);
    mkdir("/tmp/p-dir", 0755);
    make("/tmp/p-dir/kept", 0666, 1000, 100);
    make("/tmp/p-dir/kept-by-root", 0666, 0, 0);
    mkdir("/tmp/p-private", 0700);
    make("/tmp/p-private/file", 0644, 0, 0);
    chmod("/tmp", 01777);
    pid_t child = fork();
    if (child == 0) {
        as_alice();
    }
    waitpid(child, NULL, 0);
    struct stat status;
    stat("/tmp/p-own", &status);
    printf("after alice: p-own uid %u gid %u mode %o\n", status.st_uid, status.st_gid, status.st_mode & 07777);
    CHECK("root opens a 0400 file for reading and writing", open("/tmp/p-own-ro", O_RDWR) >= 0);
    chmod("/tmp/p-public", 0644);
    CHECK("root's access X_OK of a file with no execute bit", access("/tmp/p-public", X_OK));
    CHECK("root's access X_OK of a directory", access("/tmp/p-dir", X_OK));
    const char *paths[] = {"/tmp/p-own", "/tmp/p-own-ro", "/tmp/p-root", "/tmp/p-public", "/tmp/p-group", "/tmp/p-dir/kept", "/tmp/p-dir/kept-by-root", "/tmp/p-dir/new", "/tmp/p-made"};
    for (unsigned i = 0; i < sizeof paths / sizeof *paths; i++) {
        unlink(paths[i]);
    }
    CHECK("root opens the file in the 0700 directory", open("/tmp/p-private/file", O_RDONLY) >= 0);
    unlink("/tmp/p-private/file");
    rmdir("/tmp/p-private");
    rmdir("/tmp/p-dir/sub");
    rmdir("/tmp/p-dir");
    return 0;
}
