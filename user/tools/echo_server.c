/*
 * The guest half of xtask's network check: listens on TCP port 7777 (any
 * address), echoes everything each connection sends until end of file,
 * says how many bytes it echoed, and ends after a connection that sent
 * just "bye" — the host's last, opened once it has every byte of the
 * others back, so the guest never powers off with echoed bytes still on
 * their way. The host connects through a forwarded port (`cargo xtask
 * exec --port HOST:7777`).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int main(void) {
    int server = socket(AF_INET, SOCK_STREAM, 0);
    int on = 1;
    setsockopt(server, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons(7777)};
    if (bind(server, (struct sockaddr *)&address, sizeof address) || listen(server, 4)) {
        perror("bind/listen");
        return 1;
    }
    printf("listening\n");
    fflush(stdout);
    for (int connection = 0;; connection++) {
        int fd = accept(server, NULL, NULL);
        if (fd < 0) {
            perror("accept");
            return 1;
        }
        static char buffer[65536];
        char first[4] = {0};
        long total = 0;
        ssize_t count;
        while ((count = read(fd, buffer, sizeof buffer)) > 0) {
            if (total < 3)
                memcpy(first + total, buffer, (size_t)(count < 3 - total ? count : 3 - total));
            total += count;
            for (ssize_t done = 0; done < count;) {
                ssize_t written = write(fd, buffer + done, (size_t)(count - done));
                if (written <= 0) {
                    perror("write");
                    return 1;
                }
                done += written;
            }
        }
        printf("connection %d: echoed %ld bytes\n", connection, total);
        close(fd);
        if (total == 3 && memcmp(first, "bye", 3) == 0)
            return 0;
    }
}
