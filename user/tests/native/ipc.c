/*
 * Lamina's native IPC between two processes (fork: two address spaces):
 * call and reply_recv with registers and buffer bytes, a capability sent
 * in a message and used by its receiver, a dropped call, a closed
 * endpoint, an interrupted call, and the errors for bad arguments. Lamina
 * only (on Linux these are not system calls). Each line says what was
 * checked; the tier passes the test when it exits 0 with no "FAIL".
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <lamina/native.h>

static int failures;

static void check(const char *what, int ok) {
    printf("%s %s\n", ok ? "ok" : "FAIL", what);
    if (!ok)
        failures++;
}

/* Commands the server understands, in word 0. */
enum command { ADD_ONE = 1, UPPERCASE, TAKE_CAPABILITY, DROP_CALL, QUIT };

static char server_buffer[64];

/* Answers calls on `endpoint` until QUIT. */
static void serve(uint64_t endpoint) {
    lamina_ipc_buffer(server_buffer, sizeof server_buffer);
    struct lamina_message message = {{0}, 0};
    int64_t got = lamina_ipc(LAMINA_RECV, endpoint, &message);
    while (got >= 0) {
        struct lamina_message answer = {{0}, 0};
        switch (message.words[0]) {
        case ADD_ONE:
            for (int i = 0; i < 4; i++)
                answer.words[i] = message.words[i] + 1;
            answer.words[0] = (message.info & LAMINA_CALL_MESSAGE) != 0;
            break;
        case UPPERCASE: {
            size_t length = message.info & LAMINA_LENGTH_MASK;
            for (size_t i = 0; i < length; i++)
                server_buffer[i] = (char)(server_buffer[i] - 'a' + 'A');
            answer.info = length;
            answer.words[1] = (message.info & LAMINA_TRUNCATED) != 0;
            break;
        }
        case TAKE_CAPABILITY: {
            /* Answer with what came, then use the endpoint it named. */
            int came = (message.info & LAMINA_CAPABILITY) != 0;
            uint64_t slot = LAMINA_SLOT(message.info);
            answer.words[0] = came;
            lamina_ipc(LAMINA_REPLY, 0, &answer);
            struct lamina_message note = {{99, 0, 0, 0}, 0};
            if (came)
                lamina_ipc(LAMINA_SEND, slot, &note);
            got = lamina_ipc(LAMINA_RECV, endpoint, &message);
            continue;
        }
        case DROP_CALL:
            /* A plain receive lets the held call go unanswered. */
            got = lamina_ipc(LAMINA_RECV, endpoint, &message);
            continue;
        case QUIT:
            lamina_ipc(LAMINA_REPLY, 0, &answer);
            _exit(0);
        }
        got = lamina_ipc(LAMINA_REPLY_RECV, endpoint, &answer);
        message = answer;
    }
    _exit(3);
}

static void on_alarm(int signal) { (void)signal; }

int main(void) {
    int64_t endpoint = lamina_create_endpoint(LAMINA_ALL);
    if (endpoint == -ENOSYS) {
        printf("not Lamina: skipped\n");
        return 77;
    }
    check("endpoint_create gives a slot", endpoint >= 0);
    if (endpoint < 0)
        return 1;
    pid_t server = fork();
    if (server == 0)
        serve((uint64_t)endpoint);

    struct lamina_message message = {{ADD_ONE, 10, 20, 30}, 0};
    int64_t info = lamina_ipc(LAMINA_CALL, endpoint, &message);
    check("a call returns the answer's info", info == 0);
    check("the answer carries the server's registers", message.words[1] == 11 && message.words[2] == 21 && message.words[3] == 31);
    check("the server saw a call", message.words[0] == 1);

    static char buffer[16];
    check("ipc_buffer takes 16 bytes", lamina_ipc_buffer(buffer, sizeof buffer) == 0);
    strcpy(buffer, "lamina");
    message = (struct lamina_message){{UPPERCASE, 0, 0, 0}, 6};
    info = lamina_ipc(LAMINA_CALL, endpoint, &message);
    check("bytes go through both buffers", info == 6 && memcmp(buffer, "LAMINA", 6) == 0 && message.words[1] == 0);

    /* A capability made after the fork reaches the server only in a message. */
    int64_t second = lamina_create_endpoint(LAMINA_ALL);
    message = (struct lamina_message){{TAKE_CAPABILITY, 0, 0, 0}, LAMINA_WITH_SLOT(second)};
    info = lamina_ipc(LAMINA_CALL, endpoint, &message);
    check("the server got the capability", info >= 0 && message.words[0] == 1);
    message = (struct lamina_message){{0}, 0};
    info = lamina_ipc(LAMINA_RECV, second, &message);
    check("the server sent on the endpoint it was given", info >= 0 && message.words[0] == 99 && !(info & LAMINA_CALL_MESSAGE));

    message = (struct lamina_message){{DROP_CALL, 0, 0, 0}, 0};
    check("a call its server lets go fails with ECONNRESET", lamina_ipc(LAMINA_CALL, endpoint, &message) == -ECONNRESET);

    /* Errors. */
    message = (struct lamina_message){{0}, 0};
    check("a call on an empty slot is EBADF", lamina_ipc(LAMINA_CALL, 2000, &message) == -EBADF);
    check("a slot past the space is EBADF", lamina_ipc(LAMINA_CALL, 1ull << 40, &message) == -EBADF);
    check("reply with no call held is EINVAL", lamina_ipc(LAMINA_REPLY, 0, &message) == -EINVAL);
    message.info = sizeof buffer + 1;
    check("more bytes than the buffer is EINVAL", lamina_ipc(LAMINA_SEND, endpoint, &message) == -EINVAL);
    check("a buffer over 4 KiB is EINVAL", lamina_ipc_buffer(buffer, 4097) == -EINVAL);
    check("an unknown right is EINVAL", lamina_create_endpoint(1u << 7) == -EINVAL);
    int64_t send_only = lamina_derive(endpoint, LAMINA_WRITE);
    message = (struct lamina_message){{0}, 0};
    check("receiving needs the read right (EACCES)", send_only >= 0 && lamina_ipc(LAMINA_RECV, send_only, &message) == -EACCES);
    check("a call on a file descriptor is EINVAL", lamina_ipc(LAMINA_CALL, 1, &message) == -EINVAL);
    message.info = LAMINA_WITH_SLOT(second);
    check("sending a capability needs the grant right", lamina_ipc(LAMINA_SEND, send_only, &message) == -EPERM);

    /* A signal ends a call nobody answers. */
    struct sigaction action = {0};
    action.sa_handler = on_alarm;
    sigaction(SIGALRM, &action, NULL);
    alarm(1);
    message = (struct lamina_message){{0}, 0};
    check("a signal interrupts a waiting call with EINTR", lamina_ipc(LAMINA_CALL, second, &message) == -EINTR);

    /* The kernel keeps each thread's last endpoint look-up: a slot used,
     * emptied and filled again must name what it holds now. */
    message = (struct lamina_message){{0}, 0};
    int reused = lamina_ipc(LAMINA_RECV, send_only, &message) == -EACCES && lamina_drop(send_only) == 0;
    check("a dropped slot, just used, is EBADF", reused && lamina_ipc(LAMINA_RECV, send_only, &message) == -EBADF);
    int64_t refilled = lamina_create_endpoint(LAMINA_READ);
    alarm(1);
    check("a refilled slot uses its new capability's rights", refilled == send_only && lamina_ipc(LAMINA_RECV, refilled, &message) == -EINTR);
    lamina_drop(refilled);

    /* Revoking the endpoint closes it under a waiting receiver. The
     * receiver must be waiting by then: a revoke that comes first finds
     * it not yet in `recv` (which then fails with EBADF), and the round
     * is tried again with a longer head start. */
    int closed_under_it = 0, revoked_both = 1, status;
    for (int round = 1; round <= 5 && !closed_under_it; round++) {
        int64_t third = lamina_create_endpoint(LAMINA_ALL);
        pid_t waiter = fork();
        if (waiter == 0) {
            struct lamina_message nothing = {{0}, 0};
            int64_t got = lamina_ipc(LAMINA_RECV, third, &nothing);
            _exit(got == -EPIPE ? 0 : got == -EBADF ? 1 : 2);
        }
        usleep(100000 * round);
        revoked_both &= lamina_revoke(third, 0) == 2;
        waitpid(waiter, &status, 0);
        closed_under_it = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        if (!WIFEXITED(status) || WEXITSTATUS(status) > 1)
            break;
    }
    check("revoking the endpoint removes both copies", revoked_both);
    check("a receiver waiting on a revoked endpoint fails with EPIPE", closed_under_it);

    message = (struct lamina_message){{QUIT, 0, 0, 0}, 0};
    lamina_ipc(LAMINA_CALL, endpoint, &message);
    waitpid(server, &status, 0);
    check("the server ended cleanly", WIFEXITED(status) && WEXITSTATUS(status) == 0);
    check("dropping the endpoint", lamina_drop(endpoint) == 0 && lamina_drop(second) == 0);
    return failures == 0 ? 0 : 1;
}
