/*
 * Unix-domain sockets beyond pairs of streams: SCM_CREDENTIALS (the
 * kernel's account of the sender under SO_PASSCRED, what a sender may
 * claim: its own pid, uid and gid, or EPERM/ESRCH), datagram sockets with
 * path names (sendto a name, the sender's name from recvfrom, connect,
 * ECONNREFUSED for a name without a socket), SO_RCVTIMEO on a Unix
 * socket, and autobind (bind with the family alone: an abstract name of
 * five hex digits). Output is identical on Lamina and Linux (pids are printed only
 * as "matches").
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

/* Sends one byte with an SCM_CREDENTIALS message when `credentials` is given. */
static ssize_t send_byte(int socket, const struct ucred *credentials) {
    char byte = 'c';
    struct iovec vector = {&byte, 1};
    union {
        char bytes[CMSG_SPACE(sizeof(struct ucred))];
        struct cmsghdr align;
    } control;
    memset(&control, 0, sizeof control);
    struct msghdr message = {.msg_iov = &vector, .msg_iovlen = 1};
    if (credentials != NULL) {
        message.msg_control = control.bytes;
        message.msg_controllen = sizeof control.bytes;
        struct cmsghdr *header = CMSG_FIRSTHDR(&message);
        header->cmsg_level = SOL_SOCKET;
        header->cmsg_type = SCM_CREDENTIALS;
        header->cmsg_len = CMSG_LEN(sizeof(struct ucred));
        memcpy(CMSG_DATA(header), credentials, sizeof *credentials);
    }
    return sendmsg(socket, &message, 0);
}

/* Receives one byte; says whether credentials came and fills `*got`. */
static int receive_byte(int socket, struct ucred *got) {
    char byte;
    struct iovec vector = {&byte, 1};
    union {
        char bytes[CMSG_SPACE(sizeof(struct ucred)) + 64];
        struct cmsghdr align;
    } control;
    struct msghdr message = {.msg_iov = &vector, .msg_iovlen = 1, .msg_control = control.bytes, .msg_controllen = sizeof control.bytes};
    ssize_t received = recvmsg(socket, &message, 0);
    if (received != 1) {
        printf("recvmsg: %zd %s\n", received, errno_name(errno));
        return -1;
    }
    for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header != NULL; header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level == SOL_SOCKET && header->cmsg_type == SCM_CREDENTIALS && header->cmsg_len == CMSG_LEN(sizeof(struct ucred))) {
            memcpy(got, CMSG_DATA(header), sizeof *got);
            return 1;
        }
    }
    return 0;
}

static void print_credentials(const char *label, int came, const struct ucred *got, pid_t pid) {
    if (came != 1) {
        printf("%s: no credentials (%d)\n", label, came);
        return;
    }
    printf("%s: pid %s, uid %u, gid %u\n", label, got->pid == pid ? "matches" : "differs", got->uid, got->gid);
}

static void credentials(int kind, const char *name) {
    printf("SCM_CREDENTIALS over %s:\n", name);
    int pair[2];
    socketpair(AF_UNIX, kind, 0, pair);
    struct ucred got;
    CHECK("send without SO_PASSCRED", send_byte(pair[0], NULL));
    printf("received: %d\n", receive_byte(pair[1], &got));
    int on = 1;
    CHECK("set SO_PASSCRED", setsockopt(pair[1], SOL_SOCKET, SO_PASSCRED, &on, sizeof on));
    int value = 0;
    socklen_t length = sizeof value;
    getsockopt(pair[1], SOL_SOCKET, SO_PASSCRED, &value, &length);
    printf("SO_PASSCRED reads back %d\n", value);
    CHECK("send without a message", send_byte(pair[0], NULL));
    print_credentials("the kernel's account", receive_byte(pair[1], &got), &got, getpid());
    struct ucred own = {getpid(), getuid(), getgid()};
    CHECK("send claiming its own", send_byte(pair[0], &own));
    print_credentials("claimed", receive_byte(pair[1], &got), &got, getpid());
    struct ucred other_ids = {getpid(), 1234, 5678};
    CHECK("root claiming other ids", send_byte(pair[0], &other_ids));
    print_credentials("claimed by root", receive_byte(pair[1], &got), &got, getpid());
    struct ucred no_such = {999999, 0, 0};
    CHECK("claiming a pid nobody has", send_byte(pair[0], &no_such));

    pid_t child = fork();
    if (child == 0) {
        if (setgid(100) != 0 || setuid(1000) != 0) {
            printf("could not drop privileges\n");
            _exit(1);
        }
        CHECK("a user's send", send_byte(pair[0], NULL));
        struct ucred parent_pid = {getppid(), 1000, 100};
        CHECK("a user claiming its parent's pid", send_byte(pair[0], &parent_pid));
        struct ucred root_uid = {getpid(), 0, 100};
        CHECK("a user claiming uid 0", send_byte(pair[0], &root_uid));
        _exit(0);
    }
    int status;
    waitpid(child, &status, 0);
    print_credentials("from the child", receive_byte(pair[1], &got), &got, child);
    close(pair[0]);
    close(pair[1]);
}

static socklen_t path_address(struct sockaddr_un *address, const char *path) {
    memset(address, 0, sizeof *address);
    address->sun_family = AF_UNIX;
    strcpy(address->sun_path, path);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(path) + 1);
}

static void named_datagrams(void) {
    printf("named datagram sockets:\n");
    unlink("/tmp/unix_dgram_server");
    unlink("/tmp/unix_dgram_client");
    struct sockaddr_un server_name, client_name, from;
    socklen_t server_length = path_address(&server_name, "/tmp/unix_dgram_server");
    socklen_t client_length = path_address(&client_name, "/tmp/unix_dgram_client");
    int server = socket(AF_UNIX, SOCK_DGRAM, 0);
    CHECK("bind the server", bind(server, (struct sockaddr *)&server_name, server_length));
    int client = socket(AF_UNIX, SOCK_DGRAM, 0);
    CHECK("bind the client", bind(client, (struct sockaddr *)&client_name, client_length));
    CHECK("sendto the server's name", sendto(client, "hello", 5, 0, (struct sockaddr *)&server_name, server_length));
    CHECK("another", sendto(client, "again!", 6, 0, (struct sockaddr *)&server_name, server_length));
    char buffer[32];
    socklen_t from_length = sizeof from;
    ssize_t got = recvfrom(server, buffer, sizeof buffer, 0, (struct sockaddr *)&from, &from_length);
    printf("server got %zd bytes '%.*s' from %s\n", got, (int)(got > 0 ? got : 0), buffer, from_length > 2 ? from.sun_path : "(unnamed)");
    CHECK("a short read of a datagram", recv(server, buffer, 3, 0));
    CHECK("reply to the sender's name", sendto(server, "hi", 2, 0, (struct sockaddr *)&from, from_length));
    CHECK("the client reads the reply", recv(client, buffer, sizeof buffer, 0));

    int anonymous = socket(AF_UNIX, SOCK_DGRAM, 0);
    CHECK("an unnamed sender", sendto(anonymous, "anon", 4, 0, (struct sockaddr *)&server_name, server_length));
    from_length = sizeof from;
    got = recvfrom(server, buffer, sizeof buffer, 0, (struct sockaddr *)&from, &from_length);
    printf("got %zd bytes, sender name length %u\n", got, from_length);
    CHECK("connect to the server", connect(anonymous, (struct sockaddr *)&server_name, server_length));
    CHECK("send when connected", send(anonymous, "via connect", 11, 0));
    CHECK("the server reads it", recv(server, buffer, sizeof buffer, 0));

    struct sockaddr_un nobody;
    socklen_t nobody_length = path_address(&nobody, "/tmp/unix_dgram_nobody");
    CHECK("sendto a name with no socket", sendto(client, "x", 1, 0, (struct sockaddr *)&nobody, nobody_length));
    close(server);
    CHECK("sendto a closed socket's name", sendto(client, "x", 1, 0, (struct sockaddr *)&server_name, server_length));
    CHECK("send on a socket whose peer closed", send(anonymous, "x", 1, 0));
    close(client);
    close(anonymous);
    unlink("/tmp/unix_dgram_server");
    unlink("/tmp/unix_dgram_client");
}

static long elapsed_ms(struct timespec since) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (now.tv_sec - since.tv_sec) * 1000 + (now.tv_nsec - since.tv_nsec) / 1000000;
}

static void receive_timeout(void) {
    printf("SO_RCVTIMEO on Unix sockets:\n");
    int pair[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, pair);
    struct timeval limit = {0, 150000};
    CHECK("set SO_RCVTIMEO", setsockopt(pair[0], SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit));
    struct timeval read_back;
    socklen_t length = sizeof read_back;
    getsockopt(pair[0], SOL_SOCKET, SO_RCVTIMEO, &read_back, &length);
    EXPECT("read back 150 to 160 ms", read_back.tv_sec == 0 && read_back.tv_usec >= 150000 && read_back.tv_usec < 160000);
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    char byte;
    CHECK("recv with nothing to read", recv(pair[0], &byte, 1, 0));
    EXPECT("waited at least 140 ms", elapsed_ms(start) >= 140);
    write(pair[1], "y", 1);
    CHECK("recv with a byte waiting", recv(pair[0], &byte, 1, 0));
    close(pair[0]);
    close(pair[1]);
}

/* Whether `name` (of `length` bytes) is an autobound name: NUL, then five hex digits. */
static int autobound(const struct sockaddr_un *name, socklen_t length) {
    if (length != offsetof(struct sockaddr_un, sun_path) + 6 || name->sun_path[0] != 0) {
        return 0;
    }
    for (int index = 1; index < 6; index++) {
        if (strchr("0123456789abcdef", name->sun_path[index]) == NULL) {
            return 0;
        }
    }
    return 1;
}

static void autobind(void) {
    printf("autobind:\n");
    struct sockaddr_un family_only = {.sun_family = AF_UNIX};
    int first = socket(AF_UNIX, SOCK_STREAM, 0);
    int second = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK("bind with the family alone", bind(first, (struct sockaddr *)&family_only, sizeof(sa_family_t)));
    CHECK("another", bind(second, (struct sockaddr *)&family_only, sizeof(sa_family_t)));
    struct sockaddr_un one, two;
    socklen_t one_length = sizeof one, two_length = sizeof two;
    getsockname(first, (struct sockaddr *)&one, &one_length);
    getsockname(second, (struct sockaddr *)&two, &two_length);
    EXPECT("an abstract name of five hex digits", autobound(&one, one_length) && autobound(&two, two_length));
    EXPECT("the two differ", memcmp(one.sun_path, two.sun_path, 6) != 0);
    CHECK("bind again with the family alone", bind(first, (struct sockaddr *)&family_only, sizeof(sa_family_t)));
    CHECK("listen on the autobound name", listen(first, 1));
    int client = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK("connect to it", connect(client, (struct sockaddr *)&one, one_length));
    CHECK("connect with the family alone", connect(second, (struct sockaddr *)&family_only, sizeof(sa_family_t)));
    close(client);
    close(first);
    close(second);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    credentials(SOCK_STREAM, "SOCK_STREAM");
    credentials(SOCK_DGRAM, "SOCK_DGRAM");
    credentials(SOCK_SEQPACKET, "SOCK_SEQPACKET");
    named_datagrams();
    receive_timeout();
    autobind();
    return 0;
}
