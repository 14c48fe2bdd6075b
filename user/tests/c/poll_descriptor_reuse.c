/*
 * poll and select look descriptors up again on every call: a descriptor
 * closed since the last call is POLLNVAL (select: EBADF), and a number
 * reused for another file reports that file, never the one it named
 * before — whatever a kernel keeps between calls to make look-ups cheap.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <unistd.h>

#include "check.h"

static short revents_of(int fd, short events) {
    struct pollfd entry = {.fd = fd, .events = events};
    int ready = poll(&entry, 1, 0);
    return ready < 0 ? -1 : entry.revents;
}

int main(void) {
    int first[2], second[2];
    if (pipe(first) != 0 || pipe(second) != 0)
        return 1;
    if (write(first[1], "x", 1) != 1)
        return 1;
    /* The same call again and again: what is kept must stay right. */
    for (int round = 0; round < 3; round++)
        printf("round %d: read end with data: revents %#x\n", round, revents_of(first[0], POLLIN | POLLOUT));
    int number = first[0];
    close(first[0]);
    printf("closed: revents %#x\n", revents_of(number, POLLIN));
    /* The number now names the other pipe's empty write end. */
    CHECK("dup2 onto the closed number", dup2(second[1], number));
    printf("reused for a write end: revents %#x\n", revents_of(number, POLLIN | POLLOUT));
    /* And then an empty read end. */
    CHECK("dup2 again", dup2(second[0], number));
    printf("reused for an empty read end: revents %#x\n", revents_of(number, POLLIN | POLLOUT));
    if (write(second[1], "y", 1) != 1)
        return 1;
    printf("that read end with data: revents %#x\n", revents_of(number, POLLIN | POLLOUT));

    /* epoll reports the pending error too. */
    int instance = epoll_create1(0);
    struct epoll_event watch = {.events = EPOLLOUT, .data.u32 = 7}, got = {0};
    CHECK("epoll_ctl a write end with no reader", epoll_ctl(instance, EPOLL_CTL_ADD, first[1], &watch));
    int count = epoll_wait(instance, &got, 1, 0);
    printf("epoll_wait: %d events %#x data %u\n", count, count > 0 ? got.events : 0, count > 0 ? got.data.u32 : 0);
    close(instance);

    /* select: the same sequence through its own look-ups. */
    fd_set readable;
    struct timeval zero = {0, 0};
    FD_ZERO(&readable);
    FD_SET(number, &readable);
    printf("select, read end with data: %d\n", select(number + 1, &readable, NULL, NULL, &zero));
    close(number);
    FD_ZERO(&readable);
    FD_SET(number, &readable);
    int selected = select(number + 1, &readable, NULL, NULL, &zero);
    printf("select, closed: %d %s\n", selected, selected < 0 ? errno_name(errno) : "");
    CHECK("dup2 a write end there", dup2(first[1], number));
    /* Its pipe's read end is closed: writable, and an error. */
    printf("poll, write end with no reader: revents %#x\n", revents_of(number, POLLIN | POLLOUT));
    fd_set writable;
    FD_ZERO(&readable);
    FD_ZERO(&writable);
    FD_SET(number, &readable);
    FD_SET(number, &writable);
    selected = select(number + 1, &readable, &writable, NULL, &zero);
    printf("select, reused for a write end: %d readable %d writable %d\n", selected, FD_ISSET(number, &readable) != 0, FD_ISSET(number, &writable) != 0);
    return 0;
}
