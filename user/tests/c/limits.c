/*
 * Resource limits: the defaults a fresh process sees, setrlimit's checks
 * (soft above hard is EINVAL, an unknown resource EINVAL), limits kept
 * across fork, and RLIMIT_NOFILE enforced: no descriptor at or past the
 * soft limit (open EMFILE, dup2 EBADF, F_DUPFD EINVAL).
 */
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static void show(const char *name, int resource) {
    struct rlimit limit;
    getrlimit(resource, &limit);
    printf("%s: soft %lld hard %lld\n", name, (long long)(limit.rlim_cur == RLIM_INFINITY ? -1 : (long long)limit.rlim_cur),
           (long long)(limit.rlim_max == RLIM_INFINITY ? -1 : (long long)limit.rlim_max));
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    show("RLIMIT_NOFILE", RLIMIT_NOFILE);
    show("RLIMIT_STACK", RLIMIT_STACK);
    show("RLIMIT_CORE", RLIMIT_CORE);
    show("RLIMIT_AS", RLIMIT_AS);

    struct rlimit bad = {20, 10};
    CHECK("soft above hard", setrlimit(RLIMIT_NOFILE, &bad));
    CHECK("resource 99", setrlimit(99, &bad));
    struct rlimit eight = {8, 4096};
    CHECK("NOFILE to 8", setrlimit(RLIMIT_NOFILE, &eight));
    show("RLIMIT_NOFILE now", RLIMIT_NOFILE);
    int opened = 0, last = -1;
    for (;;) {
        int fd = open("/dev/null", O_RDONLY);
        if (fd < 0) {
            printf("open stopped after %d more with %s\n", opened, errno_name(errno));
            break;
        }
        opened++;
        last = fd;
    }
    printf("highest descriptor: %d\n", last);
    CHECK("dup2 to 8", dup2(0, 8));
    CHECK("F_DUPFD from 8", fcntl(0, F_DUPFD, 8));
    close(last);
    CHECK("dup2 to 7 (under the limit)", dup2(0, 7));
    pid_t child = fork();
    if (child == 0) {
        struct rlimit inherited;
        getrlimit(RLIMIT_NOFILE, &inherited);
        _exit(inherited.rlim_cur == 8 ? 0 : 1);
    }
    int status = 0;
    waitpid(child, &status, 0);
    printf("fork keeps the limit: %s\n", WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "yes" : "no");
    return 0;
}
