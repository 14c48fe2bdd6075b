/*
 * A wait for any child also sees children that appear while it waits:
 * an orphan adopted by this subreaper (its grandparent ended) and a child
 * another thread forked. Each ends long before the child the wait began
 * with, and must be the first reaped.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static pid_t long_lived(void) {
    pid_t child = fork();
    if (child == 0) {
        sleep(3);
        _exit(0);
    }
    return child;
}

static void adopted_orphan(void) {
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    fflush(stdout);
    pid_t middle = fork();
    if (middle == 0) {
        /* The middle one forks a parent of the orphan and lives on. */
        pid_t parent = fork();
        if (parent == 0) {
            pid_t orphan = fork();
            if (orphan == 0) {
                usleep(200 * 1000);
                _exit(7);
            }
            _exit(0);
        }
        waitpid(parent, NULL, 0);
        sleep(3);
        _exit(0);
    }
    int status = 0;
    pid_t first = waitpid(-1, &status, 0);
    EXPECT("the first child reaped is the adopted orphan", first != middle && WIFEXITED(status) && WEXITSTATUS(status) == 7);
    waitpid(middle, NULL, 0);
    prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
}

static pid_t forked_by_thread;

static void *fork_later(void *unused) {
    (void)unused;
    usleep(200 * 1000);
    pid_t child = fork();
    if (child == 0) _exit(9);
    forked_by_thread = child;
    return NULL;
}

static void forked_by_another_thread(void) {
    pid_t waiting_for = long_lived();
    pthread_t thread;
    pthread_create(&thread, NULL, fork_later, NULL);
    int status = 0;
    pid_t first = waitpid(-1, &status, 0);
    pthread_join(thread, NULL);
    EXPECT("the first child reaped is the one another thread forked", first == forked_by_thread && WIFEXITED(status) && WEXITSTATUS(status) == 9);
    waitpid(waiting_for, NULL, 0);
}

int main(void) {
    adopted_orphan();
    forked_by_another_thread();
    CHECK("no child left", waitpid(-1, NULL, WNOHANG));
    return 0;
}
