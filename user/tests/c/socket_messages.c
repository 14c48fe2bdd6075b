/*
 * Record sockets and descriptor passing on Unix socket pairs: SOCK_DGRAM
 * and SOCK_SEQPACKET keep each send a record (a short read drops the
 * rest, MSG_TRUNC says so), SCM_RIGHTS passes open file descriptions
 * (shared offsets, a pipe end that still works, MSG_CTRUNC when the
 * control buffer is short, EBADF for a descriptor not held), and what
 * is never received is closed with its socket. Output is identical on
 * Lamina and Linux.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static int sent_with(int socket, const char *bytes, size_t length, const int *fds, int count) {
    struct iovec vector = {(void *)bytes, length};
    char control[CMSG_SPACE(sizeof(int) * 8)];
    memset(control, 0, sizeof control);
    struct msghdr message = {.msg_iov = &vector, .msg_iovlen = 1};
    if (count > 0) {
        message.msg_control = control;
        message.msg_controllen = CMSG_SPACE(sizeof(int) * count);
        struct cmsghdr *header = CMSG_FIRSTHDR(&message);
        header->cmsg_level = SOL_SOCKET;
        header->cmsg_type = SCM_RIGHTS;
        header->cmsg_len = CMSG_LEN(sizeof(int) * count);
        memcpy(CMSG_DATA(header), fds, sizeof(int) * count);
    }
    return (int)sendmsg(socket, &message, 0);
}

/* Receives into `bytes`; the descriptors that came go to `fds`. */
static int received_with(int socket, char *bytes, size_t length, int *fds, int room, int *count, int *flags) {
    struct iovec vector = {bytes, length};
    char control[CMSG_SPACE(sizeof(int) * 8)];
    struct msghdr message = {.msg_iov = &vector, .msg_iovlen = 1, .msg_control = control, .msg_controllen = room ? CMSG_SPACE(sizeof(int) * room) : 0};
    int got = (int)recvmsg(socket, &message, 0);
    *count = 0;
    *flags = message.msg_flags;
    for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); got >= 0 && header; header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level == SOL_SOCKET && header->cmsg_type == SCM_RIGHTS) {
            int n = (int)((header->cmsg_len - CMSG_LEN(0)) / sizeof(int));
            memcpy(fds + *count, CMSG_DATA(header), sizeof(int) * n);
            *count += n;
            printf("  control: cmsg_len %d, msg_controllen %d\n", (int)header->cmsg_len, (int)message.msg_controllen);
        }
    }
    return got;
}

static void records(int kind, const char *name) {
    int pair[2];
    CHECK(name, socketpair(AF_UNIX, kind, 0, pair));
    int type = 0;
    socklen_t size = sizeof type;
    getsockopt(pair[0], SOL_SOCKET, SO_TYPE, &type, &size);
    printf("  SO_TYPE %d\n", type);
    send(pair[0], "one", 3, 0);
    send(pair[0], "", 0, 0);
    send(pair[0], "three", 5, 0);
    send(pair[0], "four", 4, 0);
    char buffer[64] = {0};
    CHECK("  recv one record", recv(pair[1], buffer, sizeof buffer, 0));
    printf("  it was: %s\n", buffer);
    CHECK("  recv the empty record", recv(pair[1], buffer, sizeof buffer, 0));
    memset(buffer, 0, sizeof buffer);
    CHECK("  recv 2 bytes of 'three'", recv(pair[1], buffer, 2, 0));
    printf("  it was: %s\n", buffer);
    memset(buffer, 0, sizeof buffer);
    struct iovec vector = {buffer, 2};
    struct msghdr message = {.msg_iov = &vector, .msg_iovlen = 1};
    CHECK("  recvmsg 2 bytes of 'four'", recvmsg(pair[1], &message, 0));
    printf("  it was: %s, MSG_TRUNC %s\n", buffer, message.msg_flags & MSG_TRUNC ? "set" : "clear");
    send(pair[0], "fifteen bytes!!", 15, 0);
    CHECK("  recv(MSG_TRUNC) of 4 bytes gives the record's length", recv(pair[1], buffer, 4, MSG_TRUNC));
    CHECK("  recv with nothing there, MSG_DONTWAIT", recv(pair[1], buffer, sizeof buffer, MSG_DONTWAIT));
    char big[70000] = {0};
    CHECK("  a record larger than the buffer's room", send(pair[0], big, sizeof big, MSG_DONTWAIT));
    close(pair[0]);
    if (kind == SOCK_SEQPACKET)
        CHECK("  recv after the peer closed", recv(pair[1], buffer, sizeof buffer, 0));
    close(pair[1]);
}

static void passing(void) {
    int pair[2], pipe_ends[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, pair);
    pipe(pipe_ends);
    int file = open("/tmp/passed", O_RDWR | O_CREAT | O_TRUNC, 0644);
    write(file, "0123456789", 10);
    lseek(file, 3, SEEK_SET);
    int fds[2] = {file, pipe_ends[0]};
    CHECK("SCM_RIGHTS: send a file and a pipe's read end with one byte", sent_with(pair[0], "x", 1, fds, 2));
    close(file);
    close(pipe_ends[0]);
    pid_t child = fork();
    if (child == 0) {
        char byte = 0, buffer[16] = {0};
        int got[8], count, flags;
        int n = received_with(pair[1], &byte, 1, got, 8, &count, &flags);
        printf("  child received %d byte '%c' and %d descriptors\n", n, byte, count);
        if (count == 2) {
            read(got[0], buffer, 4);
            printf("  the file reads on from offset 3: %s\n", buffer);
            memset(buffer, 0, sizeof buffer);
            read(got[1], buffer, 5);
            printf("  the pipe delivers: %s\n", buffer);
        }
        _exit(0);
    }
    write(pipe_ends[1], "hello", 5);
    waitpid(child, NULL, 0);
    /* The child read 4 bytes through the same description: offset 7. */
    printf("  offset of the parent's file after the child's read: ");
    int again = open("/tmp/passed", O_RDONLY);
    printf("%ld (a fresh open starts at 0)\n", (long)lseek(again, 0, SEEK_CUR));
    close(again);

    /* Three descriptors, room for one. */
    int three[3] = {0, 1, 2};
    sent_with(pair[0], "y", 1, three, 3);
    char byte;
    int got[8], count, flags;
    CHECK("  recvmsg with room for one descriptor of three", received_with(pair[1], &byte, 1, got, 1, &count, &flags));
    printf("  descriptors: %d, MSG_CTRUNC %s\n", count, flags & MSG_CTRUNC ? "set" : "clear");
    for (int i = 0; i < count; i++) close(got[i]);
    int bad[1] = {999};
    CHECK("  SCM_RIGHTS of a descriptor not held", sent_with(pair[0], "z", 1, bad, 1));

    /* A write end in flight, never received: closing the sockets closes it. */
    int more[2];
    pipe(more);
    sent_with(pair[0], "w", 1, &more[1], 1);
    close(more[1]);
    close(pair[0]);
    close(pair[1]);
    char end[4];
    CHECK("  the pipe's reader after the unreceived writer went with its socket", read(more[0], end, sizeof end));
    close(more[0]);

    /* Descriptors over a datagram pair. */
    socketpair(AF_UNIX, SOCK_DGRAM, 0, pair);
    pipe(more);
    CHECK("SCM_RIGHTS over SOCK_DGRAM", sent_with(pair[0], "d", 1, &more[1], 1));
    close(more[1]);
    int n = received_with(pair[1], &byte, 1, got, 8, &count, &flags);
    printf("  received %d byte, %d descriptor\n", n, count);
    if (count == 1) {
        write(got[0], "via", 3);
        close(got[0]);
        char buffer[8] = {0};
        read(more[0], buffer, sizeof buffer - 1);
        printf("  written through it: %s\n", buffer);
    }
    close(more[0]);
    close(pair[0]);
    close(pair[1]);
    unlink("/tmp/passed");
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    records(SOCK_DGRAM, "socketpair SOCK_DGRAM");
    records(SOCK_SEQPACKET, "socketpair SOCK_SEQPACKET");
    passing();
    return 0;
}
