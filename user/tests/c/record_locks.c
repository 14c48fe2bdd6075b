/*
 * POSIX record locks: conflicts between processes (F_SETLK EAGAIN,
 * F_GETLK naming the holder), shared readers, unlocking part of a range,
 * F_SETLKW waiting until the holder unlocks, EDEADLK for a cycle of
 * waiters, locks dropped when the process closes any descriptor of the
 * file or exits, open-file-description locks (F_OFD_*) conflicting even
 * within one process, and Linux's errors. Output is identical on Lamina
 * and Linux.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

#define FILE_NAME "/tmp/record-locks"

static int lock(int fd, int command, short type, off_t start, off_t length) {
    struct flock request = {.l_type = type, .l_whence = SEEK_SET, .l_start = start, .l_len = length};
    return fcntl(fd, command, &request);
}

static void show_conflict(const char *label, int fd, short type, off_t start, off_t length, pid_t holder) {
    struct flock request = {.l_type = type, .l_whence = SEEK_SET, .l_start = start, .l_len = length};
    int result = fcntl(fd, F_GETLK, &request);
    printf("%s: %d, type %s start %ld length %ld holder %s\n", label, result, request.l_type == F_UNLCK ? "F_UNLCK" : request.l_type == F_WRLCK ? "F_WRLCK" : "F_RDLCK",
           request.l_type == F_UNLCK ? 0L : (long)request.l_start, request.l_type == F_UNLCK ? 0L : (long)request.l_len,
           request.l_type == F_UNLCK ? "-" : request.l_pid == holder ? "the parent" : "someone else");
}

static void pause_ms(long ms) {
    struct timespec time = {0, ms * 1000000};
    nanosleep(&time, NULL);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    int fd = open(FILE_NAME, O_RDWR | O_CREAT | O_TRUNC, 0644);
    write(fd, "0123456789", 10);
    pid_t parent = getpid();
    CHECK("parent: write lock 0..100", lock(fd, F_SETLK, F_WRLCK, 0, 100));
    int ready[2], done[2];
    pipe(ready);
    pipe(done);
    pid_t child = fork();
    if (child == 0) {
        show_conflict("child: F_GETLK write 50..60", fd, F_WRLCK, 50, 10, parent);
        CHECK("child: write lock 50..60", lock(fd, F_SETLK, F_WRLCK, 50, 10));
        CHECK("child: read lock 200..300", lock(fd, F_SETLK, F_RDLCK, 200, 100));
        CHECK("child: write lock 100..200 (touching, not overlapping)", lock(fd, F_SETLK, F_WRLCK, 100, 100));
        write(ready[1], "1", 1);
        char byte;
        read(done[0], &byte, 1); /* the parent unlocked 0..50 */
        CHECK("child: write lock 10..20 after the parent unlocked 0..50", lock(fd, F_SETLK, F_WRLCK, 10, 10));
        /* Results are printed at the end, so that the two processes'
         * lines do not race. */
        write(ready[1], "2", 1);
        int waited = lock(fd, F_SETLKW, F_WRLCK, 60, 10);
        write(ready[1], "3", 1);
        read(done[0], &byte, 1); /* the parent holds 0..5 now */
        int second_wait = lock(fd, F_SETLKW, F_WRLCK, 0, 5);
        printf("child: F_SETLKW 60..70 waited for the parent's unlock: %d\n", waited);
        printf("child: F_SETLKW 0..5 waited too: %d\n", second_wait);
        _exit(0);
    }
    char byte;
    read(ready[0], &byte, 1);
    show_conflict("parent: F_GETLK read 250..260", fd, F_RDLCK, 250, 10, parent);
    show_conflict("parent: F_GETLK write 250..260", fd, F_WRLCK, 250, 10, parent);
    CHECK("parent: unlock 0..50", lock(fd, F_SETLK, F_UNLCK, 0, 50));
    write(done[1], "x", 1);
    read(ready[0], &byte, 1);
    pause_ms(200); /* the child is waiting for 60..70 */
    int unlocked = lock(fd, F_SETLK, F_UNLCK, 50, 50);
    read(ready[0], &byte, 1); /* the child holds 60..70 */
    int took = lock(fd, F_SETLK, F_WRLCK, 0, 5);
    write(done[1], "y", 1);
    pause_ms(200); /* the child is waiting for 0..5 */
    int deadlock = lock(fd, F_SETLKW, F_WRLCK, 60, 10);
    int deadlock_errno = errno;
    int let_go = lock(fd, F_SETLK, F_UNLCK, 0, 5);
    int status = 0;
    waitpid(child, &status, 0);
    printf("parent: unlock 50..100: %d\n", unlocked);
    printf("parent: write lock 0..5: %d\n", took);
    printf("parent: F_SETLKW 60..70 while the child waits for 0..5: %d %s\n", deadlock, deadlock < 0 ? errno_name(deadlock_errno) : "OK");
    printf("parent: unlock 0..5: %d\n", let_go);
    printf("child exited %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    CHECK("parent: write lock 0..1000 once the child's locks went with it", lock(fd, F_SETLK, F_WRLCK, 0, 1000));

    /* Closing any descriptor of the file drops the process's locks. */
    int other = open(FILE_NAME, O_RDONLY);
    close(other);
    child = fork();
    if (child == 0) {
        CHECK("child: write lock 0..1000 after the parent closed another descriptor", lock(fd, F_SETLK, F_WRLCK, 0, 1000));
        _exit(0);
    }
    waitpid(child, NULL, 0);

    /* Open-file-description locks. */
    int first = open(FILE_NAME, O_RDWR), second = open(FILE_NAME, O_RDWR);
    CHECK("F_OFD_SETLK write 0..10 on one description", lock(first, F_OFD_SETLK, F_WRLCK, 0, 10));
    CHECK("F_OFD_SETLK write 5..15 on another, same process", lock(second, F_OFD_SETLK, F_WRLCK, 5, 10));
    struct flock with_pid = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1, .l_pid = 1};
    CHECK("F_OFD_SETLK with l_pid set", fcntl(first, F_OFD_SETLK, &with_pid));
    close(first);
    CHECK("after closing the first description, the second locks", lock(second, F_OFD_SETLK, F_WRLCK, 5, 10));

    /* Errors. */
    int reader = open(FILE_NAME, O_RDONLY);
    CHECK("a write lock on a read-only descriptor", lock(reader, F_SETLK, F_WRLCK, 0, 1));
    CHECK("an unknown lock type", lock(fd, F_SETLK, 7, 0, 1));
    CHECK("a range before byte 0", lock(fd, F_SETLK, F_RDLCK, -5, 1));
    CHECK("a negative length before byte 0", lock(fd, F_SETLK, F_RDLCK, 2, -5));
    unlink(FILE_NAME);
    return 0;
}
