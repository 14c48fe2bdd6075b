/*
 * The guest half of xtask's bad-packet check: a UDP echo server on port 7
 * and a TCP echo server on port 80 (any address), served from one poll
 * loop, while the host sends malformed frames into the network card. The
 * host's probes (UDP datagrams, TCP connections) must keep being answered.
 * A UDP datagram "bye" is answered "bye" and ends the program with the
 * number of datagrams and connections it served on standard output.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MOST_CONNECTIONS 64

static int bound(int kind, int port) {
    int fd = socket(AF_INET, kind, 0);
    int on = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
    if (bind(fd, (struct sockaddr *)&address, sizeof address) < 0 || (kind == SOCK_STREAM && listen(fd, 16) < 0)) {
        perror("bind/listen");
        return -1;
    }
    fcntl(fd, F_SETFL, O_NONBLOCK);
    return fd;
}

int main(void) {
    int udp = bound(SOCK_DGRAM, 7);
    int tcp = bound(SOCK_STREAM, 80);
    if (udp < 0 || tcp < 0) {
        return 1;
    }
    printf("serving\n");
    fflush(stdout);
    struct pollfd watched[2 + MOST_CONNECTIONS];
    int connections = 0;
    long datagrams = 0, accepted = 0;
    static char buffer[65536];
    for (;;) {
        watched[0] = (struct pollfd){.fd = udp, .events = POLLIN};
        watched[1] = (struct pollfd){.fd = tcp, .events = POLLIN};
        if (poll(watched, (nfds_t)(2 + connections), -1) < 0) {
            perror("poll");
            return 1;
        }
        if (watched[0].revents & POLLIN) {
            struct sockaddr_in from;
            socklen_t length = sizeof from;
            ssize_t count = recvfrom(udp, buffer, sizeof buffer, 0, (struct sockaddr *)&from, &length);
            if (count >= 0) {
                datagrams++;
                sendto(udp, buffer, (size_t)count, 0, (struct sockaddr *)&from, length);
                if (count == 3 && memcmp(buffer, "bye", 3) == 0) {
                    printf("served %ld datagrams and %ld connections\n", datagrams, accepted);
                    return 0;
                }
            }
        }
        if (watched[1].revents & POLLIN) {
            int fd = accept(tcp, NULL, NULL);
            if (fd >= 0 && connections < MOST_CONNECTIONS) {
                fcntl(fd, F_SETFL, O_NONBLOCK);
                watched[2 + connections++] = (struct pollfd){.fd = fd, .events = POLLIN};
                accepted++;
            } else if (fd >= 0) {
                close(fd);
            }
        }
        for (int index = 0; index < connections; index++) {
            struct pollfd *entry = &watched[2 + index];
            if (entry->revents == 0) {
                continue;
            }
            ssize_t count = read(entry->fd, buffer, sizeof buffer);
            if (count > 0) {
                write(entry->fd, buffer, (size_t)count);
                continue;
            }
            if (count < 0 && (entry->revents & (POLLHUP | POLLERR)) == 0) {
                continue;
            }
            close(entry->fd);
            watched[2 + index] = watched[2 + --connections];
            index--;
        }
    }
}
