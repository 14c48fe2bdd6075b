/*
 * A connected UDP socket that sends over the loopback to a port nobody
 * has bound hears ECONNREFUSED (Linux learns it from the ICMP
 * port-unreachable it sends itself): once, from the next receive, send or
 * SO_ERROR; poll wakes at once. An unconnected sender hears nothing, and
 * a bound port refuses nothing. (A resolver asking 127.0.0.1:53 with no
 * server there so gives up at once instead of waiting out its timeout.)
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"

static struct sockaddr_in loopback(int port) {
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    return address;
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    int client = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in nobody = loopback(9);
    CHECK("connect to 127.0.0.1:9", connect(client, (struct sockaddr *)&nobody, sizeof nobody));
    char byte = 'q', back[8];
    CHECK("send", send(client, &byte, 1, 0) == 1 ? 0 : -1);
    struct pollfd entry = {.fd = client, .events = POLLIN};
    printf("poll: %s\n", poll(&entry, 1, 5000) == 1 ? "ready" : "timed out");
    CHECK("recv", recv(client, back, sizeof back, MSG_DONTWAIT));
    CHECK("recv again", recv(client, back, sizeof back, MSG_DONTWAIT));

    CHECK("send", send(client, &byte, 1, 0) == 1 ? 0 : -1);
    poll(&entry, 1, 5000);
    int error = -1;
    socklen_t length = sizeof error;
    getsockopt(client, SOL_SOCKET, SO_ERROR, &error, &length);
    printf("SO_ERROR: %s\n", errno_name(error));
    getsockopt(client, SOL_SOCKET, SO_ERROR, &error, &length);
    printf("SO_ERROR again: %s\n", errno_name(error));

    CHECK("send", send(client, &byte, 1, 0) == 1 ? 0 : -1);
    poll(&entry, 1, 5000);
    CHECK("send with the error waiting", send(client, &byte, 1, 0));
    CHECK("recv after it", recv(client, back, sizeof back, MSG_DONTWAIT));

    int unconnected = socket(AF_INET, SOCK_DGRAM, 0);
    CHECK("sendto from an unconnected socket", sendto(unconnected, &byte, 1, 0, (struct sockaddr *)&nobody, sizeof nobody) == 1 ? 0 : -1);
    usleep(100000);
    CHECK("  its recv", recv(unconnected, back, sizeof back, MSG_DONTWAIT));

    int server = socket(AF_INET, SOCK_DGRAM, 0);
    CHECK("bind a server to port 9", bind(server, (struct sockaddr *)&nobody, sizeof nobody));
    CHECK("send", send(client, &byte, 1, 0) == 1 ? 0 : -1);
    printf("server: %s\n", recv(server, back, sizeof back, 0) == 1 ? "got it" : "nothing");
    CHECK("client recv", recv(client, back, sizeof back, MSG_DONTWAIT));
    return 0;
}
