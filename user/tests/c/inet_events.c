/*
 * Readiness of Internet sockets and IPv6 on the loopback: epoll level-
 * and edge-triggered and EPOLLONESHOT over TCP, a listener's EPOLLIN for a
 * waiting connection, EPOLLOUT, poll and select, end of file seen by
 * epoll; TCP over ::1, a dual-stack listener taking an IPv4 connection
 * (its peer an IPv4-mapped address) and IPV6_V6ONLY refusing one; UDP over
 * ::1. Output is identical on Lamina and Linux. Fixed ports are below
 * 32768, outside the ephemeral range, so no earlier client holds one.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"

static int listen_v4(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0), on = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&address, sizeof address) || listen(fd, 8))
        printf("listen %d: %s\n", port, errno_name(errno));
    return fd;
}

static int connect_v4(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&address, sizeof address))
        printf("connect %d: %s\n", port, errno_name(errno));
    return fd;
}

/* Waits up to `ms` and prints which of IN, OUT, HUP the one event has. */
static void show_events(const char *label, int epoll, int ms) {
    struct epoll_event event = {0};
    int count = epoll_wait(epoll, &event, 1, ms);
    if (count <= 0) {
        printf("%s: no event\n", label);
        return;
    }
    printf("%s: %s%s%s\n", label, event.events & EPOLLIN ? "IN " : "", event.events & EPOLLOUT ? "OUT " : "", event.events & EPOLLHUP ? "HUP" : "");
}

static void epoll_over_tcp(void) {
    printf("epoll over TCP:\n");
    int listener = listen_v4(22001);
    int epoll = epoll_create1(0);
    struct epoll_event watch = {.events = EPOLLIN, .data.fd = listener};
    epoll_ctl(epoll, EPOLL_CTL_ADD, listener, &watch);
    show_events("  listener, nobody connecting", epoll, 0);
    int client = connect_v4(22001);
    show_events("  listener, a connection waiting", epoll, 1000);
    int server = accept(listener, NULL, NULL);
    show_events("  listener after accept", epoll, 0);
    epoll_ctl(epoll, EPOLL_CTL_DEL, listener, NULL);

    watch.events = EPOLLIN;
    watch.data.fd = server;
    epoll_ctl(epoll, EPOLL_CTL_ADD, server, &watch);
    show_events("  level: nothing sent", epoll, 0);
    write(client, "abc", 3);
    show_events("  level: 3 bytes", epoll, 1000);
    show_events("  level: still there", epoll, 0);
    char buffer[16];
    read(server, buffer, sizeof buffer);
    show_events("  level: read", epoll, 0);

    watch.events = EPOLLIN | EPOLLET;
    epoll_ctl(epoll, EPOLL_CTL_MOD, server, &watch);
    write(client, "de", 2);
    show_events("  edge: 2 bytes", epoll, 1000);
    show_events("  edge: no new bytes", epoll, 0);
    write(client, "f", 1);
    show_events("  edge: 1 more byte", epoll, 1000);
    CHECK("  read both", read(server, buffer, sizeof buffer));

    watch.events = EPOLLIN | EPOLLONESHOT;
    epoll_ctl(epoll, EPOLL_CTL_MOD, server, &watch);
    write(client, "g", 1);
    show_events("  oneshot: 1 byte", epoll, 1000);
    write(client, "h", 1);
    show_events("  oneshot: disarmed", epoll, 100);
    epoll_ctl(epoll, EPOLL_CTL_MOD, server, &watch);
    show_events("  oneshot: rearmed", epoll, 1000);
    read(server, buffer, sizeof buffer);

    watch.events = EPOLLOUT;
    epoll_ctl(epoll, EPOLL_CTL_MOD, server, &watch);
    show_events("  EPOLLOUT on a connected socket", epoll, 0);
    watch.events = EPOLLIN;
    epoll_ctl(epoll, EPOLL_CTL_MOD, server, &watch);
    close(client);
    show_events("  peer closed", epoll, 1000);
    CHECK("  read at end of file", read(server, buffer, sizeof buffer));

    struct pollfd one = {server, POLLIN, 0};
    CHECK("  poll at end of file", poll(&one, 1, 0));
    EXPECT("  POLLIN", one.revents & POLLIN);
    fd_set readable;
    FD_ZERO(&readable);
    FD_SET(server, &readable);
    struct timeval none = {0, 0};
    CHECK("  select at end of file", select(server + 1, &readable, NULL, NULL, &none));
    close(server);
    close(listener);
    close(epoll);
}

static void show_v6(const char *label, struct sockaddr_in6 *address) {
    char text[64];
    inet_ntop(AF_INET6, &address->sin6_addr, text, sizeof text);
    printf("%s: family %d address %s\n", label, address->sin6_family, text);
}

static void ipv6(void) {
    printf("IPv6 on the loopback:\n");
    int listener = socket(AF_INET6, SOCK_STREAM, 0), off = 0, on = 1;
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    CHECK("  IPV6_V6ONLY off", setsockopt(listener, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off));
    struct sockaddr_in6 any = {.sin6_family = AF_INET6, .sin6_port = htons(22002), .sin6_addr = in6addr_any};
    CHECK("  bind [::]:22002", bind(listener, (struct sockaddr *)&any, sizeof any));
    CHECK("  listen", listen(listener, 8));

    int client6 = socket(AF_INET6, SOCK_STREAM, 0);
    struct sockaddr_in6 loopback = {.sin6_family = AF_INET6, .sin6_port = htons(22002), .sin6_addr = in6addr_loopback};
    CHECK("  connect [::1]:22002", connect(client6, (struct sockaddr *)&loopback, sizeof loopback));
    struct sockaddr_in6 peer;
    socklen_t length = sizeof peer;
    int server6 = accept(listener, (struct sockaddr *)&peer, &length);
    show_v6("  accepted an IPv6 peer", &peer);
    printf("  address length %d\n", (int)length);
    CHECK("  send over ::1", send(client6, "six", 3, 0));
    char buffer[8] = {0};
    CHECK("  recv over ::1", recv(server6, buffer, sizeof buffer, 0));
    printf("  got '%s'\n", buffer);
    struct sockaddr_in6 name;
    length = sizeof name;
    getsockname(server6, (struct sockaddr *)&name, &length);
    show_v6("  the accepted socket's name", &name);

    int client4 = connect_v4(22002);
    length = sizeof peer;
    int server4 = accept(listener, (struct sockaddr *)&peer, &length);
    EXPECT("  a dual-stack listener takes IPv4", server4 >= 0);
    show_v6("  its peer", &peer);
    CHECK("  send over IPv4", send(client4, "four", 4, 0));
    memset(buffer, 0, sizeof buffer);
    CHECK("  recv on the IPv6 socket", recv(server4, buffer, sizeof buffer, 0));
    close(client4);
    close(server4);
    close(client6);
    close(server6);
    close(listener);

    int only6 = socket(AF_INET6, SOCK_STREAM, 0);
    setsockopt(only6, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    CHECK("  IPV6_V6ONLY on", setsockopt(only6, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on));
    int value = -1;
    length = sizeof value;
    getsockopt(only6, IPPROTO_IPV6, IPV6_V6ONLY, &value, &length);
    printf("  IPV6_V6ONLY reads %d\n", value);
    any.sin6_port = htons(22003);
    bind(only6, (struct sockaddr *)&any, sizeof any);
    listen(only6, 8);
    int refused = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in four = {.sin_family = AF_INET, .sin_port = htons(22003)};
    four.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK("  IPv4 to a v6-only listener", connect(refused, (struct sockaddr *)&four, sizeof four));
    close(refused);
    close(only6);

    int udp_server = socket(AF_INET6, SOCK_DGRAM, 0), udp_client = socket(AF_INET6, SOCK_DGRAM, 0);
    loopback.sin6_port = htons(22004);
    CHECK("  UDP bind [::1]:22004", bind(udp_server, (struct sockaddr *)&loopback, sizeof loopback));
    CHECK("  UDP sendto [::1]", sendto(udp_client, "dgram6", 6, 0, (struct sockaddr *)&loopback, sizeof loopback));
    length = sizeof peer;
    memset(buffer, 0, sizeof buffer);
    CHECK("  UDP recvfrom", recvfrom(udp_server, buffer, sizeof buffer, 0, (struct sockaddr *)&peer, &length));
    show_v6("  from", &peer);
    close(udp_client);
    close(udp_server);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    epoll_over_tcp();
    ipv6();
    return 0;
}
