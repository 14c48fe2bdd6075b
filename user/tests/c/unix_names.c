/*
 * Named Unix-domain sockets: bind makes a socket file (or takes an
 * abstract name), listen, connect by name, accept/accept4 with the
 * peer's address, getsockname/getpeername, poll on a listener, and the
 * errors Linux gives (EADDRINUSE, ECONNREFUSED, ENOENT, ENXIO on open,
 * EINVAL, EOPNOTSUPP, EAGAIN). Output is identical on Lamina and Linux.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static socklen_t path_address(struct sockaddr_un *address, const char *path) {
    memset(address, 0, sizeof *address);
    address->sun_family = AF_UNIX;
    strcpy(address->sun_path, path);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(path) + 1);
}

static socklen_t abstract_address(struct sockaddr_un *address, const char *name) {
    memset(address, 0, sizeof *address);
    address->sun_family = AF_UNIX;
    memcpy(address->sun_path + 1, name, strlen(name));
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name));
}

static void show_name(const char *label, int fd, int peer) {
    struct sockaddr_un address;
    memset(&address, 0, sizeof address);
    socklen_t length = sizeof address;
    int result = peer ? getpeername(fd, (struct sockaddr *)&address, &length) : getsockname(fd, (struct sockaddr *)&address, &length);
    if (result < 0) {
        printf("%s: -1 %s\n", label, errno_name(errno));
        return;
    }
    printf("%s: family %d length %d path '%s'%s\n", label, address.sun_family, (int)length, address.sun_path[0] ? address.sun_path : address.sun_path + 1,
           length > 2 && !address.sun_path[0] ? " (abstract)" : "");
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    umask(022);
    unlink("/tmp/named.sock");
    int server = socket(AF_UNIX, SOCK_STREAM, 0);
    EXPECT("socket(AF_UNIX, SOCK_STREAM)", server >= 0);
    show_name("  getsockname before bind", server, 0);
    struct sockaddr_un address;
    socklen_t length = path_address(&address, "/tmp/named.sock");
    CHECK("bind /tmp/named.sock", bind(server, (struct sockaddr *)&address, length));
    struct stat status;
    stat("/tmp/named.sock", &status);
    printf("  a socket file: %s, mode %o\n", S_ISSOCK(status.st_mode) ? "yes" : "no", status.st_mode & 0777);
    CHECK("  bind again", bind(server, (struct sockaddr *)&address, length));
    int other = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK("  another socket binds the same path", bind(other, (struct sockaddr *)&address, length));
    CHECK("  connect before anyone listens", connect(other, (struct sockaddr *)&address, length));
    close(other);
    show_name("  getsockname", server, 0);
    show_name("  getpeername of a listener-to-be", server, 1);
    CHECK("listen", listen(server, 5));
    int accepting = 0;
    socklen_t size = sizeof accepting;
    getsockopt(server, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &size);
    printf("  SO_ACCEPTCONN %d\n", accepting);
    CHECK("  open() of the socket file", open("/tmp/named.sock", O_RDWR));
    fcntl(server, F_SETFL, O_NONBLOCK);
    CHECK("  accept with nobody connecting (O_NONBLOCK)", accept(server, NULL, NULL));
    fcntl(server, F_SETFL, 0);

    int client = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK("connect", connect(client, (struct sockaddr *)&address, length));
    CHECK("  connect again", connect(client, (struct sockaddr *)&address, length));
    struct pollfd watch = {server, POLLIN, 0};
    CHECK("  poll the listener", poll(&watch, 1, 1000));
    printf("  revents POLLIN %s\n", watch.revents & POLLIN ? "yes" : "no");
    show_name("  client getpeername", client, 1);
    struct sockaddr_un peer;
    socklen_t peer_length = sizeof peer;
    int connection = accept(server, (struct sockaddr *)&peer, &peer_length);
    EXPECT("accept", connection >= 0);
    printf("  the unbound client's address length: %d\n", (int)peer_length);
    show_name("  accepted getsockname", connection, 0);
    CHECK("  client sends", send(client, "ping", 4, 0));
    char buffer[16] = {0};
    CHECK("  server receives", recv(connection, buffer, sizeof buffer, 0));
    printf("  it was: %s\n", buffer);
    CHECK("  server answers", write(connection, "pong", 4));
    memset(buffer, 0, sizeof buffer);
    CHECK("  client reads", read(client, buffer, sizeof buffer));
    printf("  it was: %s\n", buffer);
    close(client);
    CHECK("  server reads after the client closed", read(connection, buffer, sizeof buffer));
    close(connection);

    /* A child connects from its own bound name; the parent waits in accept. */
    pid_t child = fork();
    if (child == 0) {
        int me = socket(AF_UNIX, SOCK_STREAM, 0);
        struct sockaddr_un mine;
        socklen_t mine_length = path_address(&mine, "/tmp/client.sock");
        bind(me, (struct sockaddr *)&mine, mine_length);
        connect(me, (struct sockaddr *)&address, length);
        write(me, "from the child", 14);
        close(me);
        _exit(0);
    }
    peer_length = sizeof peer;
    connection = accept4(server, (struct sockaddr *)&peer, &peer_length, SOCK_CLOEXEC);
    printf("accept4 waited for the child: %s, peer '%s', FD_CLOEXEC %s\n", connection >= 0 ? "yes" : "no", peer.sun_path,
           fcntl(connection, F_GETFD) & FD_CLOEXEC ? "set" : "clear");
    memset(buffer, 0, sizeof buffer);
    read(connection, buffer, sizeof buffer - 1);
    printf("  it read: %s\n", buffer);
    waitpid(child, NULL, 0);
    close(connection);
    unlink("/tmp/client.sock");

    /* Errors. */
    int stray = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un nowhere;
    socklen_t nowhere_length = path_address(&nowhere, "/tmp/no-such.sock");
    CHECK("connect to a path that does not exist", connect(stray, (struct sockaddr *)&nowhere, nowhere_length));
    close(open("/tmp/plain-file", O_CREAT | O_WRONLY, 0644));
    nowhere_length = path_address(&nowhere, "/tmp/plain-file");
    CHECK("connect to a regular file", connect(stray, (struct sockaddr *)&nowhere, nowhere_length));
    unlink("/tmp/plain-file");
    struct sockaddr bad = {AF_INET, {0}};
    CHECK("bind with another family", bind(stray, &bad, sizeof bad));
    CHECK("listen on an unbound socket", listen(stray, 1));
    int seqpacket = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    CHECK("a stream socket connects to a seqpacket listener", (bind(seqpacket, (struct sockaddr *)&nowhere, path_address(&nowhere, "/tmp/seq.sock")), listen(seqpacket, 1), connect(stray, (struct sockaddr *)&nowhere, nowhere_length)));
    close(seqpacket);
    unlink("/tmp/seq.sock");
    int datagram = socket(AF_UNIX, SOCK_DGRAM, 0);
    CHECK("listen on a datagram socket", listen(datagram, 1));
    close(datagram);
    CHECK("socket(AF_UNIX, 99)", socket(AF_UNIX, 99, 0));
    CHECK("read on an unconnected stream socket", read(stray, buffer, 1));
    close(stray);

    /* Abstract names: no file. */
    int abstract = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    struct sockaddr_un hidden;
    socklen_t hidden_length = abstract_address(&hidden, "lamina-test");
    CHECK("bind an abstract name", bind(abstract, (struct sockaddr *)&hidden, hidden_length));
    show_name("  getsockname", abstract, 0);
    listen(abstract, 2);
    int caller = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    CHECK("  connect to it", connect(caller, (struct sockaddr *)&hidden, hidden_length));
    int answered = accept(abstract, NULL, NULL);
    send(caller, "one", 3, 0);
    send(caller, "two", 3, 0);
    memset(buffer, 0, sizeof buffer);
    CHECK("  records over an accepted seqpacket connection", recv(answered, buffer, sizeof buffer, 0));
    printf("  it was: %s\n", buffer);
    close(caller);
    close(answered);
    close(abstract);
    int again = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    CHECK("  the name is free once its socket closed", bind(again, (struct sockaddr *)&hidden, hidden_length));
    close(again);

    close(server);
    CHECK("connect after the listener closed (the file stays)", connect(socket(AF_UNIX, SOCK_STREAM, 0), (struct sockaddr *)&address, length));
    unlink("/tmp/named.sock");
    CHECK("connect after unlink", connect(socket(AF_UNIX, SOCK_STREAM, 0), (struct sockaddr *)&address, length));
    return 0;
}
