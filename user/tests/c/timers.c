/*
 * The real-time interval timer: alarm and setitimer deliver SIGALRM at the
 * deadline (and every interval), getitimer reports what is left, a new
 * setting replaces the old, fork starts disarmed, and SIGALRM's default
 * action ends the process. Prints no times, only what does not depend on
 * the kernel's speed.
 */
#include <signal.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static volatile sig_atomic_t alarms;

static void on_alarm(int signal) {
    (void)signal;
    alarms++;
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    struct sigaction action = {0};
    action.sa_handler = on_alarm;
    sigemptyset(&action.sa_mask);
    sigaction(SIGALRM, &action, NULL);

    printf("alarm(1) with none armed: %u\n", alarm(1));
    int paused = pause();
    printf("pause: %d %s, alarms %d\n", paused, errno_name(errno), (int)alarms);

    alarm(5);
    printf("alarm(0) after alarm(5): %u\n", alarm(0));

    struct itimerval every = {{0, 50000}, {0, 50000}}, off = {{0, 0}, {0, 0}}, now;
    alarms = 0;
    CHECK("setitimer every 50 ms", setitimer(ITIMER_REAL, &every, NULL));
    while (alarms < 5)
        pause();
    CHECK("getitimer while armed", getitimer(ITIMER_REAL, &now));
    printf("armed: interval %ld us, value positive %s\n", (long)now.it_interval.tv_usec, now.it_value.tv_sec > 0 || now.it_value.tv_usec > 0 ? "yes" : "no");
    struct itimerval old;
    CHECK("setitimer off", setitimer(ITIMER_REAL, &off, &old));
    printf("old interval %ld us\n", (long)old.it_interval.tv_usec);
    CHECK("getitimer when off", getitimer(ITIMER_REAL, &now));
    printf("off: %ld %ld %ld %ld\n", (long)now.it_interval.tv_sec, (long)now.it_interval.tv_usec, (long)now.it_value.tv_sec, (long)now.it_value.tv_usec);
    int before = alarms;
    usleep(200000);
    printf("no alarm after disarming: %s\n", alarms == before ? "yes" : "no");

    struct itimerval ten = {{0, 0}, {10, 0}};
    setitimer(ITIMER_REAL, &ten, NULL);
    getitimer(ITIMER_REAL, &now);
    printf("ten seconds: value %ld s (just under ten), interval %ld\n", (long)now.it_value.tv_sec, (long)now.it_interval.tv_sec);
    pid_t child = fork();
    if (child == 0) {
        struct itimerval mine;
        getitimer(ITIMER_REAL, &mine);
        _exit(mine.it_value.tv_sec == 0 && mine.it_value.tv_usec == 0 ? 0 : 1);
    }
    int status = 0;
    waitpid(child, &status, 0);
    printf("child starts disarmed: %s\n", WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "yes" : "no");
    setitimer(ITIMER_REAL, &off, NULL);

    child = fork();
    if (child == 0) {
        signal(SIGALRM, SIG_DFL);
        alarm(1);
        for (;;)
            pause();
    }
    waitpid(child, &status, 0);
    printf("default SIGALRM: %s %d\n", WIFSIGNALED(status) ? "killed by" : "exited", WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));

    struct itimerval bad = {{0, 0}, {0, 1000000}};
    CHECK("setitimer with 10^6 microseconds", setitimer(ITIMER_REAL, &bad, NULL));
    CHECK("setitimer of timer 7", setitimer(7, &every, NULL));
    return 0;
}
