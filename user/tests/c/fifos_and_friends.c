/*
 * Named pipes (mkfifo, mknod, and the open rules: a reader waits for a
 * writer, a nonblocking writer with no reader is ENXIO), device and file
 * nodes, fallocate and posix_fadvise on files and pipes, memfd_create,
 * nice values (getpriority/setpriority for a process and its group) and
 * supplementary groups (setgroups/getgroups).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <grp.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static void fifos(void) {
    unlink("/tmp/fifo");
    CHECK("mkfifo", mkfifo("/tmp/fifo", 0600));
    CHECK("mkfifo again", mkfifo("/tmp/fifo", 0600));
    struct stat status;
    stat("/tmp/fifo", &status);
    EXPECT("  it is a FIFO", S_ISFIFO(status.st_mode));
    CHECK("a nonblocking writer with no reader", open("/tmp/fifo", O_WRONLY | O_NONBLOCK));
    int reader = open("/tmp/fifo", O_RDONLY | O_NONBLOCK);
    EXPECT("a nonblocking reader opens at once", reader >= 0);
    char byte;
    CHECK("  reads end of file with no writer", read(reader, &byte, 1));
    int writer = open("/tmp/fifo", O_WRONLY | O_NONBLOCK);
    EXPECT("  now a nonblocking writer opens", writer >= 0);
    CHECK("  write", write(writer, "abc", 3));
    char text[4] = {0};
    CHECK("  read", read(reader, text, 3));
    printf("  %s\n", text);
    close(writer);
    close(reader);

    pid_t child = fork();
    if (child == 0) {
        usleep(50000);
        int late_writer = open("/tmp/fifo", O_WRONLY);
        write(late_writer, "from the child", 14);
        _exit(0);
    }
    int blocking = open("/tmp/fifo", O_RDONLY);
    EXPECT("a blocking reader waits for a writer", blocking >= 0);
    char message[32] = {0};
    int total = 0, got;
    while ((got = read(blocking, message + total, sizeof message - 1 - total)) > 0) {
        total += got;
    }
    printf("  read until the writer left: %s\n", message);
    waitpid(child, NULL, 0);
    close(blocking);
    CHECK("unlink the FIFO", unlink("/tmp/fifo"));

    CHECK("mknod S_IFIFO", mknod("/tmp/fifo2", S_IFIFO | 0644, 0));
    CHECK("mknod S_IFREG", mknod("/tmp/regular", S_IFREG | 0644, 0));
    stat("/tmp/regular", &status);
    EXPECT("  a regular empty file", S_ISREG(status.st_mode) && status.st_size == 0);
    CHECK("mknod S_IFCHR (1, 3)", mknod("/tmp/null2", S_IFCHR | 0666, makedev(1, 3)));
    stat("/tmp/null2", &status);
    printf("  char device %u:%u\n", major(status.st_rdev), minor(status.st_rdev));
    CHECK("mknod S_IFDIR", mknod("/tmp/dir2", S_IFDIR | 0755, 0));
    CHECK("mknod with a bad type", mknod("/tmp/bad", 0170000 | 0644, 0));
    CHECK("mknodat relative to a directory", mknodat(open("/tmp", O_RDONLY | O_DIRECTORY), "fifo3", S_IFIFO | 0600, 0));
    unlink("/tmp/fifo2");
    unlink("/tmp/fifo3");
    unlink("/tmp/regular");
    unlink("/tmp/null2");
}

static void file_space(void) {
    int fd = open("/tmp/space", O_RDWR | O_CREAT | O_TRUNC, 0644);
    write(fd, "0123456789", 10);
    CHECK("posix_fadvise SEQUENTIAL", posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL));
    printf("posix_fadvise with bad advice: %s\n", errno_name(posix_fadvise(fd, 0, 0, 99)));
    printf("posix_fadvise of a bad descriptor: %s\n", errno_name(posix_fadvise(-42, 0, 0, POSIX_FADV_NORMAL)));
    int ends[2];
    pipe(ends);
    printf("posix_fadvise of a pipe: %s\n", errno_name(posix_fadvise(ends[0], 0, 0, POSIX_FADV_NORMAL)));
    CHECK("fallocate growing to 100", fallocate(fd, 0, 50, 50));
    struct stat status;
    fstat(fd, &status);
    printf("  size %ld\n", (long)status.st_size);
    CHECK("fallocate KEEP_SIZE past the end", fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 1000));
    fstat(fd, &status);
    printf("  size %ld\n", (long)status.st_size);
    CHECK("fallocate PUNCH_HOLE|KEEP_SIZE of bytes 2..5", fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 2, 3));
    char bytes[10];
    pread(fd, bytes, 10, 0);
    printf("  bytes: %c%c%d%d%d%c\n", bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5]);
    CHECK("fallocate PUNCH_HOLE alone", fallocate(fd, FALLOC_FL_PUNCH_HOLE, 0, 1));
    CHECK("fallocate of length 0", fallocate(fd, 0, 0, 0));
    CHECK("fallocate of a pipe", fallocate(ends[1], 0, 0, 10));
    printf("posix_fallocate of a bad descriptor: %s\n", errno_name(posix_fallocate(-42, 0, 10)));
    int readonly = open("/tmp/space", O_RDONLY);
    CHECK("fallocate of a read-only descriptor", fallocate(readonly, 0, 0, 10));
    close(readonly);
    close(fd);
    close(ends[0]);
    close(ends[1]);
    unlink("/tmp/space");

    int memory = memfd_create("scratch", MFD_CLOEXEC);
    EXPECT("memfd_create", memory >= 0);
    printf("  close-on-exec: %s\n", fcntl(memory, F_GETFD) & FD_CLOEXEC ? "yes" : "no");
    CHECK("  write", write(memory, "anonymous", 9));
    CHECK("  ftruncate to 4096", ftruncate(memory, 4096));
    char *mapped = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, memory, 0);
    printf("  mapped shared: %.9s\n", mapped);
    mapped[0] = 'A';
    pread(memory, bytes, 1, 0);
    printf("  a store seen by pread: %c\n", bytes[0]);
    fstat(memory, &status);
    printf("  regular, %ld bytes, %lu links\n", (long)status.st_size, (unsigned long)status.st_nlink);
    CHECK("memfd_create with a bad flag", memfd_create("x", 0x100));
    close(memory);
}

static void identity(void) {
    errno = 0;
    int base = getpriority(PRIO_PROCESS, 0);
    printf("getpriority of this process: %d %s\n", base, errno_name(errno));
    CHECK("setpriority +3", setpriority(PRIO_PROCESS, 0, base + 3));
    printf("  now %d\n", getpriority(PRIO_PROCESS, getpid()));
    FILE *stat_file = fopen("/proc/self/stat", "r");
    long priority = 0, nice = 0;
    if (stat_file) {
        fscanf(stat_file, "%*d (%*[^)]) %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %ld %ld", &priority, &nice);
        fclose(stat_file);
    }
    printf("  /proc/self/stat priority %ld nice %ld\n", priority, nice);
    pid_t child = fork();
    if (child == 0) {
        _exit(getpriority(PRIO_PROCESS, 0));
    }
    int status;
    waitpid(child, &status, 0);
    printf("  a child inherits it: %d\n", WEXITSTATUS(status));
    CHECK("setpriority of the process group", setpriority(PRIO_PGRP, 0, 5));
    printf("  now %d\n", getpriority(PRIO_PROCESS, 0));
    CHECK("setpriority past 19 is clamped", setpriority(PRIO_PROCESS, 0, 40));
    printf("  now %d\n", getpriority(PRIO_PROCESS, 0));
    CHECK("setpriority back to 0", setpriority(PRIO_PROCESS, 0, 0));
    CHECK("getpriority of no process", getpriority(PRIO_PROCESS, 999999));
    CHECK("getpriority with a bad which", getpriority(7, 0));

    gid_t groups[3] = {5, 7, 11}, read_back[8];
    CHECK("setgroups of 3", setgroups(3, groups));
    CHECK("getgroups(0) counts them", getgroups(0, NULL));
    CHECK("getgroups", getgroups(8, read_back));
    printf("  %u %u %u\n", read_back[0], read_back[1], read_back[2]);
    CHECK("getgroups into too small a list", getgroups(1, read_back));
    CHECK("setgroups past NGROUPS_MAX", syscall(SYS_setgroups, 70000, groups));
    CHECK("setgroups of none", setgroups(0, NULL));
    CHECK("getgroups(0) again", getgroups(0, NULL));
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    fifos();
    file_space();
    identity();
    return 0;
}
