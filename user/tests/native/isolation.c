/*
 * Isolation through capabilities (issue 23): what a process can reach is
 * exactly what its capability space holds. A child forked before its
 * parent made some memory finds it in none of its 4,096 slots, however it
 * guesses; a derived capability never has more rights than its parent and
 * cannot be mapped with more; a revoked capability's slot is empty and its
 * mapping gone (the next access faults); slot numbers past the space and
 * kernel addresses as buffers are errors. Lamina only; each line says what
 * was checked, and the tier passes the test when it exits 0 with no "FAIL".
 * And W^X: no page is writable and executable at once (mmap and mprotect
 * asking for both: EACCES; Linux allows it).
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <lamina/native.h>

static int failures;

static void check(const char *what, int ok) {
    printf("%s %s\n", ok ? "ok" : "FAIL", what);
    if (!ok) failures++;
}

static sigjmp_buf recover;

static void on_fault(int signal) {
    siglongjmp(recover, signal);
}

/* Whether reading `address` faults. */
static int read_faults(volatile char *address) {
    struct sigaction action = {.sa_handler = on_fault}, old;
    sigaction(SIGSEGV, &action, &old);
    int faulted = 0;
    if (sigsetjmp(recover, 1) == 0) {
        (void)*address;
    } else {
        faulted = 1;
    }
    sigaction(SIGSEGV, &old, NULL);
    return faulted;
}

/* A page-aligned place no mapping holds (reserved, then given back). */
static char *free_place(size_t bytes) {
    char *place = mmap(NULL, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(place, bytes);
    return place;
}

/* The child: told the parent's slot and object, it looks in every slot. */
static int guess_everything(int from_parent) {
    uint64_t told[2];
    if (read(from_parent, told, sizeof told) != sizeof told) return 2;
    struct lamina_cap_info record;
    int found = 0;
    for (uint64_t slot = 0; slot < 4096; slot++)
        if (lamina_info(slot, &record) == 0 && record.object == told[1]) found++;
    char *place = free_place(4 * 4096);
    int64_t mapped = lamina_map(told[0], place, LAMINA_READ);
    printf("  child: slots holding the parent's memory: %d; cap_map of the parent's slot: %s\n", found,
           mapped == -EBADF ? "EBADF" : mapped == 0 ? "mapped" : "another error");
    return found == 0 && mapped != 0 ? 0 : 1;
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    int channel[2];
    if (pipe(channel) != 0) return 1;
    pid_t child = fork();
    if (child == 0) _exit(guess_everything(channel[0]));

    int64_t memory = lamina_create_memory(4, LAMINA_ALL);
    check("cap_create_memory(4 pages)", memory >= 0);
    struct lamina_cap_info record;
    check("cap_info of it", lamina_info(memory, &record) == 0 && record.kind == 1 && record.object_size == 4 * 4096);
    char *place = free_place(4 * 4096);
    check("cap_map it read-write", lamina_map(memory, place, LAMINA_READ | LAMINA_WRITE) == 0);
    strcpy(place, "the parent's secret");

    uint64_t told[2] = {(uint64_t)memory, record.object};
    if (write(channel[1], told, sizeof told) != sizeof told) return 1;
    int status = 0;
    waitpid(child, &status, 0);
    check("a child forked before it cannot reach the parent's memory by any slot", WIFEXITED(status) && WEXITSTATUS(status) == 0);

    /* Rights only shrink. */
    int64_t reader = lamina_derive(memory, LAMINA_READ);
    check("cap_derive read-only", reader >= 0 && lamina_info(reader, &record) == 0 && record.rights == LAMINA_READ);
    int64_t widened = lamina_derive(reader, LAMINA_ALL);
    check("deriving all rights from it gives read only (or is refused)",
          widened == -EACCES || (widened >= 0 && lamina_info(widened, &record) == 0 && (record.rights & ~LAMINA_READ) == 0));
    char *view = free_place(4 * 4096);
    check("cap_map of the read-only copy for writing: EACCES", lamina_map(reader, view, LAMINA_READ | LAMINA_WRITE) == -EACCES);
    check("cap_map of it for reading", lamina_map(reader, view, LAMINA_READ) == 0);
    check("  the copy shows the parent's bytes", strcmp(view, "the parent's secret") == 0);

    /* Revocation empties slots and takes mappings away. */
    int64_t removed = lamina_revoke(memory, 1);
    check("cap_revoke of the copies", removed >= 1);
    check("  the copy's slot is empty: EBADF", lamina_info(reader, &record) == -EBADF);
    check("  the copy's mapping is gone: a read faults", read_faults(view));
    check("  the original still works", strcmp(place, "the parent's secret") == 0);
    int64_t again = lamina_create_memory(1, LAMINA_ALL);
    struct lamina_cap_info fresh;
    check("  a new capability in a freed slot names the new object, not the old",
          again >= 0 && lamina_info(again, &fresh) == 0 && fresh.object_size == 4096);

    /* Bad slots and kernel addresses. */
    check("cap_info(4096): EBADF", lamina_info(4096, &record) == -EBADF);
    check("cap_info(2^40): EBADF", lamina_info(1ull << 40, &record) == -EBADF);
    check("cap_info(-1): EBADF", lamina_info((uint64_t)-1, &record) == -EBADF);
    check("cap_info into kernel memory: EFAULT", lamina_info(memory, (void *)0xffffffff80000000ull) == -EFAULT);
    check("cap_info into a non-canonical address: EFAULT", lamina_info(memory, (void *)0x0000900000000000ull) == -EFAULT);
    check("cap_map at a kernel address: refused", lamina_map(again, (void *)0xffffffff80000000ull, LAMINA_READ) < 0);
    check("cap_map at an unaligned address: EINVAL", lamina_map(again, place + 1, LAMINA_READ) == -EINVAL);
    check("cap_map over a mapped page: EEXIST", lamina_map(again, place, LAMINA_READ) == -EEXIST);
    check("cap_revoke(memory) with itself", lamina_revoke(memory, 0) >= 1);
    check("  its mapping is gone: a read faults", read_faults(place));
    /* W^X. */
    void *both = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    check("mmap writable and executable: EACCES (W^X)", both == MAP_FAILED && errno == EACCES);
    char *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    check("mprotect of a writable page to writable and executable: EACCES",
          page != MAP_FAILED && mprotect(page, 4096, PROT_READ | PROT_WRITE | PROT_EXEC) == -1 && errno == EACCES);
    check("  to read and execute: allowed", page != MAP_FAILED && mprotect(page, 4096, PROT_READ | PROT_EXEC) == 0);
    printf("%s\n", failures ? "isolation: FAIL" : "isolation: all checks passed");
    return failures ? 1 : 0;
}
