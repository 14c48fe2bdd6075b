/*
 * prctl: the process name (read back by PR_GET_NAME and /proc/self/comm,
 * cut at 15 bytes), the parent-death signal (sent to a child whose parent
 * exits; not inherited by fork), dumpability, no_new_privs, the child
 * subreaper flag, timer slack, the capability bounding set, and EINVAL for
 * operations and arguments Linux refuses.
 */
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static int told[2];
static void on_parent_death(int signal) {
    (void)signal;
    write(told[1], "d", 1);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    char name[16] = {0};
    CHECK("PR_SET_NAME", prctl(PR_SET_NAME, "a-rather-long-process-name"));
    CHECK("PR_GET_NAME", prctl(PR_GET_NAME, name));
    printf("  %s\n", name);
    FILE *comm = fopen("/proc/self/comm", "r");
    char line[32] = {0};
    if (comm) {
        fgets(line, sizeof line, comm);
        fclose(comm);
    }
    printf("  /proc/self/comm: %s", line);

    int signal_number = -1;
    CHECK("PR_GET_PDEATHSIG (none)", prctl(PR_GET_PDEATHSIG, &signal_number));
    printf("  %d\n", signal_number);
    CHECK("PR_SET_PDEATHSIG 99", prctl(PR_SET_PDEATHSIG, 99));
    int ready[2];
    pipe(told);
    pipe(ready);
    pid_t middle = fork();
    if (middle == 0) {
        pid_t grandchild = fork();
        if (grandchild == 0) {
            signal(SIGUSR1, on_parent_death);
            prctl(PR_SET_PDEATHSIG, SIGUSR1);
            pid_t probe = fork();
            if (probe == 0) {
                int inherited = -1;
                prctl(PR_GET_PDEATHSIG, &inherited);
                _exit(inherited);
            }
            int status;
            waitpid(probe, &status, 0);
            write(told[1], WEXITSTATUS(status) == 0 ? "0" : "1", 1);
            write(ready[1], "r", 1);
            pause();
            _exit(0);
        }
        char byte;
        read(ready[0], &byte, 1);
        _exit(0); /* the grandchild's parent dies here */
    }
    waitpid(middle, NULL, 0);
    char verdict = 0, death = 0;
    struct pollfd entry = {told[0], POLLIN, 0};
    if (poll(&entry, 1, 5000) == 1) {
        read(told[0], &verdict, 1);
    }
    if (poll(&entry, 1, 5000) == 1) {
        read(told[0], &death, 1);
    }
    printf("PR_SET_PDEATHSIG: a fork does not inherit it: %s; the signal came when the parent exited: %s\n", verdict == '0' ? "yes" : "no",
           death == 'd' ? "yes" : "no");

    CHECK("PR_GET_DUMPABLE", prctl(PR_GET_DUMPABLE));
    CHECK("PR_SET_DUMPABLE 0", prctl(PR_SET_DUMPABLE, 0));
    CHECK("PR_GET_DUMPABLE", prctl(PR_GET_DUMPABLE));
    CHECK("PR_SET_DUMPABLE 2", prctl(PR_SET_DUMPABLE, 2));
    CHECK("PR_GET_NO_NEW_PRIVS", prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0));
    CHECK("PR_SET_NO_NEW_PRIVS 2", prctl(PR_SET_NO_NEW_PRIVS, 2, 0, 0, 0));
    CHECK("PR_SET_NO_NEW_PRIVS 1", prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
    CHECK("PR_GET_NO_NEW_PRIVS", prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0));
    int subreaper = -1;
    CHECK("PR_SET_CHILD_SUBREAPER", prctl(PR_SET_CHILD_SUBREAPER, 1));
    CHECK("PR_GET_CHILD_SUBREAPER", prctl(PR_GET_CHILD_SUBREAPER, &subreaper));
    printf("  %d\n", subreaper);
    CHECK("PR_GET_TIMERSLACK", prctl(PR_GET_TIMERSLACK));
    CHECK("PR_CAPBSET_READ CAP_SYS_ADMIN", prctl(PR_CAPBSET_READ, 21));
    CHECK("PR_CAPBSET_READ 1000", prctl(PR_CAPBSET_READ, 1000));
    CHECK("an unknown operation", prctl(9999));
    return 0;
}
