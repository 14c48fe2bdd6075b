/*
 * capget(2): root's capability sets (every capability effective and
 * permitted, none inheritable), none after setuid to a user, the header
 * versions (1: one word per set; 2, 3: two; unknown: version 3 written
 * back, EINVAL, or 0 without a data buffer), another process's sets, and
 * the errors for a negative pid, a missing process and a bad header.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

/* <linux/capability.h>'s, which musl's headers do not carry. */
#define _LINUX_CAPABILITY_VERSION_1 0x19980330
#define _LINUX_CAPABILITY_VERSION_2 0x20071026
#define _LINUX_CAPABILITY_VERSION_3 0x20080522
struct __user_cap_header_struct {
    uint32_t version;
    int pid;
};
struct __user_cap_data_struct {
    uint32_t effective, permitted, inheritable;
};

static long capget_raw(struct __user_cap_header_struct *header, struct __user_cap_data_struct *data) {
    return syscall(SYS_capget, header, data);
}

static void show(const char *what, int version, int pid) {
    struct __user_cap_header_struct header = {(unsigned)version, pid};
    struct __user_cap_data_struct data[2] = {{0xdead, 0xdead, 0xdead}, {0xdead, 0xdead, 0xdead}};
    long result = capget_raw(&header, data);
    printf("%s: %ld %s; effective %08x %08x permitted %08x %08x inheritable %08x %08x\n", what, result, errno_name(result ? errno : 0),
           data[0].effective, data[1].effective, data[0].permitted, data[1].permitted, data[0].inheritable, data[1].inheritable);
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    show("version 3, self", _LINUX_CAPABILITY_VERSION_3, 0);
    show("version 2, own pid", _LINUX_CAPABILITY_VERSION_2, getpid());
    show("version 1, self", _LINUX_CAPABILITY_VERSION_1, 0);

    struct __user_cap_header_struct header = {0x12345678, 0};
    struct __user_cap_data_struct data[2];
    long result = capget_raw(&header, data);
    printf("unknown version: %ld %s, header now %08x\n", result, errno_name(result ? errno : 0), header.version);
    header.version = 0x12345678;
    result = capget_raw(&header, NULL);
    printf("unknown version, no data: %ld %s, header now %08x\n", result, errno_name(result ? errno : 0), header.version);
    header.version = _LINUX_CAPABILITY_VERSION_3;
    CHECK("version 3, no data", capget_raw(&header, NULL));
    header.pid = -1;
    CHECK("pid -1", capget_raw(&header, data));
    header.pid = 999999;
    CHECK("a pid nobody has", capget_raw(&header, data));
    CHECK("a bad header", capget_raw((void *)8, data));

    int report[2];
    if (pipe(report) != 0) return 1;
    pid_t child = fork();
    if (child == 0) {
        if (setuid(1000) != 0) _exit(1);
        show("after setuid(1000)", _LINUX_CAPABILITY_VERSION_3, 0);
        char done = 1;
        if (write(report[1], &done, 1) != 1) _exit(1);
        pause();
        _exit(0);
    }
    char done;
    if (read(report[0], &done, 1) != 1) return 1;
    char what[64];
    snprintf(what, sizeof what, "the user's child, asked by root");
    show(what, _LINUX_CAPABILITY_VERSION_3, child);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    return 0;
}
