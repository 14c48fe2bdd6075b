/*
 * Program text and read-only data are shared by every process running a
 * program (Lamina's exec cache, Linux's page cache), and that must never
 * show: a program rewritten in place runs as rewritten, and a process
 * that makes its own read-only data writable and changes it changes only
 * its own copy. The read-only string `marker` is what each run prints.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static const char marker[] = "exec-text-marker:original";

/* Runs `path print` and returns the first line it printed. */
static const char *run_print(const char *path) {
    static char line[128];
    int fds[2];
    if (pipe(fds) != 0)
        return "pipe failed";
    pid_t child = fork();
    if (child == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        execl(path, path, "print", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    ssize_t got = read(fds[0], line, sizeof line - 1);
    close(fds[0]);
    int status;
    waitpid(child, &status, 0);
    line[got > 0 ? got : 0] = 0;
    char *newline = strchr(line, '\n');
    if (newline)
        *newline = 0;
    return line;
}

/* Copies `from` to `to` (mode 0755); whether it worked. */
static int copy_file(const char *from, const char *to) {
    static char buffer[1 << 16];
    int in = open(from, O_RDONLY), out = open(to, O_CREAT | O_TRUNC | O_WRONLY, 0755);
    ssize_t got = 0;
    while (in >= 0 && out >= 0 && (got = read(in, buffer, sizeof buffer)) > 0)
        if (write(out, buffer, got) != got)
            got = -1;
    close(in);
    close(out);
    return in >= 0 && out >= 0 && got == 0;
}

/* Replaces the first copy of `old` in file `path` with `new` (same
 * length); whether it was found. */
static int patch_file(const char *path, const char *old, const char *new) {
    int fd = open(path, O_RDWR);
    off_t size = lseek(fd, 0, SEEK_END);
    char *bytes = malloc(size);
    int found = 0;
    if (fd >= 0 && bytes && pread(fd, bytes, size, 0) == size) {
        size_t length = strlen(old);
        for (off_t at = 0; at + (off_t)length <= size && !found; at++)
            if (memcmp(bytes + at, old, length) == 0)
                found = pwrite(fd, new, length, at) == (ssize_t)length;
    }
    free(bytes);
    close(fd);
    return found;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "print") == 0) {
        printf("%s\n", marker);
        return 0;
    }
    setvbuf(stdout, NULL, _IONBF, 0);
    const char *copy = "/tmp/exec-text-copy";
    EXPECT("copied the program", copy_file(argv[0], copy));
    printf("first run: %s\n", run_print(copy));
    printf("second run: %s\n", run_print(copy));

    char rewritten[sizeof marker];
    memcpy(rewritten, marker, sizeof marker);
    memcpy(rewritten + strlen("exec-text-marker:"), "REWRITTE", 8);
    EXPECT("rewrote the copy's marker in place", patch_file(copy, marker, rewritten));
    printf("after rewriting: %s\n", run_print(copy));

    uintptr_t page = (uintptr_t)marker & ~(uintptr_t)4095;
    CHECK("mprotect own read-only data writable", mprotect((void *)page, ((uintptr_t)marker + sizeof marker - page + 4095) & ~(uintptr_t)4095, PROT_READ | PROT_WRITE));
    ((volatile char *)marker)[0] = 'E';
    printf("own marker now: %s\n", marker);
    printf("another process of the original: %s\n", run_print(argv[0]));
    unlink(copy);
    return 0;
}
