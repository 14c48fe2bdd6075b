/*
 * execve from a multi-threaded process: every other thread goes, the
 * program runs with the process's id, from the main thread and from a
 * second thread alike, and the process ends normally (no leftover thread
 * wakes up in the new program).
 */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/wait.h>


static void *sleeper(void *unused) {
    (void)unused;
    for (;;)
        pause();
    return NULL;
}

static void run_with_pid(void) {
    char pid[16];
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    char *arguments[] = {"/bin/busybox", "sh", "-c", "test \"$$\" = \"$0\" && echo same pid || echo other pid; exit 6", pid, NULL};
    execv("/bin/busybox", arguments);
    perror("execv");
    _exit(127);
}

static void *execs(void *unused) {
    (void)unused;
    run_with_pid();
    return NULL;
}

static void report(const char *label, pid_t child) {
    int status = 0;
    waitpid(child, &status, 0);
    printf("%s: %s %d\n", label, WIFEXITED(status) ? "exited" : "killed by", WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    pid_t child = fork();
    if (child == 0) {
        pthread_t thread;
        pthread_create(&thread, NULL, sleeper, NULL);
        pthread_create(&thread, NULL, sleeper, NULL);
        usleep(50000);
        run_with_pid();
    }
    report("exec from the main thread of three", child);

    child = fork();
    if (child == 0) {
        pthread_t thread;
        pthread_create(&thread, NULL, sleeper, NULL);
        pthread_create(&thread, NULL, execs, NULL);
        for (;;)
            pause();
    }
    report("exec from a second thread", child);
    return 0;
}
