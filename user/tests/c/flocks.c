/*
 * flock(2): shared and exclusive whole-file locks held by open file
 * descriptions (dup shares one, a second open is another), LOCK_NB's
 * EWOULDBLOCK, a blocked locker woken by the unlock, a refused conversion
 * dropping the old lock (as Linux does), release on the last close, and
 * the errors.
 */
#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    const char *path = "/tmp/flock-test";
    int first = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    int second = open(path, O_RDWR);
    CHECK("first LOCK_EX", flock(first, LOCK_EX));
    CHECK("second LOCK_EX|LOCK_NB", flock(second, LOCK_EX | LOCK_NB));
    CHECK("second LOCK_SH|LOCK_NB", flock(second, LOCK_SH | LOCK_NB));
    int copy = dup(first);
    CHECK("a dup of first, LOCK_EX|LOCK_NB", flock(copy, LOCK_EX | LOCK_NB));
    close(first);
    CHECK("second, first closed but its dup open", flock(second, LOCK_EX | LOCK_NB));
    close(copy);
    CHECK("second, every descriptor of first closed", flock(second, LOCK_EX | LOCK_NB));

    /* A child blocks until the parent unlocks. */
    pid_t child = fork();
    if (child == 0) {
        int mine = open(path, O_RDWR);
        int locked = flock(mine, LOCK_EX);
        _exit(locked == 0 ? 0 : 1);
    }
    usleep(100000);
    CHECK("unlock for the waiting child", flock(second, LOCK_UN));
    int status = 0;
    waitpid(child, &status, 0);
    printf("the blocked child got the lock: %s\n", WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "yes" : "no");

    /* A refused conversion drops the old lock. */
    int a = open(path, O_RDONLY), b = open(path, O_RDONLY), c = open(path, O_RDONLY);
    CHECK("a LOCK_SH", flock(a, LOCK_SH));
    CHECK("b LOCK_SH", flock(b, LOCK_SH));
    CHECK("a to LOCK_EX|LOCK_NB while b shares", flock(a, LOCK_EX | LOCK_NB));
    CHECK("b LOCK_UN", flock(b, LOCK_UN));
    CHECK("c LOCK_EX|LOCK_NB (a lost its lock)", flock(c, LOCK_EX | LOCK_NB));
    CHECK("LOCK_UN with no lock", flock(b, LOCK_UN));
    CHECK("bad operation", flock(a, LOCK_SH | LOCK_EX));
    CHECK("bad descriptor", flock(99, LOCK_SH));
    unlink(path);
    return 0;
}
