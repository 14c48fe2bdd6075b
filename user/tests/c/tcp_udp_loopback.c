/*
 * TCP and UDP over the loopback interface: names, bind conflicts and
 * SO_REUSEADDR, blocking and non-blocking connect (EINPROGRESS, then
 * POLLOUT and SO_ERROR), refusal, an echo, many connections to one
 * listener, half-close, a reset for data sent after the peer closed, a 4 MiB transfer between two processes checked
 * by a checksum, UDP with addresses, MSG_PEEK and MSG_TRUNC, connected
 * UDP. Output is identical on Lamina and Linux (no ephemeral port is
 * printed). The fixed ports are below 32768, outside both kernels'
 * ephemeral range, so an earlier client's port (perhaps in TIME_WAIT)
 * can never hold one of them: Linux picks ephemeral ports at random,
 * and 40130 once collided.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static struct sockaddr_in local(int port) {
    struct sockaddr_in address;
    memset(&address, 0, sizeof address);
    address.sin_family = AF_INET;
    address.sin_port = htons((uint16_t)port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return address;
}

#define AS_SOCKADDR(address) ((struct sockaddr *)&(address))

static int listener(int port, int backlog) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int on = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    struct sockaddr_in address = local(port);
    if (bind(fd, AS_SOCKADDR(address), sizeof address) < 0 || listen(fd, backlog) < 0) {
        printf("listener on %d: %s\n", port, errno_name(errno));
        return -1;
    }
    return fd;
}

static int connected(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in address = local(port);
    if (connect(fd, AS_SOCKADDR(address), sizeof address) < 0) {
        printf("connect to %d: %s\n", port, errno_name(errno));
        return -1;
    }
    return fd;
}

static void names(void) {
    printf("names and binding:\n");
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in name;
    socklen_t length = sizeof name;
    CHECK("  getsockname before bind", getsockname(fd, AS_SOCKADDR(name), &length));
    printf("  family %d address %s port %d length %d\n", name.sin_family, inet_ntoa(name.sin_addr), ntohs(name.sin_port), (int)length);
    struct sockaddr_in address = local(20100);
    CHECK("  bind 127.0.0.1:20100", bind(fd, AS_SOCKADDR(address), sizeof address));
    CHECK("  bind again", bind(fd, AS_SOCKADDR(address), sizeof address));
    length = sizeof name;
    getsockname(fd, AS_SOCKADDR(name), &length);
    printf("  bound to %s:%d\n", inet_ntoa(name.sin_addr), ntohs(name.sin_port));
    CHECK("  getpeername unconnected", getpeername(fd, AS_SOCKADDR(name), &length));
    int other = socket(AF_INET, SOCK_STREAM, 0);
    CHECK("  second bind of the port", bind(other, AS_SOCKADDR(address), sizeof address));
    struct sockaddr_in elsewhere = local(20101);
    elsewhere.sin_addr.s_addr = inet_addr("10.1.2.3");
    CHECK("  bind an address not ours", bind(other, AS_SOCKADDR(elsewhere), sizeof elsewhere));
    CHECK("  bind a short address", bind(other, AS_SOCKADDR(address), sizeof address - 1));
    CHECK("  listen", listen(fd, 4));
    int on = 1;
    CHECK("  SO_REUSEADDR on a new socket", setsockopt(other, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on));
    CHECK("  bind beside a listener with SO_REUSEADDR", bind(other, AS_SOCKADDR(address), sizeof address));
    int value = -1;
    socklen_t value_length = sizeof value;
    CHECK("  SO_ACCEPTCONN", getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &value, &value_length));
    printf("  listening: %d\n", value);
    getsockopt(fd, SOL_SOCKET, SO_TYPE, &value, &value_length);
    printf("  SO_TYPE %d\n", value);
    close(fd);
    close(other);
    int again = socket(AF_INET, SOCK_STREAM, 0);
    CHECK("  bind after the listener closed", bind(again, AS_SOCKADDR(address), sizeof address));
    close(again);
}

static void echo(void) {
    printf("echo:\n");
    int server = listener(20110, 8);
    int client = connected(20110);
    struct sockaddr_in peer;
    socklen_t length = sizeof peer;
    int accepted = accept(server, AS_SOCKADDR(peer), &length);
    EXPECT("  accepted", accepted >= 0);
    printf("  peer %s, length %d\n", inet_ntoa(peer.sin_addr), (int)length);
    struct sockaddr_in client_name;
    socklen_t client_length = sizeof client_name;
    getsockname(client, AS_SOCKADDR(client_name), &client_length);
    EXPECT("  the peer's port is the client's", client_name.sin_port == peer.sin_port);
    struct sockaddr_in server_side;
    socklen_t server_length = sizeof server_side;
    getsockname(accepted, AS_SOCKADDR(server_side), &server_length);
    printf("  accepted socket's name %s:%d\n", inet_ntoa(server_side.sin_addr), ntohs(server_side.sin_port));
    int on = 1;
    CHECK("  TCP_NODELAY", setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on));
    CHECK("  send hello", send(client, "hello", 5, 0));
    char buffer[64] = {0};
    CHECK("  recv MSG_PEEK", recv(accepted, buffer, sizeof buffer, MSG_PEEK));
    CHECK("  recv", recv(accepted, buffer, sizeof buffer, 0));
    printf("  got '%s'\n", buffer);
    CHECK("  recv MSG_DONTWAIT with nothing", recv(accepted, buffer, sizeof buffer, MSG_DONTWAIT));
    CHECK("  write back", write(accepted, buffer, 5));
    memset(buffer, 0, sizeof buffer);
    CHECK("  read", read(client, buffer, sizeof buffer));
    printf("  got '%s'\n", buffer);
    CHECK("  connect again", connect(client, AS_SOCKADDR(peer), sizeof peer));
    printf("half-close:\n");
    CHECK("  shutdown(SHUT_WR)", shutdown(client, SHUT_WR));
    CHECK("  server reads end of file", read(accepted, buffer, sizeof buffer));
    struct pollfd poll_server = {accepted, POLLIN, 0};
    poll(&poll_server, 1, 1000);
    EXPECT("  POLLIN at end of file", poll_server.revents & POLLIN);
    CHECK("  client sends after SHUT_WR", send(client, "x", 1, MSG_NOSIGNAL));
    CHECK("  server still sends", send(accepted, "bye", 3, 0));
    memset(buffer, 0, sizeof buffer);
    CHECK("  client reads", read(client, buffer, sizeof buffer));
    close(accepted);
    CHECK("  client reads end of file", read(client, buffer, sizeof buffer));
    close(client);
    close(server);
}

static void refusals(void) {
    printf("refusal and non-blocking connect:\n");
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in nobody = local(20120);
    CHECK("  connect to a port nobody listens on", connect(fd, AS_SOCKADDR(nobody), sizeof nobody));
    close(fd);
    fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    CHECK("  non-blocking connect, nobody listening", connect(fd, AS_SOCKADDR(nobody), sizeof nobody));
    struct pollfd waiting = {fd, POLLOUT, 0};
    CHECK("  poll", poll(&waiting, 1, 2000));
    EXPECT("  POLLOUT", waiting.revents & POLLOUT);
    int error = -1;
    socklen_t length = sizeof error;
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
    printf("  SO_ERROR %s\n", errno_name(error));
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
    printf("  SO_ERROR again %s\n", errno_name(error));
    close(fd);
    int server = listener(20121, 4);
    fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    struct sockaddr_in there = local(20121);
    CHECK("  non-blocking connect to a listener", connect(fd, AS_SOCKADDR(there), sizeof there));
    waiting.fd = fd;
    waiting.revents = 0;
    CHECK("  poll", poll(&waiting, 1, 2000));
    EXPECT("  POLLOUT", waiting.revents & POLLOUT);
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
    printf("  SO_ERROR %s\n", errno_name(error));
    CHECK("  accept4 SOCK_NONBLOCK", accept4(server, NULL, NULL, SOCK_NONBLOCK) >= 0);
    CHECK("  accept with none waiting (non-blocking listener)", (fcntl(server, F_SETFL, O_NONBLOCK), accept(server, NULL, NULL)));
    char buffer[8];
    CHECK("  recv on an unconnected socket", recv(socket(AF_INET, SOCK_STREAM, 0), buffer, sizeof buffer, 0));
    close(fd);
    close(server);
}

/* Data sent to a peer that closed (all it had was read) is answered with
 * a reset: the first send after the peer's FIN goes out, the next one
 * learns EPIPE (the reset came in CLOSE-WAIT), and reading still says
 * end of file. */
static void sent_after_close(void) {
    printf("sending after the peer closed:\n");
    int server = listener(20125, 1);
    int client = connected(20125);
    int accepted = accept(server, NULL, NULL);
    char buffer[8];
    CHECK("  send", send(client, "a", 1, 0));
    CHECK("  the peer reads it", recv(accepted, buffer, sizeof buffer, 0));
    close(accepted);
    CHECK("  end of file", recv(client, buffer, sizeof buffer, 0));
    CHECK("  send after the peer's close", send(client, "more", 4, MSG_NOSIGNAL));
    usleep(200000);
    CHECK("  send again (the reset came)", send(client, "more", 4, MSG_NOSIGNAL));
    CHECK("  recv after the reset", recv(client, buffer, sizeof buffer, 0));
    close(client);
    close(server);
}

static void many(void) {
    printf("many connections:\n");
    enum { COUNT = 20 };
    int server = listener(20130, COUNT);
    int clients[COUNT], accepted[COUNT];
    for (int index = 0; index < COUNT; index++)
        clients[index] = connected(20130);
    int good = 0;
    for (int index = 0; index < COUNT; index++) {
        accepted[index] = accept(server, NULL, NULL);
        good += accepted[index] >= 0;
    }
    printf("  accepted %d of %d\n", good, COUNT);
    int answered = 0;
    for (int index = 0; index < COUNT; index++) {
        char message[16], reply[16] = {0};
        int length = snprintf(message, sizeof message, "n%d", index);
        send(clients[index], message, (size_t)length, 0);
        // Each accepted socket echoes what it got.
        for (int other = 0; other < COUNT; other++) {
            char got[16];
            ssize_t count = recv(accepted[other], got, sizeof got, MSG_DONTWAIT);
            if (count > 0)
                send(accepted[other], got, (size_t)count, 0);
        }
        recv(clients[index], reply, sizeof reply, 0);
        answered += strcmp(reply, message) == 0;
    }
    printf("  echoed %d of %d\n", answered, COUNT);
    for (int index = 0; index < COUNT; index++) {
        close(clients[index]);
        close(accepted[index]);
    }
    close(server);
}

static uint32_t mix(uint32_t sum, unsigned char byte) {
    return (sum ^ byte) * 16777619u;
}

static void bulk(void) {
    printf("4 MiB between two processes:\n");
    enum { TOTAL = 4 << 20 };
    int server = listener(20140, 1);
    pid_t child = fork();
    if (child == 0) {
        int fd = connected(20140);
        static unsigned char chunk[65536];
        uint32_t sum = 2166136261u;
        for (int sent = 0; sent < TOTAL; sent += (int)sizeof chunk) {
            for (size_t index = 0; index < sizeof chunk; index++) {
                chunk[index] = (unsigned char)((sent + (int)index) * 7 + ((sent + (int)index) >> 12));
                sum = mix(sum, chunk[index]);
            }
            if (write(fd, chunk, sizeof chunk) != (ssize_t)sizeof chunk)
                _exit(2);
        }
        close(fd);
        printf("  sender's checksum %08x\n", sum);
        _exit(0);
    }
    int fd = accept(server, NULL, NULL);
    static unsigned char buffer[100000];
    uint32_t sum = 2166136261u;
    long total = 0;
    for (;;) {
        ssize_t count = read(fd, buffer, sizeof buffer);
        if (count <= 0)
            break;
        for (ssize_t index = 0; index < count; index++)
            sum = mix(sum, buffer[index]);
        total += count;
    }
    int status;
    waitpid(child, &status, 0);
    printf("  received %ld bytes, checksum %08x, sender exit %d\n", total, sum, WEXITSTATUS(status));
    close(fd);
    close(server);
}

static void udp(void) {
    printf("udp:\n");
    int server = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in address = local(20150);
    CHECK("  bind", bind(server, AS_SOCKADDR(address), sizeof address));
    int client = socket(AF_INET, SOCK_DGRAM, 0);
    CHECK("  send without an address", send(client, "x", 1, 0));
    CHECK("  sendto", sendto(client, "datagram", 8, 0, AS_SOCKADDR(address), sizeof address));
    CHECK("  sendto", sendto(client, "second", 6, 0, AS_SOCKADDR(address), sizeof address));
    char buffer[64] = {0};
    struct sockaddr_in from;
    socklen_t length = sizeof from;
    CHECK("  recvfrom MSG_PEEK", recvfrom(server, buffer, sizeof buffer, MSG_PEEK, AS_SOCKADDR(from), &length));
    CHECK("  recv 4 bytes MSG_TRUNC", recv(server, buffer, 4, MSG_TRUNC));
    length = sizeof from;
    memset(buffer, 0, sizeof buffer);
    CHECK("  recvfrom", recvfrom(server, buffer, sizeof buffer, 0, AS_SOCKADDR(from), &length));
    printf("  got '%s' from %s, length %d\n", buffer, inet_ntoa(from.sin_addr), (int)length);
    struct sockaddr_in client_name;
    socklen_t client_length = sizeof client_name;
    getsockname(client, AS_SOCKADDR(client_name), &client_length);
    EXPECT("  from the client's port", client_name.sin_port == from.sin_port);
    CHECK("  recv with nothing (MSG_DONTWAIT)", recv(server, buffer, sizeof buffer, MSG_DONTWAIT));
    CHECK("  connect the client", connect(client, AS_SOCKADDR(address), sizeof address));
    CHECK("  send connected", send(client, "third", 5, 0));
    struct iovec parts[2] = {{buffer, 2}, {buffer + 10, 10}};
    struct msghdr message = {.msg_name = &from, .msg_namelen = sizeof from, .msg_iov = parts, .msg_iovlen = 2};
    CHECK("  recvmsg into two parts", recvmsg(server, &message, 0));
    printf("  parts '%.2s' '%.3s', name length %d, flags %d\n", buffer, buffer + 10, (int)message.msg_namelen, message.msg_flags);
    struct pollfd readable = {server, POLLIN, 0};
    CHECK("  poll with nothing queued", poll(&readable, 1, 0));
    close(client);
    close(server);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    names();
    echo();
    refusals();
    sent_after_close();
    many();
    bulk();
    udp();
    return 0;
}
