/*
 * The `net` benchmark group, run the same on Lamina and on Linux, inside
 * the guest over the loopback interface (it isolates the kernel: QEMU's
 * user network is not on the path):
 *
 *   net [REDIS_DIRECTORY]
 *
 * prints `bench NAME <nanoseconds>`: tcp_rtt and udp_rtt (a 1-byte ping-
 * pong between two processes, per round trip), tcp_connect (connect,
 * accept and close, per connection), tcp_bulk_64m (64 MiB from one process
 * to another, per run); with REDIS_DIRECTORY holding redis-server and
 * redis-benchmark: redis_{set,get}_p{1,16} (redis-benchmark's 50 clients,
 * per request: 1e9 / requests per second); with nginx and wrk there too:
 * nginx_4k and nginx_1m (wrk, one thread, 10 connections, 3 s, per
 * request).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ROUND_TRIPS 2000
#define CONNECTIONS 200
#define BULK_MIB 64

static uint64_t now_ns(void) {
    struct timespec at;
    clock_gettime(CLOCK_MONOTONIC, &at);
    return (uint64_t)at.tv_sec * 1000000000u + (uint64_t)at.tv_nsec;
}

static struct sockaddr_in loopback(int port) {
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return address;
}

static int tcp_listener(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0), on = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    struct sockaddr_in address = loopback(port);
    if (bind(fd, (struct sockaddr *)&address, sizeof address) || listen(fd, 64)) {
        perror("listener");
        exit(1);
    }
    return fd;
}

static int tcp_connect(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0), on = 1;
    struct sockaddr_in address = loopback(port);
    if (connect(fd, (struct sockaddr *)&address, sizeof address)) {
        perror("connect");
        exit(1);
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    return fd;
}

/* The child echoes each byte back; the parent times the round trips. */
static void tcp_rtt(void) {
    int listener = tcp_listener(41001);
    pid_t child = fork();
    if (child == 0) {
        int fd = tcp_connect(41001);
        char byte;
        while (read(fd, &byte, 1) == 1)
            write(fd, &byte, 1);
        _exit(0);
    }
    int fd = accept(listener, NULL, NULL), on = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    char byte = 'x';
    uint64_t start = now_ns();
    for (int trip = 0; trip < ROUND_TRIPS; trip++) {
        write(fd, &byte, 1);
        if (read(fd, &byte, 1) != 1) {
            printf("tcp_rtt: lost the child\n");
            exit(1);
        }
    }
    printf("bench tcp_rtt %llu\n", (unsigned long long)((now_ns() - start) / ROUND_TRIPS));
    close(fd);
    close(listener);
    waitpid(child, NULL, 0);
}

static void udp_rtt(void) {
    int server = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in address = loopback(41002);
    bind(server, (struct sockaddr *)&address, sizeof address);
    pid_t child = fork();
    if (child == 0) {
        char byte;
        struct sockaddr_in from;
        socklen_t length = sizeof from;
        for (int trip = 0; trip < ROUND_TRIPS; trip++) {
            recvfrom(server, &byte, 1, 0, (struct sockaddr *)&from, &length);
            sendto(server, &byte, 1, 0, (struct sockaddr *)&from, length);
        }
        _exit(0);
    }
    int client = socket(AF_INET, SOCK_DGRAM, 0);
    connect(client, (struct sockaddr *)&address, sizeof address);
    char byte = 'y';
    uint64_t start = now_ns();
    for (int trip = 0; trip < ROUND_TRIPS; trip++) {
        send(client, &byte, 1, 0);
        if (recv(client, &byte, 1, 0) != 1) {
            printf("udp_rtt: no answer\n");
            exit(1);
        }
    }
    printf("bench udp_rtt %llu\n", (unsigned long long)((now_ns() - start) / ROUND_TRIPS));
    close(client);
    close(server);
    waitpid(child, NULL, 0);
}

static void connections(void) {
    int listener = tcp_listener(41003);
    uint64_t start = now_ns();
    for (int index = 0; index < CONNECTIONS; index++) {
        int client = tcp_connect(41003);
        int server = accept(listener, NULL, NULL);
        close(client);
        close(server);
    }
    printf("bench tcp_connect %llu\n", (unsigned long long)((now_ns() - start) / CONNECTIONS));
    close(listener);
}

static void bulk(void) {
    int listener = tcp_listener(41004);
    pid_t child = fork();
    if (child == 0) {
        int fd = tcp_connect(41004);
        static char chunk[65536];
        memset(chunk, 'z', sizeof chunk);
        for (int sent = 0; sent < BULK_MIB * 16; sent++)
            if (write(fd, chunk, sizeof chunk) != (ssize_t)sizeof chunk)
                _exit(1);
        close(fd);
        _exit(0);
    }
    int fd = accept(listener, NULL, NULL);
    static char buffer[65536];
    long total = 0;
    uint64_t start = now_ns();
    ssize_t count;
    while ((count = read(fd, buffer, sizeof buffer)) > 0)
        total += count;
    uint64_t elapsed = now_ns() - start;
    waitpid(child, NULL, 0);
    if (total != (long)BULK_MIB << 20) {
        printf("tcp_bulk: %ld bytes\n", total);
        exit(1);
    }
    printf("bench tcp_bulk_64m %llu\n", (unsigned long long)elapsed);
    close(fd);
    close(listener);
}

/* redis-benchmark's CSV line for `test` (e.g. "SET","12345.67",...): its rate. */
static double redis_rate(const char *directory, const char *test, int pipeline) {
    char command[512];
    snprintf(command, sizeof command, "%s/redis-benchmark -p 6391 -c 50 -n %d -P %d -t %s -q --csv", directory, pipeline > 1 ? 100000 : 20000, pipeline, test);
    FILE *output = popen(command, "r");
    if (!output)
        return 0;
    char line[512];
    double rate = 0;
    while (fgets(line, sizeof line, output)) {
        char name[32];
        double value;
        if (sscanf(line, "\"%31[^\"]\",\"%lf\"", name, &value) == 2 && strcasecmp(name, test) == 0)
            rate = value;
    }
    pclose(output);
    return rate;
}

static void redis(const char *directory) {
    char server[256];
    snprintf(server, sizeof server, "%s/redis-server", directory);
    if (access(server, X_OK) != 0)
        return;
    pid_t child = fork();
    if (child == 0) {
        execl(server, "redis-server", "--port", "6391", "--save", "", "--appendonly", "no", "--logfile", "/tmp/redis-bench.log", (char *)NULL);
        _exit(127);
    }
    for (int try = 0; try < 100; try++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in address = loopback(6391);
        int ready = connect(fd, (struct sockaddr *)&address, sizeof address) == 0;
        close(fd);
        if (ready)
            break;
        usleep(50000);
    }
    const char *tests[] = {"set", "get"};
    for (int pipeline = 1; pipeline <= 16; pipeline += 15)
        for (int index = 0; index < 2; index++) {
            double rate = redis_rate(directory, tests[index], pipeline);
            if (rate > 0)
                printf("bench redis_%s_p%d %llu\n", tests[index], pipeline, (unsigned long long)(1e9 / rate));
        }
    kill(child, SIGTERM);
    waitpid(child, NULL, 0);
}

/* wrk's "Requests/sec:" for `url`. */
static double wrk_rate(const char *directory, const char *url) {
    char command[512];
    snprintf(command, sizeof command, "%s/wrk -t1 -c10 -d3s %s", directory, url);
    FILE *output = popen(command, "r");
    if (!output)
        return 0;
    char line[256];
    double rate = 0;
    while (fgets(line, sizeof line, output))
        sscanf(line, "Requests/sec: %lf", &rate);
    pclose(output);
    return rate;
}

static void write_file(const char *path, long bytes, char fill) {
    FILE *file = fopen(path, "w");
    if (!file)
        return;
    for (long at = 0; at < bytes; at++)
        fputc(fill, file);
    fclose(file);
}

static void nginx(const char *directory) {
    char server[256], client[256];
    snprintf(server, sizeof server, "%s/nginx", directory);
    snprintf(client, sizeof client, "%s/wrk", directory);
    if (access(server, X_OK) != 0 || access(client, X_OK) != 0)
        return;
    mkdir("/tmp/nginx", 0755);
    mkdir("/tmp/www", 0755);
    FILE *users = fopen("/etc/passwd", "a"), *groups = fopen("/etc/group", "a");
    if (users)
        fputs("root:x:0:0:root:/root:/bin/sh\n", users), fclose(users);
    if (groups)
        fputs("root:x:0:\n", groups), fclose(groups);
    write_file("/tmp/www/4k", 4096, 'a');
    write_file("/tmp/www/1m", 1 << 20, 'b');
    FILE *conf = fopen("/tmp/nginx/nginx.conf", "w");
    if (!conf)
        return;
    fputs("daemon off; master_process off; user root root; worker_processes 1; error_log /tmp/nginx/error.log;\n"
          "events { worker_connections 256; }\n"
          "http { access_log off; server { listen 127.0.0.1:8082; root /tmp/www; location / { } } }\n", conf);
    fclose(conf);
    pid_t child = fork();
    if (child == 0) {
        execl(server, "nginx", "-p", "/tmp/nginx/", "-c", "/tmp/nginx/nginx.conf", (char *)NULL);
        _exit(127);
    }
    for (int try = 0; try < 100; try++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in address = loopback(8082);
        int ready = connect(fd, (struct sockaddr *)&address, sizeof address) == 0;
        close(fd);
        if (ready)
            break;
        usleep(50000);
    }
    const char *files[] = {"4k", "1m"};
    for (int index = 0; index < 2; index++) {
        char url[64];
        snprintf(url, sizeof url, "http://127.0.0.1:8082/%s", files[index]);
        double rate = wrk_rate(directory, url);
        if (rate > 0)
            printf("bench nginx_%s %llu\n", files[index], (unsigned long long)(1e9 / rate));
    }
    kill(child, SIGTERM);
    waitpid(child, NULL, 0);
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0);
    signal(SIGPIPE, SIG_IGN);
    tcp_rtt();
    udp_rtt();
    connections();
    bulk();
    if (argc > 1) {
        redis(argv[1]);
        nginx(argv[1]);
    }
    return 0;
}
