/*
 * A profiling workload: two processes pass one byte back and forth over a
 * TCP connection on the loopback, ROUNDS times (default 200000), and the
 * parent prints the time per round trip. For `cargo xtask profile --smp 1
 * -- tcp_ping_pong 20000` (where the kernel's instructions go) and
 * `cargo xtask exec --icount --smp 1 [--linux] -- tcp_ping_pong 20000`
 * (how many there are, beside Linux). Not a test: it checks nothing.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
    long rounds = argc > 1 ? atol(argv[1]) : 200000;
    int listener = socket(AF_INET, SOCK_STREAM, 0), on = 1;
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons(7400), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (bind(listener, (struct sockaddr *)&address, sizeof address) < 0 || listen(listener, 1) < 0) {
        perror("bind/listen");
        return 1;
    }
    if (fork() == 0) {
        int client = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(client, (struct sockaddr *)&address, sizeof address) < 0) {
            perror("connect");
            _exit(1);
        }
        setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
        char byte = 'x';
        for (long round = 0; round < rounds; round++) {
            if (write(client, &byte, 1) != 1 || read(client, &byte, 1) != 1) {
                _exit(1);
            }
        }
        _exit(0);
    }
    int server = accept(listener, NULL, NULL);
    setsockopt(server, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    char byte;
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (long round = 0; round < rounds; round++) {
        if (read(server, &byte, 1) != 1 || write(server, &byte, 1) != 1) {
            break;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &end);
    wait(NULL);
    printf("%.0f ns per round trip\n", ((end.tv_sec - start.tv_sec) * 1e9 + (end.tv_nsec - start.tv_nsec)) / rounds);
    return 0;
}
