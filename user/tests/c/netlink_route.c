/*
 * Route netlink (AF_NETLINK, NETLINK_ROUTE) as programs use it to learn
 * the interfaces: socket and address rules, a link dump and an address
 * dump read message by message up to NLMSG_DONE (Linux may split them
 * over datagrams; only the messages are compared), one link asked by
 * index (an unknown one gives NLMSG_ERROR with -ENODEV), MSG_PEEK and
 * MSG_TRUNC, and musl's if_nameindex, if_nametoindex and getifaddrs on
 * top, and the interface ioctls they and ifconfig use (SIOCGIFINDEX,
 * SIOCGIFNAME, SIOCGIFFLAGS, SIOCGIFMTU, SIOCGIFHWADDR, SIOCGIFADDR,
 * SIOCGIFNETMASK). Run without a network card: the loopback alone, which the test
 * init brings up on Linux. Output is identical on Lamina and Linux.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"

/* The netlink layouts (linux/netlink.h, linux/rtnetlink.h): musl ships no
   kernel headers, so the few used here are written out. */
struct sockaddr_nl {
    unsigned short nl_family;
    unsigned short nl_pad;
    uint32_t nl_pid;
    uint32_t nl_groups;
};
struct nlmsghdr {
    uint32_t nlmsg_len;
    uint16_t nlmsg_type;
    uint16_t nlmsg_flags;
    uint32_t nlmsg_seq;
    uint32_t nlmsg_pid;
};
struct nlmsgerr {
    int error;
    struct nlmsghdr msg;
};
struct rtgenmsg {
    unsigned char rtgen_family;
};
struct ifinfomsg {
    unsigned char ifi_family, ifi_pad;
    unsigned short ifi_type;
    int ifi_index;
    unsigned ifi_flags, ifi_change;
};
struct ifaddrmsg {
    uint8_t ifa_family, ifa_prefixlen, ifa_flags, ifa_scope;
    uint32_t ifa_index;
};
struct rtattr {
    unsigned short rta_len, rta_type;
};
#define NETLINK_ROUTE 0
#define NLM_F_REQUEST 1
#define NLM_F_MULTI 2
#define NLM_F_DUMP 0x300
#define NLMSG_ERROR 2
#define NLMSG_DONE 3
#define RTM_NEWLINK 16
#define RTM_GETLINK 18
#define RTM_NEWADDR 20
#define RTM_GETADDR 22
#define IFLA_IFNAME 3
#define IFLA_MTU 4
#define IFA_ADDRESS 1
#define IFF_LOWER_UP 0x10000
#define ALIGN4(length) (((length) + 3u) & ~3u)
#define NLMSG_HDRLEN ((int)ALIGN4(sizeof(struct nlmsghdr)))
#define NLMSG_LENGTH(length) ((length) + NLMSG_HDRLEN)
#define NLMSG_DATA(header) ((void *)((char *)(header) + NLMSG_HDRLEN))
#define NLMSG_OK(header, length) ((length) >= (int)sizeof(struct nlmsghdr) && (header)->nlmsg_len >= sizeof(struct nlmsghdr) && (header)->nlmsg_len <= (unsigned)(length))
#define NLMSG_NEXT(header, length) ((length) -= ALIGN4((header)->nlmsg_len), (struct nlmsghdr *)((char *)(header) + ALIGN4((header)->nlmsg_len)))
#define RTA_OK(attribute, length) ((length) >= (int)sizeof(struct rtattr) && (attribute)->rta_len >= sizeof(struct rtattr) && (attribute)->rta_len <= (unsigned)(length))
#define RTA_NEXT(attribute, length) ((length) -= ALIGN4((attribute)->rta_len), (struct rtattr *)((char *)(attribute) + ALIGN4((attribute)->rta_len)))
#define RTA_DATA(attribute) ((void *)((char *)(attribute) + ALIGN4(sizeof(struct rtattr))))
#define IFLA_RTA(link) ((struct rtattr *)((char *)(link) + ALIGN4(sizeof(struct ifinfomsg))))
#define IFLA_PAYLOAD(header) ((header)->nlmsg_len - NLMSG_LENGTH(ALIGN4(sizeof(struct ifinfomsg))))
#define IFA_RTA(address) ((struct rtattr *)((char *)(address) + ALIGN4(sizeof(struct ifaddrmsg))))
#define IFA_PAYLOAD(header) ((header)->nlmsg_len - NLMSG_LENGTH(ALIGN4(sizeof(struct ifaddrmsg))))

static int route_socket(void) {
    int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (fd < 0) {
        printf("socket: %s\n", errno_name(errno));
        exit(1);
    }
    return fd;
}

static uint32_t own_port(int fd) {
    struct sockaddr_nl address;
    socklen_t length = sizeof address;
    memset(&address, 0xff, sizeof address);
    int result = getsockname(fd, (struct sockaddr *)&address, &length);
    printf("getsockname: %s length %u family %d port %s groups %u\n", errno_name(result < 0 ? errno : 0), (unsigned)length, address.nl_family,
           address.nl_pid != 0 ? "nonzero" : "zero", address.nl_groups);
    return address.nl_pid;
}

static void send_request(int fd, uint16_t type, uint16_t flags, uint32_t sequence, const void *body, size_t body_length) {
    char buffer[256];
    struct nlmsghdr *header = (struct nlmsghdr *)buffer;
    memset(buffer, 0, sizeof buffer);
    header->nlmsg_len = NLMSG_LENGTH(body_length);
    header->nlmsg_type = type;
    header->nlmsg_flags = flags;
    header->nlmsg_seq = sequence;
    memcpy(NLMSG_DATA(header), body, body_length);
    struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
    ssize_t sent = sendto(fd, buffer, header->nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof kernel);
    if (sent != (ssize_t)header->nlmsg_len)
        printf("sendto type %u: %zd %s\n", type, sent, errno_name(errno));
}

static const char *attribute_name(struct rtattr *attribute, int length, int wanted) {
    for (; RTA_OK(attribute, length); attribute = RTA_NEXT(attribute, length))
        if (attribute->rta_type == wanted)
            return RTA_DATA(attribute);
    return "(none)";
}

/* Reads answers until NLMSG_DONE or an error message; prints each. */
static void read_dump(int fd, uint32_t sequence, uint32_t port) {
    char buffer[16384];
    for (int datagrams = 0; datagrams < 16; datagrams++) {
        struct sockaddr_nl from;
        struct iovec vector = {buffer, sizeof buffer};
        struct msghdr message = {.msg_name = &from, .msg_namelen = sizeof from, .msg_iov = &vector, .msg_iovlen = 1};
        ssize_t got = recvmsg(fd, &message, 0);
        if (got < 0) {
            printf("recvmsg: %s\n", errno_name(errno));
            return;
        }
        if (from.nl_family != AF_NETLINK || from.nl_pid != 0 || message.msg_namelen != sizeof from)
            printf("answer not from the kernel\n");
        int length = (int)got;
        for (struct nlmsghdr *header = (struct nlmsghdr *)buffer; NLMSG_OK(header, length); header = NLMSG_NEXT(header, length)) {
            if (header->nlmsg_seq != sequence || header->nlmsg_pid != port)
                printf("message %u with sequence %u port %s\n", header->nlmsg_type, header->nlmsg_seq, header->nlmsg_pid == port ? "ours" : "other");
            if (header->nlmsg_type == NLMSG_DONE) {
                printf("  done, multi %d\n", (header->nlmsg_flags & NLM_F_MULTI) != 0);
                return;
            }
            if (header->nlmsg_type == NLMSG_ERROR) {
                struct nlmsgerr *error = NLMSG_DATA(header);
                printf("  error %s, echoed type %u\n", error->error ? errno_name(-error->error) : "OK (ack)", error->msg.nlmsg_type);
                return;
            }
            if (header->nlmsg_type == RTM_NEWLINK) {
                struct ifinfomsg *link = NLMSG_DATA(header);
                unsigned wanted = IFF_UP | IFF_LOOPBACK | IFF_RUNNING;
                const char *mtu = attribute_name(IFLA_RTA(link), (int)IFLA_PAYLOAD(header), IFLA_MTU);
                printf("  link %d %s type %u flags %s mtu %u multi %d\n", link->ifi_index, attribute_name(IFLA_RTA(link), (int)IFLA_PAYLOAD(header), IFLA_IFNAME),
                       link->ifi_type, (link->ifi_flags & wanted) == wanted ? "up,loopback,running" : "other", *(const uint32_t *)mtu,
                       (header->nlmsg_flags & NLM_F_MULTI) != 0);
                if ((header->nlmsg_flags & NLM_F_MULTI) == 0)
                    return;
            } else if (header->nlmsg_type == RTM_NEWADDR) {
                struct ifaddrmsg *address = NLMSG_DATA(header);
                char text[64];
                const char *raw = attribute_name(IFA_RTA(address), (int)IFA_PAYLOAD(header), IFA_ADDRESS);
                inet_ntop(address->ifa_family, raw, text, sizeof text);
                printf("  address %s/%u on %u scope %u\n", text, address->ifa_prefixlen, address->ifa_index, address->ifa_scope);
            } else {
                printf("  message type %u\n", header->nlmsg_type);
            }
        }
    }
    printf("no NLMSG_DONE in 16 datagrams\n");
}

static void socket_rules(void) {
    int fd = socket(AF_NETLINK, SOCK_STREAM, NETLINK_ROUTE);
    printf("stream netlink socket: %s\n", errno_name(fd < 0 ? errno : 0));
    fd = socket(AF_NETLINK, SOCK_RAW, 31);
    printf("unknown netlink protocol: %s\n", errno_name(fd < 0 ? errno : 0));
    int pair[2];
    printf("socketpair: %s\n", errno_name(socketpair(AF_NETLINK, SOCK_RAW, 0, pair) < 0 ? errno : 0));
    fd = socket(AF_NETLINK, SOCK_DGRAM, NETLINK_ROUTE);
    int type = 0;
    socklen_t length = sizeof type;
    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length);
    printf("dgram netlink socket: type %d\n", type);
    struct sockaddr_nl short_address = {.nl_family = AF_NETLINK};
    printf("bind short: %s\n", errno_name(bind(fd, (struct sockaddr *)&short_address, 4) < 0 ? errno : 0));
    struct sockaddr_nl wrong_family = {.nl_family = AF_INET};
    printf("bind other family: %s\n", errno_name(bind(fd, (struct sockaddr *)&wrong_family, sizeof wrong_family) < 0 ? errno : 0));
    struct sockaddr_nl any = {.nl_family = AF_NETLINK};
    printf("bind port 0: %s\n", errno_name(bind(fd, (struct sockaddr *)&any, sizeof any) < 0 ? errno : 0));
    own_port(fd);
    char byte;
    printf("empty recv, MSG_DONTWAIT: %s\n", errno_name(recv(fd, &byte, 1, MSG_DONTWAIT) < 0 ? errno : 0));
    printf("listen: %s\n", errno_name(listen(fd, 1) < 0 ? errno : 0));
    close(fd);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    socket_rules();
    int fd = route_socket();
    printf("before bind: ");
    own_port(fd);
    struct sockaddr_nl any = {.nl_family = AF_NETLINK};
    printf("bind: %s\n", errno_name(bind(fd, (struct sockaddr *)&any, sizeof any) < 0 ? errno : 0));
    printf("after bind: ");
    uint32_t port = own_port(fd);
    struct sockaddr_nl in_use = {.nl_family = AF_NETLINK, .nl_pid = port};
    int second = route_socket();
    printf("bind a taken port: %s\n", errno_name(bind(second, (struct sockaddr *)&in_use, sizeof in_use) < 0 ? errno : 0));
    close(second);

    printf("link dump:\n");
    struct rtgenmsg everything = {.rtgen_family = AF_UNSPEC};
    send_request(fd, RTM_GETLINK, NLM_F_REQUEST | NLM_F_DUMP, 1, &everything, sizeof everything);
    read_dump(fd, 1, port);

    printf("IPv4 address dump:\n");
    struct ifaddrmsg four = {.ifa_family = AF_INET};
    send_request(fd, RTM_GETADDR, NLM_F_REQUEST | NLM_F_DUMP, 2, &four, sizeof four);
    read_dump(fd, 2, port);

    printf("IPv6 address dump:\n");
    struct ifaddrmsg six = {.ifa_family = AF_INET6};
    send_request(fd, RTM_GETADDR, NLM_F_REQUEST | NLM_F_DUMP, 3, &six, sizeof six);
    read_dump(fd, 3, port);

    printf("link 1:\n");
    struct ifinfomsg one = {.ifi_family = AF_UNSPEC, .ifi_index = 1};
    send_request(fd, RTM_GETLINK, NLM_F_REQUEST, 4, &one, sizeof one);
    read_dump(fd, 4, port);

    printf("link 99:\n");
    struct ifinfomsg missing = {.ifi_family = AF_UNSPEC, .ifi_index = 99};
    send_request(fd, RTM_GETLINK, NLM_F_REQUEST, 5, &missing, sizeof missing);
    read_dump(fd, 5, port);

    send_request(fd, RTM_GETLINK, NLM_F_REQUEST, 6, &one, sizeof one);
    char small[8];
    ssize_t peeked = recv(fd, small, sizeof small, MSG_PEEK | MSG_TRUNC);
    ssize_t taken = recv(fd, small, sizeof small, 0);
    printf("peek with MSG_TRUNC gives the whole length: %s; a short read gives %zd\n", peeked > (ssize_t)sizeof small ? "yes" : "no", taken);
    printf("after it, MSG_DONTWAIT: %s\n", errno_name(recv(fd, small, sizeof small, MSG_DONTWAIT) < 0 ? errno : 0));

    struct sockaddr_nl elsewhere = {.nl_family = AF_NETLINK, .nl_pid = 0x7654321};
    printf("sendto another port: %s\n", errno_name(sendto(fd, &one, sizeof one, 0, (struct sockaddr *)&elsewhere, sizeof elsewhere) < 0 ? errno : 0));
    close(fd);

    struct if_nameindex *names = if_nameindex();
    for (struct if_nameindex *name = names; name && name->if_index; name++)
        printf("if_nameindex: %u %s\n", name->if_index, name->if_name);
    if_freenameindex(names);
    char name[IF_NAMESIZE];
    printf("if_nametoindex(lo) %u, if_indextoname(1) %s, if_nametoindex(nothing) %u\n", if_nametoindex("lo"), if_indextoname(1, name) ? name : "(none)", if_nametoindex("nothing"));

    int inet = socket(AF_INET, SOCK_DGRAM, 0);
    struct ifreq request;
    memset(&request, 0, sizeof request);
    strcpy(request.ifr_name, "lo");
    int result = ioctl(inet, SIOCGIFINDEX, &request);
    printf("SIOCGIFINDEX lo: %s %d\n", errno_name(result < 0 ? errno : 0), request.ifr_ifindex);
    strcpy(request.ifr_name, "nothing");
    printf("SIOCGIFINDEX nothing: %s\n", errno_name(ioctl(inet, SIOCGIFINDEX, &request) < 0 ? errno : 0));
    memset(&request, 0, sizeof request);
    request.ifr_ifindex = 1;
    result = ioctl(inet, SIOCGIFNAME, &request);
    printf("SIOCGIFNAME 1: %s %s\n", errno_name(result < 0 ? errno : 0), request.ifr_name);
    result = ioctl(inet, SIOCGIFFLAGS, &request);
    unsigned wanted = IFF_UP | IFF_LOOPBACK | IFF_RUNNING;
    printf("SIOCGIFFLAGS lo: %s %s\n", errno_name(result < 0 ? errno : 0), ((unsigned)request.ifr_flags & wanted) == wanted ? "up,loopback,running" : "other");
    result = ioctl(inet, SIOCGIFMTU, &request);
    printf("SIOCGIFMTU lo: %s %d\n", errno_name(result < 0 ? errno : 0), request.ifr_mtu);
    result = ioctl(inet, SIOCGIFHWADDR, &request);
    printf("SIOCGIFHWADDR lo: %s family %d\n", errno_name(result < 0 ? errno : 0), request.ifr_hwaddr.sa_family);
    char text[64];
    result = ioctl(inet, SIOCGIFADDR, &request);
    inet_ntop(AF_INET, &((struct sockaddr_in *)&request.ifr_addr)->sin_addr, text, sizeof text);
    printf("SIOCGIFADDR lo: %s %s\n", errno_name(result < 0 ? errno : 0), text);
    result = ioctl(inet, SIOCGIFNETMASK, &request);
    inet_ntop(AF_INET, &((struct sockaddr_in *)&request.ifr_netmask)->sin_addr, text, sizeof text);
    printf("SIOCGIFNETMASK lo: %s %s\n", errno_name(result < 0 ? errno : 0), text);
    close(inet);

    struct ifaddrs *all;
    if (getifaddrs(&all) != 0) {
        printf("getifaddrs: %s\n", errno_name(errno));
        return 1;
    }
    for (struct ifaddrs *entry = all; entry; entry = entry->ifa_next) {
        char text[64] = "-";
        int family = entry->ifa_addr ? entry->ifa_addr->sa_family : -1;
        if (family == AF_INET)
            inet_ntop(AF_INET, &((struct sockaddr_in *)entry->ifa_addr)->sin_addr, text, sizeof text);
        if (family == AF_INET6)
            inet_ntop(AF_INET6, &((struct sockaddr_in6 *)entry->ifa_addr)->sin6_addr, text, sizeof text);
        printf("getifaddrs: %s family %d %s up %d\n", entry->ifa_name, family, text, (entry->ifa_flags & IFF_UP) != 0);
    }
    freeifaddrs(all);
    return 0;
}
