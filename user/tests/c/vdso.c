/*
 * The vDSO: the kernel names an ELF image in AT_SYSINFO_EHDR whose
 * LINUX_2.6 symbols answer clock_gettime, gettimeofday and time in user
 * mode; its readings agree with the system calls, follow settimeofday,
 * fall back to the call for other clocks, and its pages are not writable.
 * Output is identical on Lamina and Linux.
 */
#include <elf.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

typedef long (*clock_gettime_fn)(long, struct timespec *);
typedef long (*gettimeofday_fn)(struct timeval *, void *);
typedef long (*time_fn)(long *);

static const Elf64_Ehdr *image;
static const Elf64_Sym *symbols;
static const char *names;
static const Elf64_Half *versions;
static const Elf64_Verdef *definitions;
static uint32_t symbol_count;
static uintptr_t bias;

/* Finds the dynamic section through the program headers, as a C library does. */
static int read_image(void) {
    image = (const Elf64_Ehdr *)getauxval(AT_SYSINFO_EHDR);
    if (!image || memcmp(image->e_ident, ELFMAG, SELFMAG) != 0) return 0;
    const Elf64_Phdr *headers = (const Elf64_Phdr *)((const char *)image + image->e_phoff);
    const Elf64_Dyn *dynamic = 0;
    for (int i = 0; i < image->e_phnum; i++) {
        if (headers[i].p_type == PT_LOAD && !bias) bias = (uintptr_t)image + headers[i].p_offset - headers[i].p_vaddr;
        if (headers[i].p_type == PT_DYNAMIC) dynamic = (const Elf64_Dyn *)((const char *)image + headers[i].p_offset);
    }
    if (!dynamic) return 0;
    const uint32_t *hash = 0;
    for (const Elf64_Dyn *entry = dynamic; entry->d_tag != DT_NULL; entry++) {
        const void *at = (const void *)(bias + entry->d_un.d_ptr);
        switch (entry->d_tag) {
        case DT_SYMTAB: symbols = at; break;
        case DT_STRTAB: names = at; break;
        case DT_HASH: hash = at; break;
        case DT_VERSYM: versions = at; break;
        case DT_VERDEF: definitions = at; break;
        }
    }
    if (!symbols || !names || !hash) return 0;
    symbol_count = hash[1];
    return 1;
}

/* The name of version index `index`, from the version definitions. */
static const char *version_name(Elf64_Half index) {
    const Elf64_Verdef *definition = definitions;
    while (definition) {
        if ((definition->vd_ndx & 0x7fff) == (index & 0x7fff)) {
            const Elf64_Verdaux *aux = (const Elf64_Verdaux *)((const char *)definition + definition->vd_aux);
            return names + aux->vda_name;
        }
        definition = definition->vd_next ? (const Elf64_Verdef *)((const char *)definition + definition->vd_next) : 0;
    }
    return "";
}

static void *find(const char *name) {
    for (uint32_t i = 0; i < symbol_count; i++) {
        const Elf64_Sym *symbol = &symbols[i];
        if (ELF64_ST_TYPE(symbol->st_info) != STT_FUNC || symbol->st_shndx == SHN_UNDEF) continue;
        if (strcmp(names + symbol->st_name, name) != 0) continue;
        if (versions && definitions && strcmp(version_name(versions[i]), "LINUX_2.6") != 0) continue;
        return (void *)(bias + symbol->st_value);
    }
    return 0;
}

static long long nanoseconds(struct timespec at) { return (long long)at.tv_sec * 1000000000LL + at.tv_nsec; }

static long long by_call(long clock) {
    struct timespec at;
    syscall(SYS_clock_gettime, clock, &at);
    return nanoseconds(at);
}

int main(void) {
    setvbuf(stdout, 0, _IONBF, 0);
    EXPECT("AT_SYSINFO_EHDR names an ELF image", read_image());
    clock_gettime_fn vdso_clock_gettime = (clock_gettime_fn)find("__vdso_clock_gettime");
    gettimeofday_fn vdso_gettimeofday = (gettimeofday_fn)find("__vdso_gettimeofday");
    time_fn vdso_time = (time_fn)find("__vdso_time");
    EXPECT("__vdso_clock_gettime@LINUX_2.6", vdso_clock_gettime != 0);
    EXPECT("__vdso_gettimeofday@LINUX_2.6", vdso_gettimeofday != 0);
    EXPECT("__vdso_time@LINUX_2.6", vdso_time != 0);
    EXPECT("__vdso_getcpu@LINUX_2.6", find("__vdso_getcpu") != 0);
    if (!vdso_clock_gettime || !vdso_gettimeofday || !vdso_time) return 1;

    /* Each reading lies between two system-call readings of the same clock. */
    long clocks[] = {CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_BOOTTIME};
    const char *clock_names[] = {"CLOCK_REALTIME", "CLOCK_MONOTONIC", "CLOCK_BOOTTIME"};
    for (int i = 0; i < 3; i++) {
        int ordered = 1;
        for (int round = 0; round < 1000; round++) {
            struct timespec at;
            long long before = by_call(clocks[i]);
            long result = vdso_clock_gettime(clocks[i], &at);
            long long after = by_call(clocks[i]);
            ordered &= result == 0 && before <= nanoseconds(at) && nanoseconds(at) <= after && at.tv_nsec < 1000000000;
        }
        printf("vdso %s between two system calls, 1000 times: %s\n", clock_names[i], ordered ? "yes" : "no");
    }
    struct timeval tv;
    long long before = by_call(CLOCK_REALTIME) / 1000;
    long result = vdso_gettimeofday(&tv, 0);
    long long after = by_call(CLOCK_REALTIME) / 1000;
    long long micro = (long long)tv.tv_sec * 1000000 + tv.tv_usec;
    EXPECT("vdso gettimeofday between two clock_gettime calls", result == 0 && before <= micro && micro <= after);
    long seconds = 0;
    long returned = vdso_time(&seconds);
    EXPECT("vdso time agrees with clock_gettime", returned == seconds && labs(returned - by_call(CLOCK_REALTIME) / 1000000000) <= 1);

    /* Other clocks: the answer of the system call. */
    struct timespec cpu;
    EXPECT("vdso CLOCK_PROCESS_CPUTIME_ID answers", vdso_clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu) == 0 && nanoseconds(cpu) > 0);
    printf("vdso clock 999: %ld\n", vdso_clock_gettime(999, &cpu));

    /* settimeofday moves what the vDSO reads. */
    struct timeval now;
    gettimeofday(&now, 0);
    struct timeval later = {now.tv_sec + 100000, now.tv_usec};
    CHECK("settimeofday +100000 s", settimeofday(&later, 0));
    struct timespec moved;
    vdso_clock_gettime(CLOCK_REALTIME, &moved);
    EXPECT("vdso CLOCK_REALTIME moved with it", moved.tv_sec >= later.tv_sec && moved.tv_sec <= later.tv_sec + 5);
    struct timespec monotonic_before, monotonic_after;
    vdso_clock_gettime(CLOCK_MONOTONIC, &monotonic_before);
    gettimeofday(&later, 0);
    struct timeval back = {later.tv_sec - 100000, later.tv_usec};
    CHECK("settimeofday back", settimeofday(&back, 0));
    vdso_clock_gettime(CLOCK_MONOTONIC, &monotonic_after);
    EXPECT("vdso CLOCK_MONOTONIC did not move", nanoseconds(monotonic_after) >= nanoseconds(monotonic_before) && nanoseconds(monotonic_after) - nanoseconds(monotonic_before) < 5000000000LL);
    time_t restored = time(0);
    EXPECT("libc time() is back", labs((long)(restored - now.tv_sec)) <= 5);

    /* The image is not writable: a store kills the child with SIGSEGV. */
    pid_t child = fork();
    if (child == 0) {
        *(volatile char *)image = 0;
        _exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    EXPECT("writing the vDSO image: SIGSEGV", WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV);
    /* A forked child has the vDSO too. */
    child = fork();
    if (child == 0) {
        struct timespec at;
        _exit(vdso_clock_gettime(CLOCK_MONOTONIC, &at) == 0 && getauxval(AT_SYSINFO_EHDR) == (unsigned long)image ? 7 : 1);
    }
    waitpid(child, &status, 0);
    EXPECT("a forked child reads the clock through it", WIFEXITED(status) && WEXITSTATUS(status) == 7);
    return 0;
}
