/*
 * Unix stream socket pairs, eventfd counters and epoll, as Linux gives
 * them: bytes both ways, MSG_PEEK, MSG_DONTWAIT, shutdown and end of file,
 * EPIPE once the peer is gone, options and names; an eventfd's count and
 * semaphore mode; epoll's add/modify/delete, level-triggered and
 * one-shot readiness, a wait that another process ends, and the errors
 * of each call. Also preadv/pwritev.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static void socket_pairs(void) {
    int pair[2];
    CHECK("socketpair(AF_UNIX, SOCK_STREAM)", socketpair(AF_UNIX, SOCK_STREAM, 0, pair));
    CHECK("write one way", write(pair[0], "ping", 4));
    CHECK("send the other way", send(pair[1], "pong!", 5, 0));
    char buffer[16] = {0};
    CHECK("recv MSG_PEEK", recv(pair[1], buffer, sizeof buffer, MSG_PEEK));
    CHECK("read after peek", read(pair[1], buffer, sizeof buffer));
    EXPECT("bytes arrive in order", memcmp(buffer, "ping", 4) == 0);
    CHECK("recv", recv(pair[0], buffer, sizeof buffer, 0));
    EXPECT("both ways", memcmp(buffer, "pong!", 5) == 0);
    CHECK("recv MSG_DONTWAIT on empty", recv(pair[0], buffer, sizeof buffer, MSG_DONTWAIT));
    struct pollfd entry = {.fd = pair[0], .events = POLLIN | POLLOUT};
    CHECK("poll: writable, not readable", poll(&entry, 1, 0));
    EXPECT("revents POLLOUT", entry.revents == POLLOUT);

    int type = 0;
    socklen_t length = sizeof type;
    CHECK("getsockopt SO_TYPE", getsockopt(pair[0], SOL_SOCKET, SO_TYPE, &type, &length));
    EXPECT("SO_TYPE is SOCK_STREAM", type == SOCK_STREAM && length == sizeof type);
    CHECK("getsockopt unknown level", getsockopt(pair[0], 12345, SO_TYPE, &type, &length));
    struct sockaddr_storage name;
    length = sizeof name;
    CHECK("getsockname", getsockname(pair[0], (struct sockaddr *)&name, &length));
    EXPECT("unnamed: family only", length == sizeof(sa_family_t) && name.ss_family == AF_UNIX);
    struct stat status;
    CHECK("fstat", fstat(pair[0], &status));
    EXPECT("S_ISSOCK", S_ISSOCK(status.st_mode));

    struct iovec parts[2] = {{.iov_base = "ab", .iov_len = 2}, {.iov_base = "cde", .iov_len = 3}};
    struct msghdr message = {.msg_iov = parts, .msg_iovlen = 2};
    CHECK("sendmsg two iovecs", sendmsg(pair[0], &message, 0));
    char first[1], second[8] = {0};
    struct iovec into[2] = {{.iov_base = first, .iov_len = 1}, {.iov_base = second, .iov_len = sizeof second}};
    struct msghdr received = {.msg_iov = into, .msg_iovlen = 2};
    CHECK("recvmsg into two iovecs", recvmsg(pair[1], &received, 0));
    EXPECT("scattered in order", first[0] == 'a' && memcmp(second, "bcde", 4) == 0);

    CHECK("shutdown(SHUT_WR)", shutdown(pair[0], SHUT_WR));
    CHECK("peer reads end of file", read(pair[1], buffer, sizeof buffer));
    CHECK("write after SHUT_WR (MSG_NOSIGNAL)", send(pair[0], "x", 1, MSG_NOSIGNAL));
    CHECK("the other way still works", write(pair[1], "y", 1));
    CHECK("read it", read(pair[0], buffer, 1));
    CHECK("shutdown bad how", shutdown(pair[0], 7));
    CHECK("close one end", close(pair[1]));
    signal(SIGPIPE, SIG_IGN);
    CHECK("write to a closed peer", write(pair[0], "z", 1));
    close(pair[0]);

    int pipe_ends[2];
    pipe(pipe_ends);
    CHECK("shutdown on a pipe", shutdown(pipe_ends[0], SHUT_RD));
    CHECK("recv on a pipe", recv(pipe_ends[0], buffer, 1, 0));
    close(pipe_ends[0]);
    close(pipe_ends[1]);
    CHECK("socketpair(AF_INET)", socketpair(AF_INET, SOCK_STREAM, 0, pair));
    CHECK("socketpair bad flags", socketpair(AF_UNIX, SOCK_STREAM | 0x100000, 0, pair));
    CHECK("socketpair bad protocol", socketpair(AF_UNIX, SOCK_STREAM, 7, pair));
    CHECK("socketpair nonblocking cloexec", socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pair));
    CHECK("nonblocking read", read(pair[0], buffer, 1));
    EXPECT("close-on-exec set", (fcntl(pair[1], F_GETFD) & FD_CLOEXEC) != 0);
    close(pair[0]);
    close(pair[1]);
}

static void event_counters(void) {
    int counter = eventfd(3, EFD_NONBLOCK);
    CHECK("eventfd(3)", counter >= 0);
    uint64_t value = 0;
    CHECK("read the count", read(counter, &value, sizeof value));
    EXPECT("count was 3", value == 3);
    CHECK("read at 0 (nonblocking)", read(counter, &value, sizeof value));
    value = 5;
    CHECK("write 5", write(counter, &value, sizeof value));
    value = 2;
    CHECK("write 2", write(counter, &value, sizeof value));
    CHECK("read with 4 bytes", read(counter, &value, 4));
    value = UINT64_MAX;
    CHECK("write UINT64_MAX", write(counter, &value, sizeof value));
    value = UINT64_MAX - 1;
    CHECK("write past the maximum (nonblocking)", write(counter, &value, sizeof value));
    struct pollfd entry = {.fd = counter, .events = POLLIN};
    CHECK("poll: readable", poll(&entry, 1, 0));
    CHECK("read the sum", read(counter, &value, sizeof value));
    EXPECT("sum is 7", value == 7);
    close(counter);

    int semaphore = eventfd(2, EFD_SEMAPHORE | EFD_NONBLOCK);
    CHECK("read semaphore", read(semaphore, &value, sizeof value));
    EXPECT("takes 1", value == 1);
    CHECK("read semaphore again", read(semaphore, &value, sizeof value));
    CHECK("read semaphore empty", read(semaphore, &value, sizeof value));
    close(semaphore);
    CHECK("eventfd bad flags", eventfd(0, 0x10));
}

static void epoll_instances(void) {
    int epoll = epoll_create1(EPOLL_CLOEXEC);
    CHECK("epoll_create1", epoll >= 0);
    CHECK("epoll_create1 bad flags", epoll_create1(1));
    CHECK("epoll_create(0)", epoll_create(0));
    int pipe_ends[2];
    pipe(pipe_ends);
    struct epoll_event event = {.events = EPOLLIN, .data.u64 = 0x1234567890ull};
    CHECK("add the pipe's read end", epoll_ctl(epoll, EPOLL_CTL_ADD, pipe_ends[0], &event));
    CHECK("add it again", epoll_ctl(epoll, EPOLL_CTL_ADD, pipe_ends[0], &event));
    CHECK("modify one not there", epoll_ctl(epoll, EPOLL_CTL_MOD, pipe_ends[1], &event));
    CHECK("delete one not there", epoll_ctl(epoll, EPOLL_CTL_DEL, pipe_ends[1], &event));
    CHECK("add itself", epoll_ctl(epoll, EPOLL_CTL_ADD, epoll, &event));
    CHECK("bad op", epoll_ctl(epoll, 99, pipe_ends[0], &event));
    CHECK("add a bad descriptor", epoll_ctl(epoll, EPOLL_CTL_ADD, 999, &event));
    CHECK("ctl on a non-epoll", epoll_ctl(pipe_ends[0], EPOLL_CTL_ADD, pipe_ends[1], &event));
    int file = open("/tmp/epoll-file", O_CREAT | O_RDWR, 0600);
    CHECK("add a regular file", epoll_ctl(epoll, EPOLL_CTL_ADD, file, &event));
    close(file);
    unlink("/tmp/epoll-file");
    struct epoll_event ready[4];
    CHECK("wait max 0", epoll_wait(epoll, ready, 0, 0));
    CHECK("wait on a non-epoll", epoll_wait(pipe_ends[0], ready, 4, 0));
    CHECK("nothing ready", epoll_wait(epoll, ready, 4, 0));
    write(pipe_ends[1], "a", 1);
    CHECK("one ready", epoll_wait(epoll, ready, 4, 0));
    EXPECT("EPOLLIN with its datum", ready[0].events == EPOLLIN && ready[0].data.u64 == 0x1234567890ull);
    CHECK("level-triggered: still ready", epoll_wait(epoll, ready, 4, 0));
    event.events = EPOLLIN | EPOLLONESHOT;
    event.data.u32 = 7;
    CHECK("modify to one-shot", epoll_ctl(epoll, EPOLL_CTL_MOD, pipe_ends[0], &event));
    CHECK("one-shot reports once", epoll_wait(epoll, ready, 4, 0));
    CHECK("then not again", epoll_wait(epoll, ready, 4, 0));
    CHECK("re-arm", epoll_ctl(epoll, EPOLL_CTL_MOD, pipe_ends[0], &event));
    CHECK("reports again", epoll_wait(epoll, ready, 4, 0));
    CHECK("delete", epoll_ctl(epoll, EPOLL_CTL_DEL, pipe_ends[0], NULL));
    CHECK("nothing after delete", epoll_wait(epoll, ready, 4, 0));
    char byte;
    read(pipe_ends[0], &byte, 1);

    /* A blocking wait that a child's write ends, on an eventfd and the pipe. */
    int counter = eventfd(0, 0);
    event.events = EPOLLIN;
    event.data.u32 = 1;
    epoll_ctl(epoll, EPOLL_CTL_ADD, counter, &event);
    event.data.u32 = 2;
    epoll_ctl(epoll, EPOLL_CTL_ADD, pipe_ends[0], &event);
    pid_t child = fork();
    if (child == 0) {
        usleep(50000);
        uint64_t one = 1;
        write(counter, &one, sizeof one);
        _exit(0);
    }
    CHECK("blocking wait ends with the child's write", epoll_wait(epoll, ready, 4, 5000));
    EXPECT("the eventfd's datum", ready[0].data.u32 == 1);
    waitpid(child, NULL, 0);
    CHECK("timeout with nothing ready (after reading it)", (read(counter, &(uint64_t){0}, 8), epoll_wait(epoll, ready, 4, 20)));

    /* Closing the only descriptor removes the entry. */
    close(pipe_ends[1]);
    CHECK("hang-up of a pipe with no writer", epoll_wait(epoll, ready, 4, 0));
    EXPECT("EPOLLIN|EPOLLHUP", (ready[0].events & EPOLLHUP) != 0);
    close(pipe_ends[0]);
    CHECK("closed descriptors leave the set", epoll_wait(epoll, ready, 4, 0));
    struct pollfd entry = {.fd = epoll, .events = POLLIN};
    CHECK("poll on the epoll descriptor", poll(&entry, 1, 0));
    close(counter);
    close(epoll);
}

static void positioned_vectors(void) {
    int file = open("/tmp/vectors", O_CREAT | O_RDWR | O_TRUNC, 0600);
    struct iovec parts[2] = {{.iov_base = "hello ", .iov_len = 6}, {.iov_base = "world", .iov_len = 5}};
    CHECK("pwritev at 3", pwritev(file, parts, 2, 3));
    CHECK("offset unchanged", lseek(file, 0, SEEK_CUR));
    char head[4] = {0}, tail[8] = {0};
    struct iovec into[2] = {{.iov_base = head, .iov_len = 3}, {.iov_base = tail, .iov_len = 8}};
    CHECK("preadv at 6", preadv(file, into, 2, 6));
    EXPECT("read back", memcmp(head, "lo ", 3) == 0 && memcmp(tail, "world", 5) == 0);
    CHECK("preadv negative offset", preadv(file, into, 2, -2));
    int pipe_ends[2];
    pipe(pipe_ends);
    CHECK("pwritev on a pipe", pwritev(pipe_ends[1], parts, 2, 0));
    close(pipe_ends[0]);
    close(pipe_ends[1]);
    close(file);
    unlink("/tmp/vectors");
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    socket_pairs();
    event_counters();
    epoll_instances();
    positioned_vectors();
    return 0;
}
