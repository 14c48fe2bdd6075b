/*
 * POSIX message queues: mq_open's flags, names and attributes, messages
 * taken highest priority first, full and empty queues with O_NONBLOCK and
 * with time limits, mq_getsetattr, a blocked receiver woken by another
 * process's send, mq_notify's signal and its one registration, mq_unlink,
 * and the errors Linux gives. Prints no times or pids.
 */
#include <fcntl.h>
#include <mqueue.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    mq_unlink("/lamina-q");
    struct mq_attr attr = {0, 3, 16, 0}, got;
    CHECK("open a missing queue", mq_open("/lamina-q", O_RDWR));
    CHECK("open with a bad size", mq_open("/lamina-q", O_RDWR | O_CREAT, 0600, &(struct mq_attr){0, 3, 0, 0}));
    CHECK("open a name with a slash", mq_open("/a/b", O_RDWR | O_CREAT, 0600, &attr));
    mqd_t queue = mq_open("/lamina-q", O_RDWR | O_CREAT | O_EXCL, 0600, &attr);
    EXPECT("created", queue != (mqd_t)-1);
    CHECK("create it again with O_EXCL", mq_open("/lamina-q", O_RDWR | O_CREAT | O_EXCL, 0600, &attr));
    CHECK("getattr", mq_getattr(queue, &got));
    printf("maxmsg %ld msgsize %ld curmsgs %ld flags %ld\n", got.mq_maxmsg, got.mq_msgsize, got.mq_curmsgs, got.mq_flags);

    CHECK("send low", mq_send(queue, "low", 3, 1));
    CHECK("send high", mq_send(queue, "high", 4, 9));
    CHECK("send low again", mq_send(queue, "low2", 4, 1));
    CHECK("send too long", mq_send(queue, "0123456789abcdefX", 17, 0));
    CHECK("send a bad priority", mq_send(queue, "x", 1, 40000));
    struct timespec soon = time_after_ms(CLOCK_REALTIME, 30);
    CHECK("timed send to a full queue", mq_timedsend(queue, "x", 1, 0, &soon));
    char buffer[64];
    unsigned priority;
    CHECK("receive into a short buffer", mq_receive(queue, buffer, 8, &priority));
    for (int i = 0; i < 3; i++) {
        ssize_t length = mq_receive(queue, buffer, sizeof buffer, &priority);
        printf("received %.*s priority %u\n", (int)(length < 0 ? 0 : length), buffer, priority);
    }
    soon = time_after_ms(CLOCK_REALTIME, 30);
    CHECK("timed receive from an empty queue", mq_timedreceive(queue, buffer, sizeof buffer, &priority, &soon));
    struct timespec bad = {0, 2000000000};
    CHECK("timed receive with a bad time", mq_timedreceive(queue, buffer, sizeof buffer, &priority, &bad));

    struct mq_attr nonblocking = {O_NONBLOCK, 0, 0, 0};
    CHECK("setattr O_NONBLOCK", mq_setattr(queue, &nonblocking, &got));
    printf("old flags %ld\n", got.mq_flags);
    CHECK("receive from an empty queue, non-blocking", mq_receive(queue, buffer, sizeof buffer, &priority));
    mq_getattr(queue, &got);
    printf("flags now %s\n", got.mq_flags & O_NONBLOCK ? "O_NONBLOCK" : "none");
    nonblocking.mq_flags = 0;
    mq_setattr(queue, &nonblocking, NULL);

    pid_t child = fork();
    if (child == 0) {
        mqd_t theirs = mq_open("/lamina-q", O_WRONLY);
        struct timespec pause_for = {0, 50000000};
        nanosleep(&pause_for, NULL);
        mq_send(theirs, "from the child", 14, 3);
        exit(0);
    }
    ssize_t length = mq_receive(queue, buffer, sizeof buffer, &priority);
    printf("blocked receive got %.*s priority %u\n", (int)(length < 0 ? 0 : length), buffer, priority);
    waitpid(child, NULL, 0);

    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigprocmask(SIG_BLOCK, &set, NULL);
    struct sigevent event = {0};
    event.sigev_notify = SIGEV_SIGNAL;
    event.sigev_signo = SIGUSR1;
    event.sigev_value.sival_int = 99;
    CHECK("notify", mq_notify(queue, &event));
    child = fork();
    if (child == 0) {
        mqd_t theirs = mq_open("/lamina-q", O_RDWR);
        printf("child: ");
        CHECK("notify while the parent is registered", mq_notify(theirs, &event));
        mq_send(theirs, "wake", 4, 0);
        exit(0);
    }
    waitpid(child, NULL, 0);
    siginfo_t info;
    struct timespec limit = {2, 0};
    CHECK("sigtimedwait for the notification", sigtimedwait(&set, &info, &limit));
    printf("code %d value %d sender is the child %s\n", info.si_code, info.si_value.sival_int, info.si_pid == child ? "yes" : "no");
    CHECK("notify again (the registration was used up)", mq_notify(queue, &event));
    CHECK("notify NULL removes it", mq_notify(queue, NULL));

    mqd_t reader = mq_open("/lamina-q", O_RDONLY);
    CHECK("send on a read-only descriptor", mq_send(reader, "x", 1, 0));
    CHECK("receive on a bad descriptor", mq_receive(12345, buffer, sizeof buffer, &priority));
    CHECK("unlink", mq_unlink("/lamina-q"));
    CHECK("unlink again", mq_unlink("/lamina-q"));
    CHECK("the open queue still works", mq_receive(queue, buffer, sizeof buffer, &priority));
    CHECK("close", mq_close(queue));
    CHECK("close", mq_close(reader));
    return 0;
}
