/*
 * UDP-Lite sockets (RFC 3828) over the loopback, IPv4 and IPv6: they are
 * datagram sockets of protocol 136 (SO_TYPE, SO_PROTOCOL), their ports are
 * apart from UDP's (one port bound by a socket of each; a UDP datagram
 * never reaches a UDP-Lite socket), datagrams arrive whole with their
 * sender, and a connected UDP-Lite socket sending to a port only UDP
 * holds hears ECONNREFUSED. Ports below 32768 (Linux's ephemeral range).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"

#ifndef IPPROTO_UDPLITE
#define IPPROTO_UDPLITE 136
#endif

static socklen_t loopback(int family, int port, struct sockaddr_storage *address) {
    memset(address, 0, sizeof *address);
    if (family == AF_INET) {
        struct sockaddr_in *v4 = (struct sockaddr_in *)address;
        v4->sin_family = AF_INET;
        v4->sin_port = htons(port);
        v4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        return sizeof *v4;
    }
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)address;
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    v6->sin6_addr = in6addr_loopback;
    return sizeof *v6;
}

static int port_of(int fd) {
    struct sockaddr_storage name;
    socklen_t length = sizeof name;
    getsockname(fd, (struct sockaddr *)&name, &length);
    return ntohs(name.ss_family == AF_INET ? ((struct sockaddr_in *)&name)->sin_port : ((struct sockaddr_in6 *)&name)->sin6_port);
}

static int option(int fd, int name) {
    int value = -1;
    socklen_t length = sizeof value;
    getsockopt(fd, SOL_SOCKET, name, &value, &length);
    return value;
}

static void family_checks(int family, int port) {
    printf("-- %s\n", family == AF_INET ? "IPv4" : "IPv6");
    struct sockaddr_storage server_address;
    socklen_t length = loopback(family, port, &server_address);
    int lite_server = socket(family, SOCK_DGRAM, IPPROTO_UDPLITE);
    int lite_client = socket(family, SOCK_DGRAM, IPPROTO_UDPLITE);
    int udp_server = socket(family, SOCK_DGRAM, IPPROTO_UDP);
    int udp_client = socket(family, SOCK_DGRAM, 0);
    printf("sockets: %s\n", lite_server >= 0 && lite_client >= 0 && udp_server >= 0 && udp_client >= 0 ? "made" : "refused");
    printf("SO_TYPE %d, SO_PROTOCOL %d (UDP's: %d)\n", option(lite_server, SO_TYPE) == SOCK_DGRAM, option(lite_server, SO_PROTOCOL), option(udp_server, SO_PROTOCOL));
    CHECK("bind UDP-Lite", bind(lite_server, (struct sockaddr *)&server_address, length));
    CHECK("bind UDP to the same port", bind(udp_server, (struct sockaddr *)&server_address, length));
    int again = socket(family, SOCK_DGRAM, IPPROTO_UDPLITE);
    CHECK("bind another UDP-Lite socket there", bind(again, (struct sockaddr *)&server_address, length));
    close(again);
    CHECK("UDP-Lite sendto", sendto(lite_client, "lite", 4, 0, (struct sockaddr *)&server_address, length));
    CHECK("UDP sendto", sendto(udp_client, "plain udp", 9, 0, (struct sockaddr *)&server_address, length));
    struct pollfd entry = {.fd = lite_server, .events = POLLIN};
    printf("poll: %s\n", poll(&entry, 1, 5000) == 1 ? "ready" : "timed out");
    char buffer[32] = {0};
    struct sockaddr_storage from;
    socklen_t from_length = sizeof from;
    CHECK("UDP-Lite recvfrom", recvfrom(lite_server, buffer, sizeof buffer, 0, (struct sockaddr *)&from, &from_length));
    int from_port = ntohs(from.ss_family == AF_INET ? ((struct sockaddr_in *)&from)->sin_port : ((struct sockaddr_in6 *)&from)->sin6_port);
    printf("  got \"%s\" from the client's port: %s\n", buffer, from_port == port_of(lite_client) ? "yes" : "no");
    CHECK("UDP-Lite recv again (UDP's datagram is not for it)", recv(lite_server, buffer, sizeof buffer, MSG_DONTWAIT));
    memset(buffer, 0, sizeof buffer);
    entry.fd = udp_server;
    poll(&entry, 1, 5000);
    CHECK("UDP recv", recv(udp_server, buffer, sizeof buffer, MSG_DONTWAIT));
    printf("  got \"%s\"\n", buffer);

    /* A port only UDP holds refuses UDP-Lite. */
    struct sockaddr_storage udp_only;
    socklen_t udp_only_length = loopback(family, port + 1, &udp_only);
    int holder = socket(family, SOCK_DGRAM, 0);
    CHECK("bind UDP to the next port", bind(holder, (struct sockaddr *)&udp_only, udp_only_length));
    int connected = socket(family, SOCK_DGRAM, IPPROTO_UDPLITE);
    CHECK("connect UDP-Lite to it", connect(connected, (struct sockaddr *)&udp_only, udp_only_length));
    CHECK("send", send(connected, "x", 1, 0));
    entry.fd = connected;
    printf("poll: %s\n", poll(&entry, 1, 5000) == 1 ? "ready" : "timed out");
    CHECK("recv", recv(connected, buffer, sizeof buffer, MSG_DONTWAIT));
    CHECK("UDP's holder recv", recv(holder, buffer, sizeof buffer, MSG_DONTWAIT));
    close(lite_server), close(lite_client), close(udp_server), close(udp_client), close(holder), close(connected);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    family_checks(AF_INET, 20100);
    family_checks(AF_INET6, 20110);
    CHECK("a stream socket of protocol UDP-Lite", socket(AF_INET, SOCK_STREAM, IPPROTO_UDPLITE));
    return 0;
}
