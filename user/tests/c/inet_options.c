/*
 * What servers ask of TCP sockets beyond send and receive: sendfile from a
 * file into a socket (with and without an offset pointer), SO_RCVTIMEO and
 * SO_SNDTIMEO ending a blocked call with EAGAIN, SO_LINGER with a zero
 * timeout closing by reset, and /proc/net/tcp, tcp6 and udp listing the
 * sockets (what netstat reads). Output is identical on Lamina and Linux
 * (times are printed only as "waited at least").
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

#define AS_SOCKADDR(address) ((struct sockaddr *)&(address))

static struct sockaddr_in local(int port) {
    struct sockaddr_in address;
    memset(&address, 0, sizeof address);
    address.sin_family = AF_INET;
    address.sin_port = htons((uint16_t)port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return address;
}

static int listener(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int on = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    struct sockaddr_in address = local(port);
    if (bind(fd, AS_SOCKADDR(address), sizeof address) < 0 || listen(fd, 8) < 0) {
        printf("listener on %d: %s\n", port, errno_name(errno));
        exit(1);
    }
    return fd;
}

/* A connected pair over the loopback: `*client` and the accepted `*server`. */
static void pair(int port, int *client, int *server) {
    int listening = listener(port);
    *client = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in address = local(port);
    if (connect(*client, AS_SOCKADDR(address), sizeof address) < 0) {
        printf("connect to %d: %s\n", port, errno_name(errno));
        exit(1);
    }
    *server = accept(listening, NULL, NULL);
    close(listening);
}

static long elapsed_ms(struct timespec since) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (now.tv_sec - since.tv_sec) * 1000 + (now.tv_nsec - since.tv_nsec) / 1000000;
}

static uint32_t pattern_byte(size_t at) { return (uint32_t)((at * 7 + at / 251) & 0xff); }

static void send_file(void) {
    printf("sendfile:\n");
    const size_t size = 300000;
    char path[] = "/tmp/inet_options_XXXXXX";
    int file = mkstemp(path);
    unlink(path);
    unsigned char *bytes = malloc(size);
    uint64_t expected = 0;
    for (size_t at = 0; at < size; at++) {
        bytes[at] = (unsigned char)pattern_byte(at);
    }
    for (size_t at = 1000; at < size; at++) {
        expected = expected * 31 + bytes[at];
    }
    CHECK("file written", write(file, bytes, size));
    lseek(file, 0, SEEK_SET);

    int client, server;
    pair(7301, &client, &server);
    pid_t child = fork();
    if (child == 0) {
        close(client);
        /* With an offset pointer: the file position stays where it is. */
        off_t offset = 1000;
        ssize_t first = sendfile(server, file, &offset, 100000);
        printf("first sendfile: %zd, offset now %ld, position %ld\n", first, (long)offset,
               (long)lseek(file, 0, SEEK_CUR));
        /* Without: from the file position, which moves. */
        lseek(file, offset, SEEK_SET);
        size_t left = size - (size_t)offset;
        while (left > 0) {
            ssize_t sent = sendfile(server, file, NULL, left);
            if (sent <= 0) {
                printf("sendfile: %s\n", errno_name(errno));
                _exit(1);
            }
            left -= (size_t)sent;
        }
        printf("position after: %ld\n", (long)lseek(file, 0, SEEK_CUR));
        CHECK("sendfile at end of file", sendfile(server, file, NULL, 10));
        _exit(0);
    }
    close(server);
    uint64_t sum = 0;
    size_t received = 0;
    char buffer[8192];
    ssize_t got;
    while ((got = read(client, buffer, sizeof buffer)) > 0) {
        for (ssize_t at = 0; at < got; at++) {
            sum = sum * 31 + (unsigned char)buffer[at];
        }
        received += (size_t)got;
    }
    int status;
    waitpid(child, &status, 0);
    printf("received %zu bytes, checksum %s\n", received, sum == expected ? "matches" : "differs");
    close(client);

    int pipes[2];
    pipe(pipes);
    CHECK("sendfile from a pipe", sendfile(pipes[1], pipes[0], NULL, 10));
    CHECK("sendfile from a bad descriptor", sendfile(pipes[1], 999, NULL, 10));
    CHECK("sendfile into a read-only descriptor", sendfile(pipes[0], file, NULL, 10));
    off_t negative = -1;
    CHECK("sendfile with a negative offset", sendfile(pipes[1], file, &negative, 10));
    close(pipes[0]);
    close(pipes[1]);
    close(file);
    free(bytes);
}

static void receive_timeout(void) {
    printf("SO_RCVTIMEO:\n");
    int client, server;
    pair(7302, &client, &server);
    struct timeval limit = {0, 150000};
    CHECK("set SO_RCVTIMEO", setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit));
    struct timeval read_back;
    socklen_t length = sizeof read_back;
    CHECK("get SO_RCVTIMEO", getsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &read_back, &length));
    /* Linux rounds up to its clock tick: 150 ms may read back as 152. */
    EXPECT("read back 150 to 160 ms", read_back.tv_sec == 0 && read_back.tv_usec >= 150000 && read_back.tv_usec < 160000);
    printf("length %u\n", length);
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    char byte;
    CHECK("recv with nothing to read", recv(client, &byte, 1, 0));
    EXPECT("waited at least 140 ms", elapsed_ms(start) >= 140);
    write(server, "x", 1);
    CHECK("recv with a byte waiting", recv(client, &byte, 1, 0));
    struct timeval bad = {0, 2000000};
    CHECK("SO_RCVTIMEO with tv_usec out of range", setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &bad, sizeof bad));
    CHECK("SO_RCVTIMEO too short", setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &limit, 4));

    int listening = listener(7303);
    CHECK("set SO_RCVTIMEO on a listener", setsockopt(listening, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit));
    clock_gettime(CLOCK_MONOTONIC, &start);
    CHECK("accept with nobody connecting", accept(listening, NULL, NULL));
    EXPECT("waited at least 140 ms", elapsed_ms(start) >= 140);
    close(listening);

    int datagram = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in address = local(7304);
    bind(datagram, AS_SOCKADDR(address), sizeof address);
    setsockopt(datagram, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    clock_gettime(CLOCK_MONOTONIC, &start);
    CHECK("recvfrom on UDP with nothing sent", recvfrom(datagram, &byte, 1, 0, NULL, NULL));
    EXPECT("waited at least 140 ms", elapsed_ms(start) >= 140);
    struct timeval zero = {0, 0};
    setsockopt(datagram, SOL_SOCKET, SO_RCVTIMEO, &zero, sizeof zero);
    length = sizeof read_back;
    getsockopt(datagram, SOL_SOCKET, SO_RCVTIMEO, &read_back, &length);
    printf("zero means forever: %ld s %ld us\n", (long)read_back.tv_sec, (long)read_back.tv_usec);
    close(datagram);
    close(client);
    close(server);
}

static void send_timeout(void) {
    printf("SO_SNDTIMEO:\n");
    int client, server;
    pair(7305, &client, &server);
    struct timeval limit = {0, 150000};
    CHECK("set SO_SNDTIMEO", setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit));
    /* Nobody reads `server`: the buffers fill, then a send waits and times out. */
    size_t size = 16 << 20;
    char *bytes = calloc(size, 1);
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    ssize_t sent = send(client, bytes, size, 0);
    EXPECT("a 16 MiB send stopped short", sent < (ssize_t)size);
    EXPECT("waited at least 140 ms", elapsed_ms(start) >= 140);
    /* Once full, a further send has nothing to show: EAGAIN. */
    while (send(client, bytes, 65536, MSG_DONTWAIT) > 0) {
    }
    CHECK("send into full buffers", send(client, bytes, 65536, 0));
    free(bytes);
    close(client);
    close(server);
}

static void linger_reset(void) {
    printf("SO_LINGER:\n");
    int client, server;
    pair(7306, &client, &server);
    struct linger option = {1, 0};
    CHECK("set SO_LINGER {1, 0}", setsockopt(client, SOL_SOCKET, SO_LINGER, &option, sizeof option));
    struct linger read_back;
    socklen_t length = sizeof read_back;
    CHECK("get SO_LINGER", getsockopt(client, SOL_SOCKET, SO_LINGER, &read_back, &length));
    printf("read back: onoff %d linger %d\n", read_back.l_onoff != 0, read_back.l_linger);
    write(client, "unread", 6);
    close(client);
    usleep(50000);
    char buffer[16];
    /* The bytes sent before the reset may or may not be read first (Linux
     * drops what is queued when the reset arrives): read until something
     * other than data. */
    ssize_t got;
    do {
        errno = 0;
        got = read(server, buffer, sizeof buffer);
    } while (got > 0);
    printf("read after the peer's reset: %zd %s\n", got, errno_name(errno));
    close(server);

    pair(7307, &client, &server);
    struct linger off = {0, 5};
    setsockopt(client, SOL_SOCKET, SO_LINGER, &off, sizeof off);
    write(client, "kept", 4);
    close(client);
    got = read(server, buffer, sizeof buffer);
    printf("linger off: read %zd, then %zd\n", got, read(server, buffer, sizeof buffer));
    close(server);
}

/* Finds a line of `path` whose local address is `local` and state `state`. */
static int listed(const char *path, const char *local, const char *state) {
    FILE *file = fopen(path, "r");
    if (file == NULL) {
        printf("open %s: %s\n", path, errno_name(errno));
        return 0;
    }
    char line[512];
    int found = 0;
    while (fgets(line, sizeof line, file) != NULL) {
        char address[64], remote[64], st[8];
        int slot;
        if (sscanf(line, " %d: %63s %63s %7s", &slot, address, remote, st) == 4 && strcmp(address, local) == 0 &&
            strcmp(st, state) == 0) {
            found = 1;
        }
    }
    fclose(file);
    return found;
}

static void proc_net(void) {
    printf("/proc/net:\n");
    FILE *file = fopen("/proc/net/tcp", "r");
    char header[256] = "";
    if (file != NULL) {
        fgets(header, sizeof header, file);
        fclose(file);
    }
    EXPECT("tcp header names the columns", strstr(header, "local_address rem_address   st tx_queue rx_queue") != NULL);
    int listening = listener(0x1C8B);
    EXPECT("a listener on 127.0.0.1:7307 in state 0A", listed("/proc/net/tcp", "0100007F:1C8B", "0A"));
    int client = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in address = local(0x1C8B);
    connect(client, AS_SOCKADDR(address), sizeof address);
    int server = accept(listening, NULL, NULL);
    EXPECT("the accepted connection in state 01", listed("/proc/net/tcp", "0100007F:1C8B", "01"));
    close(client);
    close(server);
    close(listening);

    int six = socket(AF_INET6, SOCK_STREAM, 0);
    struct sockaddr_in6 any6;
    memset(&any6, 0, sizeof any6);
    any6.sin6_family = AF_INET6;
    any6.sin6_port = htons(0x1C8C);
    any6.sin6_addr = in6addr_loopback;
    bind(six, AS_SOCKADDR(any6), sizeof any6);
    listen(six, 4);
    EXPECT("a listener on [::1]:7308 in tcp6",
           listed("/proc/net/tcp6", "00000000000000000000000001000000:1C8C", "0A"));
    close(six);

    int datagram = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in udp = local(0x1C8D);
    bind(datagram, AS_SOCKADDR(udp), sizeof udp);
    EXPECT("a bound UDP socket in state 07", listed("/proc/net/udp", "0100007F:1C8D", "07"));
    close(datagram);
    EXPECT("a closed listener is gone", !listed("/proc/net/tcp", "0100007F:1C8B", "0A"));
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    send_file();
    receive_timeout();
    send_timeout();
    linger_reset();
    proc_net();
    return 0;
}
