/*
 * Address-space randomisation (issue 23): each new program gets its stack,
 * its mmap area, its vDSO and its brk at addresses of their own, as Linux
 * gives them with randomize_va_space = 2; with personality
 * ADDR_NO_RANDOMIZE (what `setarch -R` sets) every run gets the same
 * addresses, and the flag is kept across fork and execve.
 *
 * The program runs copies of itself (argv[0] with "report"), which write
 * their addresses into a pipe. Nothing printed depends on the addresses
 * themselves. With 5 runs the chance that a randomised region lands at one
 * address every time is below 2^-52 (brk, the least random, has 2^13 places).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdio.h>

#define RUNS 5
#define REGIONS 5

static const char *region_names[REGIONS] = {"stack page", "stack variable", "mmap", "vDSO", "brk"};

struct addresses {
    uintptr_t region[REGIONS];
};

/* In a copy: where each region is, written to descriptor 1. */
static int report(void) {
    int on_stack = 0;
    struct addresses found;
    found.region[0] = (uintptr_t)&on_stack & ~(uintptr_t)0xfff;
    found.region[1] = (uintptr_t)&on_stack;
    void *mapped = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    found.region[2] = (uintptr_t)mapped;
    found.region[3] = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
    found.region[4] = (uintptr_t)sbrk(0);
    return write(1, &found, sizeof found) == sizeof found ? 0 : 1;
}

/* Runs `program report` once; its addresses, or 0 on failure. */
static int run_copy(const char *program, struct addresses *found) {
    int ends[2];
    if (pipe(ends) != 0) return 0;
    pid_t child = fork();
    if (child == 0) {
        dup2(ends[1], 1);
        close(ends[0]);
        close(ends[1]);
        execl(program, program, "report", (char *)NULL);
        _exit(127);
    }
    close(ends[1]);
    ssize_t got = read(ends[0], found, sizeof *found);
    close(ends[0]);
    int status = 0;
    waitpid(child, &status, 0);
    return got == sizeof *found && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* For each region: how many distinct addresses RUNS copies saw. */
static void distinct_per_region(const char *program, int distinct[REGIONS]) {
    struct addresses runs[RUNS];
    for (int run = 0; run < RUNS; run++) {
        if (!run_copy(program, &runs[run])) {
            printf("run %d: the copy failed\n", run);
            memset(distinct, 0, sizeof(int) * REGIONS);
            return;
        }
    }
    for (int region = 0; region < REGIONS; region++) {
        distinct[region] = 0;
        for (int run = 0; run < RUNS; run++) {
            int seen = 0;
            for (int before = 0; before < run; before++) {
                seen |= runs[before].region[region] == runs[run].region[region];
            }
            distinct[region] += !seen;
        }
    }
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "report") == 0) return report();

    int old = personality(0xffffffff);
    printf("personality at start: %#x\n", old);

    int distinct[REGIONS];
    distinct_per_region(argv[0], distinct);
    for (int region = 0; region < REGIONS; region++) {
        printf("randomised: %s differs between runs: %s\n", region_names[region], distinct[region] > 1 ? "yes" : "no");
    }

    int before = personality(ADDR_NO_RANDOMIZE);
    printf("personality(ADDR_NO_RANDOMIZE) returned the old value: %s\n", before == old ? "yes" : "no");
    printf("personality now: %#x\n", personality(0xffffffff));
    distinct_per_region(argv[0], distinct);
    for (int region = 0; region < REGIONS; region++) {
        printf("ADDR_NO_RANDOMIZE: %s the same in every run: %s\n", region_names[region], distinct[region] == 1 ? "yes" : "no");
    }

    /* Kept across fork (the copies above saw it across execve). */
    pid_t child = fork();
    if (child == 0) _exit(personality(0xffffffff) == ADDR_NO_RANDOMIZE ? 0 : 1);
    int status = 0;
    waitpid(child, &status, 0);
    printf("a forked child keeps the flag: %s\n", WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "yes" : "no");

    personality(0);
    distinct_per_region(argv[0], distinct);
    printf("flag cleared: the stack differs between runs again: %s\n", distinct[0] > 1 ? "yes" : "no");
    return 0;
}
