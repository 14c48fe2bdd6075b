/*
 * process_vm_readv and process_vm_writev (issue 23's isolation): a parent
 * reads and writes its child's memory; a fault on either side ends the
 * copy at a page boundary (the bytes before it, EFAULT when none); bad
 * flags, too many vectors, a reaped or a zombie child are refused; and a
 * process whose ids differ from its target's — or whose target changed
 * its ids and so is not dumpable — gets EPERM.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

#define PAGE 4096

static char secret[2 * PAGE];
static char *region; /* two mapped pages, the third unmapped */

/* A child that waits until a byte comes on `gate`, then exits 0 if its
 * secret starts with "written" (else 1). */
static pid_t waiting_child(int gate[2], int make_dumpable) {
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        if (make_dumpable) prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
        close(gate[1]);
        char byte;
        read(gate[0], &byte, 1);
        _exit(memcmp(secret, "written", 7) == 0 ? 0 : 1);
    }
    return child;
}

static void release(int gate[2], pid_t child, const char *label) {
    write(gate[1], "x", 1);
    int status = 0;
    waitpid(child, &status, 0);
    printf("%s: the child exited %d\n", label, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    close(gate[0]);
    close(gate[1]);
}

static void parent_and_child(void) {
    int gate[2];
    pipe(gate);
    pid_t child = waiting_child(gate, 0);
    char first[3000], second[PAGE * 2 - 3000];
    struct iovec local[2] = {{first, sizeof first}, {second, sizeof second}};
    struct iovec remote = {secret, sizeof secret};
    CHECK("read the child's 8 KiB into two vectors", process_vm_readv(child, local, 2, &remote, 1, 0));
    int same = 1;
    for (size_t index = 0; index < sizeof secret; index++) {
        char got = index < sizeof first ? first[index] : second[index - sizeof first];
        same &= got == secret[index];
    }
    EXPECT("  the bytes are the child's", same);
    char big[3 * PAGE];
    struct iovec whole = {big, sizeof big}, into_hole = {region, 3 * PAGE};
    CHECK("read 3 pages of which the third is unmapped", process_vm_readv(child, &whole, 1, &into_hole, 1, 0));
    struct iovec hole = {region + 2 * PAGE, 16};
    CHECK("read only unmapped bytes", process_vm_readv(child, &whole, 1, &hole, 1, 0));
    struct iovec bad_local = {region + 2 * PAGE, 16};
    CHECK("read into an unmapped local buffer", process_vm_readv(child, &bad_local, 1, &remote, 1, 0));
    CHECK("flags 1", process_vm_readv(child, local, 2, &remote, 1, 1));
    CHECK("1025 local vectors", process_vm_readv(child, local, 1025, &remote, 1, 0));
    struct iovec empty = {first, 0};
    CHECK("an empty local buffer (pid not even looked at)", process_vm_readv(-5, &empty, 1, &remote, 1, 0));
    CHECK("pid -5", process_vm_readv(-5, local, 2, &remote, 1, 0));
    struct iovec message = {"written", 7}, target = {secret, 7};
    CHECK("write 7 bytes into the child", process_vm_writev(child, &message, 1, &target, 1, 0));
    EXPECT("  the caller's own copy of the page (shared copy-on-write) is unchanged", memcmp(secret, "written", 7) != 0);
    release(gate, child, "after the write");
    CHECK("read a reaped child", process_vm_readv(child, local, 2, &remote, 1, 0));
    fflush(stdout);
    pid_t zombie = fork();
    if (zombie == 0) _exit(0);
    usleep(100 * 1000);
    CHECK("read a zombie", process_vm_readv(zombie, local, 2, &remote, 1, 0));
    waitpid(zombie, NULL, 0);
    char own[8];
    struct iovec own_local = {own, 8}, own_remote = {secret, 8};
    CHECK("read the caller itself", process_vm_readv(getpid(), &own_local, 1, &own_remote, 1, 0));
}

/* As uid 1000: root's memory, a child that inherited "not dumpable", and
 * a child that made itself dumpable again. */
static void other_users(void) {
    pid_t root_pid = getpid();
    fflush(stdout);
    pid_t user = fork();
    if (user == 0) {
        setresgid(1000, 1000, 1000);
        setresuid(1000, 1000, 1000);
        char buffer[16];
        struct iovec local = {buffer, 16}, remote = {secret, 16};
        CHECK("uid 1000 reads root's process", process_vm_readv(root_pid, &local, 1, &remote, 1, 0));
        CHECK("  and its own dumpable flag is", prctl(PR_GET_DUMPABLE, 0, 0, 0, 0));
        int gate[2];
        pipe(gate);
        pid_t child = waiting_child(gate, 0);
        CHECK("uid 1000 reads its child that is not dumpable", process_vm_readv(child, &local, 1, &remote, 1, 0));
        release(gate, child, "not dumpable");
        pipe(gate);
        child = waiting_child(gate, 1);
        usleep(100 * 1000);
        CHECK("uid 1000 reads its child that made itself dumpable", process_vm_readv(child, &local, 1, &remote, 1, 0));
        release(gate, child, "dumpable");
        fflush(stdout);
        _exit(0);
    }
    waitpid(user, NULL, 0);
}

int main(void) {
    for (size_t index = 0; index < sizeof secret; index++) secret[index] = (char)(index * 13 + 5);
    region = mmap(NULL, 3 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(region, 'r', 2 * PAGE);
    munmap(region + 2 * PAGE, PAGE);
    parent_and_child();
    other_users();
    return 0;
}
