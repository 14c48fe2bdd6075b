/*
 * User and group ids: root's setuid sets every id (and there is no way
 * back), seteuid switches through the saved id, setreuid moves the saved
 * id as Linux does, setfsuid, setgid; a process that gave up root may not
 * signal root's processes, set groups or lower its nice value.
 */
#define _GNU_SOURCE
#include <grp.h>
#include <signal.h>
#include <sys/fsuid.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static void show(const char *label) {
    uid_t real, effective, saved;
    gid_t group_real, group_effective, group_saved;
    getresuid(&real, &effective, &saved);
    getresgid(&group_real, &group_effective, &group_saved);
    printf("%s: uid %u %u %u, gid %u %u %u\n", label, real, effective, saved, group_real, group_effective, group_saved);
}

static void in_child(void (*body)(void)) {
    pid_t child = fork();
    if (child == 0) {
        body();
        _exit(0);
    }
    waitpid(child, NULL, 0);
}

static void root_gives_up(void) {
    pid_t parent = getppid();
    CHECK("setuid(1000) as root", setuid(1000));
    show("  ids");
    CHECK("  getuid", getuid());
    CHECK("  setuid(0) back", setuid(0));
    CHECK("  kill of root's process", kill(parent, 0));
    CHECK("  kill of itself", kill(getpid(), 0));
    gid_t none[1] = {1};
    CHECK("  setgroups", setgroups(1, none));
    CHECK("  setpriority lower", setpriority(PRIO_PROCESS, 0, -5));
    CHECK("  setpriority higher", setpriority(PRIO_PROCESS, 0, 5));
}

static void switch_through_saved(void) {
    CHECK("seteuid(1000)", seteuid(1000));
    show("  ids");
    CHECK("  seteuid(0) through the saved id", seteuid(0));
    show("  ids");
    CHECK("setreuid(0, 1000)", setreuid(0, 1000));
    show("  ids");
    CHECK("setresuid(-1, -1, 2000) as non-root", setresuid(-1, -1, 2000));
}

static void groups_and_file_system(void) {
    CHECK("setfsuid(1234) gives the old", setfsuid(1234));
    CHECK("setfsuid(-1) reads it", setfsuid(-1));
    CHECK("setgid(100)", setgid(100));
    show("  ids");
    CHECK("setregid(200, -1)", setregid(200, -1));
    show("  ids");
    CHECK("setuid(-1)", setuid(-1));
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    show("at start");
    in_child(root_gives_up);
    in_child(switch_through_saved);
    in_child(groups_and_file_system);
    show("the parent's are unchanged");
    return 0;
}
