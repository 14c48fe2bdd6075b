/*
 * RFC 3542 ancillary data and its IPv4 kin over the loopback: a UDP
 * datagram's hop limit and traffic class chosen by socket options
 * (IPV6_UNICAST_HOPS, IPV6_TCLASS, IP_TTL, IP_TOS) or by sendmsg's
 * control messages, and reported by recvmsg as the receiver asked
 * (IPV6_RECVHOPLIMIT, IPV6_RECVTCLASS, IPV6_RECVPKTINFO, IP_RECVTTL,
 * IP_RECVTOS, IP_PKTINFO), in Linux's order; control buffers too small
 * (MSG_CTRUNC, the cut message's length); bad values and control
 * messages refused with EINVAL; the options read back. Output is
 * identical on Lamina and Linux. Ports are fixed, below 32768.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"

static int udp6(int port) {
    int fd = socket(AF_INET6, SOCK_DGRAM, 0);
    if (port) {
        struct sockaddr_in6 address = {.sin6_family = AF_INET6, .sin6_port = htons(port), .sin6_addr = in6addr_loopback};
        if (bind(fd, (struct sockaddr *)&address, sizeof address) < 0)
            printf("bind [::1]:%d: %s\n", port, errno_name(errno));
    }
    return fd;
}

static int udp4(int port) {
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (port) {
        struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        if (bind(fd, (struct sockaddr *)&address, sizeof address) < 0)
            printf("bind 127.0.0.1:%d: %s\n", port, errno_name(errno));
    }
    return fd;
}

static void set_int(int fd, int level, int name, int value, const char *what) {
    if (setsockopt(fd, level, name, &value, sizeof value) < 0)
        printf("  setsockopt %s = %d: %s\n", what, value, errno_name(errno));
}

static void show_option(int fd, int level, int name, const char *what) {
    int value = -99;
    socklen_t length = sizeof value;
    int result = getsockopt(fd, level, name, &value, &length);
    printf("  %s: %s %d (length %d)\n", what, errno_name(result < 0 ? errno : 0), value, (int)length);
}

/* Sends "ping" to `to` with up to two int control messages at `level`
 * (type 0: none). */
static ssize_t send_with(int fd, struct sockaddr *to, socklen_t to_length, int level, int type1, int value1, int type2, int value2) {
    char payload[] = "ping";
    struct iovec vector = {.iov_base = payload, .iov_len = 4};
    union {
        char bytes[2 * CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } control;
    memset(&control, 0, sizeof control);
    struct msghdr message = {.msg_name = to, .msg_namelen = to_length, .msg_iov = &vector, .msg_iovlen = 1};
    if (type1) {
        message.msg_control = control.bytes;
        message.msg_controllen = type2 ? sizeof control.bytes : CMSG_SPACE(sizeof(int));
        struct cmsghdr *header = CMSG_FIRSTHDR(&message);
        header->cmsg_level = level, header->cmsg_type = type1, header->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(header), &value1, sizeof(int));
        if (type2) {
            header = CMSG_NXTHDR(&message, header);
            header->cmsg_level = level, header->cmsg_type = type2, header->cmsg_len = CMSG_LEN(sizeof(int));
            memcpy(CMSG_DATA(header), &value2, sizeof(int));
        }
    }
    return sendmsg(fd, &message, 0);
}

/* Receives one datagram with `room` bytes of control space and prints
 * its control messages. */
static void receive_and_show(int fd, size_t room) {
    char data[16];
    char control[256];
    memset(control, 0xee, sizeof control);
    struct iovec vector = {.iov_base = data, .iov_len = sizeof data};
    struct msghdr message = {.msg_iov = &vector, .msg_iovlen = 1, .msg_control = room ? control : NULL, .msg_controllen = room};
    ssize_t got = recvmsg(fd, &message, 0);
    if (got < 0) {
        printf("  recvmsg: %s\n", errno_name(errno));
        return;
    }
    printf("  recvmsg %d bytes, controllen %d%s\n", (int)got, (int)message.msg_controllen, message.msg_flags & MSG_CTRUNC ? ", MSG_CTRUNC" : "");
    for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header; header = CMSG_NXTHDR(&message, header)) {
        printf("    level %d type %d len %d", header->cmsg_level, header->cmsg_type, (int)header->cmsg_len);
        size_t data_length = header->cmsg_len > CMSG_LEN(0) ? header->cmsg_len - CMSG_LEN(0) : 0;
        if (data_length == sizeof(int)) {
            int value;
            memcpy(&value, CMSG_DATA(header), sizeof value);
            printf(" int %d", value);
        } else if (header->cmsg_level == IPPROTO_IPV6 && header->cmsg_type == IPV6_PKTINFO && data_length == sizeof(struct in6_pktinfo)) {
            struct in6_pktinfo info;
            char text[INET6_ADDRSTRLEN];
            memcpy(&info, CMSG_DATA(header), sizeof info);
            printf(" to %s index %d", inet_ntop(AF_INET6, &info.ipi6_addr, text, sizeof text), info.ipi6_ifindex);
        } else if (header->cmsg_level == IPPROTO_IP && header->cmsg_type == IP_PKTINFO && data_length == sizeof(struct in_pktinfo)) {
            struct in_pktinfo info;
            char local[INET_ADDRSTRLEN], to[INET_ADDRSTRLEN];
            memcpy(&info, CMSG_DATA(header), sizeof info);
            printf(" index %d local %s to %s", info.ipi_ifindex, inet_ntop(AF_INET, &info.ipi_spec_dst, local, sizeof local), inet_ntop(AF_INET, &info.ipi_addr, to, sizeof to));
        } else {
            printf(" %d bytes:", (int)data_length);
            for (size_t at = 0; at < data_length && at < 8; at++)
                printf(" %02x", CMSG_DATA(header)[at]);
        }
        printf("\n");
    }
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    struct sockaddr_in6 server6 = {.sin6_family = AF_INET6, .sin6_port = htons(21000), .sin6_addr = in6addr_loopback};
    struct sockaddr *to6 = (struct sockaddr *)&server6;
    int server = udp6(21000), client = udp6(0);

    printf("IPv6 options, defaults:\n");
    show_option(client, IPPROTO_IPV6, IPV6_UNICAST_HOPS, "IPV6_UNICAST_HOPS");
    show_option(client, IPPROTO_IPV6, IPV6_TCLASS, "IPV6_TCLASS");
    show_option(client, IPPROTO_IPV6, IPV6_RECVHOPLIMIT, "IPV6_RECVHOPLIMIT");
    show_option(client, IPPROTO_IPV6, IPV6_RECVTCLASS, "IPV6_RECVTCLASS");

    printf("nothing asked, nothing reported:\n");
    send_with(client, to6, sizeof server6, 0, 0, 0, 0, 0);
    receive_and_show(server, 256);

    printf("IPV6_RECVHOPLIMIT and IPV6_RECVTCLASS, defaults sent:\n");
    set_int(server, IPPROTO_IPV6, IPV6_RECVHOPLIMIT, 1, "IPV6_RECVHOPLIMIT");
    set_int(server, IPPROTO_IPV6, IPV6_RECVTCLASS, 1, "IPV6_RECVTCLASS");
    send_with(client, to6, sizeof server6, 0, 0, 0, 0, 0);
    receive_and_show(server, 256);

    printf("hop limit 2 and class 0xb8 by control messages:\n");
    printf("  sendmsg: %d\n", (int)send_with(client, to6, sizeof server6, IPPROTO_IPV6, IPV6_TCLASS, 0xb8, IPV6_HOPLIMIT, 2));
    receive_and_show(server, 256);

    printf("by options (hops 9, class 0x20), one send naming its own hop limit:\n");
    set_int(client, IPPROTO_IPV6, IPV6_UNICAST_HOPS, 9, "IPV6_UNICAST_HOPS");
    set_int(client, IPPROTO_IPV6, IPV6_TCLASS, 0x20, "IPV6_TCLASS");
    show_option(client, IPPROTO_IPV6, IPV6_UNICAST_HOPS, "IPV6_UNICAST_HOPS");
    show_option(client, IPPROTO_IPV6, IPV6_TCLASS, "IPV6_TCLASS");
    send_with(client, to6, sizeof server6, 0, 0, 0, 0, 0);
    send_with(client, to6, sizeof server6, IPPROTO_IPV6, IPV6_HOPLIMIT, 200, 0, 0);
    send_with(client, to6, sizeof server6, IPPROTO_IPV6, IPV6_HOPLIMIT, -1, 0, 0);
    receive_and_show(server, 256);
    receive_and_show(server, 256);
    receive_and_show(server, 256);
    set_int(client, IPPROTO_IPV6, IPV6_UNICAST_HOPS, -1, "IPV6_UNICAST_HOPS");
    set_int(client, IPPROTO_IPV6, IPV6_TCLASS, -1, "IPV6_TCLASS");
    show_option(client, IPPROTO_IPV6, IPV6_UNICAST_HOPS, "IPV6_UNICAST_HOPS after -1");
    show_option(client, IPPROTO_IPV6, IPV6_TCLASS, "IPV6_TCLASS after -1");

    printf("IPV6_RECVPKTINFO first, then the others:\n");
    set_int(server, IPPROTO_IPV6, IPV6_RECVPKTINFO, 1, "IPV6_RECVPKTINFO");
    send_with(client, to6, sizeof server6, 0, 0, 0, 0, 0);
    receive_and_show(server, 256);
    set_int(server, IPPROTO_IPV6, IPV6_RECVPKTINFO, 0, "IPV6_RECVPKTINFO");

    printf("control space too small:\n");
    size_t rooms[] = {0, CMSG_LEN(0) - 1, CMSG_LEN(0), CMSG_LEN(sizeof(int)) - 1, CMSG_LEN(sizeof(int)), CMSG_SPACE(sizeof(int)), CMSG_SPACE(sizeof(int)) + CMSG_LEN(0) + 1};
    for (size_t index = 0; index < sizeof rooms / sizeof rooms[0]; index++) {
        send_with(client, to6, sizeof server6, 0, 0, 0, 0, 0);
        printf(" room %d:\n", (int)rooms[index]);
        receive_and_show(server, rooms[index]);
    }

    printf("bad values and control messages:\n");
    set_int(client, IPPROTO_IPV6, IPV6_UNICAST_HOPS, 256, "IPV6_UNICAST_HOPS");
    set_int(client, IPPROTO_IPV6, IPV6_UNICAST_HOPS, -2, "IPV6_UNICAST_HOPS");
    set_int(client, IPPROTO_IPV6, IPV6_TCLASS, 256, "IPV6_TCLASS");
    short little = 1;
    CHECK("  IPV6_RECVHOPLIMIT with 2 bytes", setsockopt(client, IPPROTO_IPV6, IPV6_RECVHOPLIMIT, &little, sizeof little));
    CHECK("  sendmsg IPV6_HOPLIMIT 256", send_with(client, to6, sizeof server6, IPPROTO_IPV6, IPV6_HOPLIMIT, 256, 0, 0));
    CHECK("  sendmsg IPV6_TCLASS -2", send_with(client, to6, sizeof server6, IPPROTO_IPV6, IPV6_TCLASS, -2, 0, 0));
    CHECK("  sendmsg an unknown IPv6 type", send_with(client, to6, sizeof server6, IPPROTO_IPV6, 1000, 0, 0, 0));
    CHECK("  sendmsg an unknown SOL_SOCKET type", send_with(client, to6, sizeof server6, SOL_SOCKET, 1000, 0, 0, 0));
    printf("  sendmsg with a foreign level: %d\n", (int)send_with(client, to6, sizeof server6, IPPROTO_TCP, 1, 0, 0, 0));
    receive_and_show(server, 256);

    printf("IPv4: IP_TTL 3 and IP_TOS 0x10 by options, then 7 and 0x28 by control messages:\n");
    struct sockaddr_in server4_address = {.sin_family = AF_INET, .sin_port = htons(21001), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct sockaddr *to4 = (struct sockaddr *)&server4_address;
    int server4 = udp4(21001), client4 = udp4(0);
    show_option(client4, IPPROTO_IP, IP_TTL, "IP_TTL");
    show_option(client4, IPPROTO_IP, IP_TOS, "IP_TOS");
    CHECK("  IPV6_RECVHOPLIMIT on an IPv4 socket", setsockopt(client4, IPPROTO_IPV6, IPV6_RECVHOPLIMIT, &(int){1}, sizeof(int)));
    set_int(server4, IPPROTO_IP, IP_RECVTTL, 1, "IP_RECVTTL");
    set_int(server4, IPPROTO_IP, IP_RECVTOS, 1, "IP_RECVTOS");
    set_int(server4, IPPROTO_IP, IP_PKTINFO, 1, "IP_PKTINFO");
    set_int(client4, IPPROTO_IP, IP_TTL, 3, "IP_TTL");
    set_int(client4, IPPROTO_IP, IP_TOS, 0x10, "IP_TOS");
    show_option(client4, IPPROTO_IP, IP_TTL, "IP_TTL");
    show_option(client4, IPPROTO_IP, IP_TOS, "IP_TOS");
    send_with(client4, to4, sizeof server4_address, 0, 0, 0, 0, 0);
    receive_and_show(server4, 256);
    printf("  sendmsg: %d\n", (int)send_with(client4, to4, sizeof server4_address, IPPROTO_IP, IP_TTL, 7, IP_TOS, 0x28));
    receive_and_show(server4, 256);
    set_int(client4, IPPROTO_IP, IP_TTL, 0, "IP_TTL");
    CHECK("  sendmsg IP_TTL 0", send_with(client4, to4, sizeof server4_address, IPPROTO_IP, IP_TTL, 0, 0, 0));
    CHECK("  sendmsg IP_TOS 300", send_with(client4, to4, sizeof server4_address, IPPROTO_IP, IP_TOS, 300, 0, 0));
    printf("  sendmsg with an IPv6 message on IPv4: %d\n", (int)send_with(client4, to4, sizeof server4_address, IPPROTO_IPV6, IPV6_HOPLIMIT, 5, 0, 0));
    receive_and_show(server4, 256);
    return 0;
}
