/*
 * close_range(2) and the listing of /proc/self/fd, which CPython's
 * subprocess uses in every child to close what it must not inherit:
 * closing a range (holes and an open-ended last included), marking a
 * range close-on-exec, EINVAL for a reversed range or unknown flags; the
 * directory lists each open descriptor as a symbolic link and no closed
 * one. Output is identical on Lamina and Linux.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"

static long close_range_call(unsigned first, unsigned last, unsigned flags) {
    return syscall(SYS_close_range, first, last, flags);
}

/* Whether /proc/self/fd lists descriptor `fd`. */
static int listed(int fd) {
    DIR *directory = opendir("/proc/self/fd");
    if (directory == NULL) {
        return -1;
    }
    int found = 0;
    for (struct dirent *entry; (entry = readdir(directory)) != NULL;) {
        char *end;
        long number = strtol(entry->d_name, &end, 10);
        if (*end == '\0' && end != entry->d_name && number == fd) {
            found = 1;
        }
    }
    closedir(directory);
    return found;
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    int file = open("/tmp/close-range", O_RDWR | O_CREAT | O_TRUNC, 0644);
    for (int fd = 20; fd <= 24; fd++) {
        dup2(file, fd);
    }
    dup2(file, 40);
    close(22);
    CHECK("close_range 21..23 (22 already closed)", close_range_call(21, 23, 0));
    EXPECT("20 still open", fcntl(20, F_GETFD) == 0);
    EXPECT("21 closed", fcntl(21, F_GETFD) == -1 && errno == EBADF);
    EXPECT("23 closed", fcntl(23, F_GETFD) == -1 && errno == EBADF);
    EXPECT("24 still open", fcntl(24, F_GETFD) == 0);
    CHECK("close_range 24..24 CLOEXEC", close_range_call(24, 24, 4));
    EXPECT("24 now close-on-exec", fcntl(24, F_GETFD) == FD_CLOEXEC);
    CHECK("close_range reversed", close_range_call(5, 3, 0));
    CHECK("close_range unknown flag", close_range_call(30, 31, 1 << 5));
    EXPECT("/proc/self/fd lists 20", listed(20) == 1);
    EXPECT("/proc/self/fd lists 40", listed(40) == 1);
    EXPECT("/proc/self/fd does not list 21", listed(21) == 0);
    struct stat status;
    CHECK("lstat /proc/self/fd/20", lstat("/proc/self/fd/20", &status));
    EXPECT("  it is a symbolic link", S_ISLNK(status.st_mode));
    char target[64] = {0};
    CHECK("readlink /proc/self/fd/20", readlink("/proc/self/fd/20", target, sizeof target - 1));
    printf("  it says %s\n", target);
    int pipe_ends[2];
    pipe(pipe_ends);
    char path[32];
    snprintf(path, sizeof path, "/proc/self/fd/%d", pipe_ends[0]);
    memset(target, 0, sizeof target);
    readlink(path, target, sizeof target - 1);
    EXPECT("a pipe end's link says pipe:[...]", strncmp(target, "pipe:[", 6) == 0);
    EXPECT("/proc/self/fd lists the pipe's read end", listed(pipe_ends[0]) == 1);
    CHECK("close_range 20..~0", close_range_call(20, ~0u, 0));
    EXPECT("40 closed", fcntl(40, F_GETFD) == -1 && errno == EBADF);
    EXPECT("/proc/self/fd no longer lists 40", listed(40) == 0);
    EXPECT("the file (below 20) still open", fcntl(file, F_GETFD) == 0);
    unlink("/tmp/close-range");
    return 0;
}
