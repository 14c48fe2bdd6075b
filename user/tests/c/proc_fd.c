/*
 * /proc/self/fd/N followed as Linux's magic links are: opening one opens
 * that descriptor's file (even after its name is gone), chmod through it
 * reaches the file, and musl's fchmodat(AT_SYMLINK_NOFOLLOW) — which goes
 * through /proc/self/fd of an O_PATH descriptor — works; readlink gives
 * the path or what the descriptor is (pipe:[…], anon_inode:[eventfd]),
 * and /proc/<pid>/exe names that process's program. Output is identical
 * on Lamina and Linux.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

static void link_of(int fd, char *path, size_t size) {
    snprintf(path, size, "/proc/self/fd/%d", fd);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    umask(022);
    int fd = open("/tmp/magic", O_RDWR | O_CREAT | O_TRUNC, 0644);
    CHECK("write", write(fd, "through the link\n", 17));
    char path[64];
    link_of(fd, path, sizeof path);
    int again = open(path, O_RDONLY);
    EXPECT("open /proc/self/fd/N", again >= 0 && again != fd);
    char buffer[64] = {0};
    CHECK("read from the reopened file (its own offset)", read(again, buffer, sizeof buffer - 1));
    printf("  it read: %s", buffer);
    CHECK("chmod through the link", chmod(path, 0600));
    struct stat status;
    stat("/tmp/magic", &status);
    printf("  mode now %o\n", status.st_mode & 0777);
    CHECK("fchmodat AT_SYMLINK_NOFOLLOW", fchmodat(AT_FDCWD, "/tmp/magic", 0640, AT_SYMLINK_NOFOLLOW));
    stat("/tmp/magic", &status);
    printf("  mode now %o\n", status.st_mode & 0777);
    int only_path = open("/tmp/magic", O_PATH);
    link_of(only_path, path, sizeof path);
    int from_path = open(path, O_RDONLY);
    EXPECT("open the link of an O_PATH descriptor for reading", from_path >= 0);
    close(from_path);
    unlink("/tmp/magic");
    link_of(fd, path, sizeof path);
    int unlinked = open(path, O_RDONLY);
    EXPECT("open the link after the name is gone", unlinked >= 0);
    memset(buffer, 0, sizeof buffer);
    CHECK("  read", read(unlinked, buffer, 4));
    printf("  it read: %s\n", buffer);
    CHECK("open /proc/self/fd/999", open("/proc/self/fd/999", O_RDONLY));

    /* readlink: the path, or what the descriptor is. */
    char target[128];
    int null = open("/dev/null", O_RDWR);
    int ends[2];
    pipe(ends);
    int counter = eventfd(0, 0);
    int fds[] = {null, ends[0], counter};
    const char *names[] = {"/dev/null", "a pipe", "an eventfd"};
    for (int i = 0; i < 3; i++) {
        link_of(fds[i], path, sizeof path);
        memset(target, 0, sizeof target);
        ssize_t length = readlink(path, target, sizeof target - 1);
        char *bracket = strchr(target, '[');
        if (bracket && strncmp(target, "pipe:", 5) == 0) *bracket = 0; /* the inode number differs */
        printf("readlink of %s's link: %s\n", names[i], length > 0 ? target : errno_name(errno));
    }
    errno = 0;
    char *terminal = ttyname(null);
    printf("ttyname of /dev/null: %s %s\n", terminal ? "a name" : "none", errno_name(errno));
    char own[128] = {0}, parents[128] = {0};
    readlink("/proc/self/exe", own, sizeof own - 1);
    pid_t child = fork();
    if (child == 0) {
        char link[64];
        snprintf(link, sizeof link, "/proc/%d/exe", getppid());
        readlink(link, parents, sizeof parents - 1);
        _exit(strcmp(own, parents) == 0 ? 0 : 1);
    }
    int child_status = 0;
    waitpid(child, &child_status, 0);
    EXPECT("a child reads its parent's /proc/<pid>/exe", WIFEXITED(child_status) && WEXITSTATUS(child_status) == 0);
    char parent_link[64];
    snprintf(parent_link, sizeof parent_link, "/proc/%d/fd/%d", getpid(), fd);
    EXPECT("/proc/<own pid>/fd/N opens too", open(parent_link, O_RDONLY) >= 0);
    return 0;
}
