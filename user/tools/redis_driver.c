/*
 * A profiling workload: starts /bin/redis-server on port 6391, waits until
 * /bin/redis-cli gets an answer, then runs /bin/redis-benchmark (50
 * clients) against it:
 *
 *   redis_driver [TEST [PIPELINE [REQUESTS]]]   (default: set 1 20000)
 *
 * For `cargo xtask profile --smp 1 --mem 512 --file
 * target/apps/redis-server:/bin/redis-server --file
 * target/apps/redis-benchmark:/bin/redis-benchmark --file
 * target/apps/redis-cli:/bin/redis-cli -- redis_driver set 1 20000`
 * (after `cargo xtask apps`). Not a test: it checks nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/wait.h>
int main(int argc, char **argv) {
    const char *test = argc > 1 ? argv[1] : "set";
    const char *pipeline = argc > 2 ? argv[2] : "1";
    const char *count = argc > 3 ? argv[3] : "20000";
    pid_t server = fork();
    if (server == 0) {
        execl("/bin/redis-server", "redis-server", "--port", "6391", "--save", "", "--appendonly", "no", "--logfile", "/tmp/r.log", (char *)0);
        _exit(127);
    }
    for (int i = 0; i < 100; i++) {
        pid_t p = fork();
        if (p == 0) { execl("/bin/redis-cli", "redis-cli", "-p", "6391", "ping", (char *)0); _exit(127); }
        int st; waitpid(p, &st, 0);
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0) break;
        usleep(50000);
    }
    pid_t bench = fork();
    if (bench == 0) {
        execl("/bin/redis-benchmark", "redis-benchmark", "-p", "6391", "-c", "50", "-n", count, "-P", pipeline, "-t", test, "-q", "--csv", (char *)0);
        _exit(127);
    }
    int st; waitpid(bench, &st, 0);
    kill(server, SIGTERM); waitpid(server, &st, 0);
    return 0;
}
