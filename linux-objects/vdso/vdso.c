/*
 * Lamina's vDSO: the clock calls answered in user mode, as Linux's vDSO
 * answers them, so that reading the time costs no system call.
 *
 * The kernel maps this image (one read-and-execute segment, linked by
 * vdso.lds) into every program, with its data page -- `struct vvar`,
 * read-only to user space -- in the page just below the image's ELF
 * header, and names the header in the auxiliary vector (AT_SYSINFO_EHDR).
 * The uptime is the time-stamp counter since the kernel's calibration,
 * computed exactly as the kernel computes it (machine::timer), so a
 * reading here and one by the system call agree; CLOCK_REALTIME adds the
 * epoch the kernel keeps in the page (one aligned word, stored whole).
 * Any other clock, a timezone argument, or a page the kernel has not
 * filled falls back to the system call.
 *
 * May not use data of its own (the image is mapped read-only and shared
 * by every process), call anything outside this file, or divide 128-bit
 * numbers (no libgcc here).
 */

typedef unsigned long u64;
typedef long s64;

/* linux_abi::vdso: the data page's layout. */
struct vvar {
    u64 magic;          /* VVAR_MAGIC once the kernel filled the page */
    u64 boot_tsc;       /* the TSC at uptime 0 */
    u64 tsc_per_ms;     /* TSC cycles per millisecond */
    u64 boot_epoch_ns;  /* CLOCK_REALTIME at uptime 0, in nanoseconds */
};

#define VVAR_MAGIC 0x4c414d494e415656UL /* "LAMINAVV" */
#define PAGE_SIZE 4096

struct timespec { s64 tv_sec; s64 tv_nsec; };
struct timeval { s64 tv_sec; s64 tv_usec; };

enum { SYS_gettimeofday = 96, SYS_time = 201, SYS_clock_gettime = 228, SYS_clock_getres = 229, SYS_getcpu = 309 };
enum { CLOCK_REALTIME = 0, CLOCK_MONOTONIC = 1, CLOCK_MONOTONIC_RAW = 4, CLOCK_REALTIME_COARSE = 5,
       CLOCK_MONOTONIC_COARSE = 6, CLOCK_BOOTTIME = 7 };

/* The image's own ELF header (the linker defines it): the page below it
   is the data page. */
extern const char __ehdr_start[] __attribute__((visibility("hidden")));

static const volatile struct vvar *data_page(void)
{
    /* The page lies outside the header "object" as C sees it: pass the
       address through an empty asm so that the compiler takes it as an
       address, not as an index into __ehdr_start. */
    const char *header;
    __asm__("" : "=r"(header) : "0"(__ehdr_start));
    return (const volatile struct vvar *)(header - PAGE_SIZE);
}

static s64 system_call(s64 number, s64 first, s64 second, s64 third)
{
    s64 result;
    __asm__ volatile("syscall" : "=a"(result) : "a"(number), "D"(first), "S"(second), "d"(third) : "rcx", "r11", "memory");
    return result;
}

static u64 read_tsc(void)
{
    unsigned int low, high;
    __asm__ volatile("rdtsc" : "=a"(low), "=d"(high));
    return ((u64)high << 32) | low;
}

/* Nanoseconds since boot, or 0 with *ok cleared when the page is not
   filled. floor(elapsed * 1e6 / per_ms), split so that nothing needs
   128 bits: elapsed = ms * per_ms + rest. */
static inline __attribute__((always_inline)) u64 uptime_ns(const volatile struct vvar *page, int *ok)
{
    u64 per_ms = page->tsc_per_ms, boot = page->boot_tsc;
    if (page->magic != VVAR_MAGIC || per_ms == 0) {
        *ok = 0;
        return 0;
    }
    u64 now = read_tsc();
    u64 elapsed = now > boot ? now - boot : 0;
    u64 ms = elapsed / per_ms, rest = elapsed % per_ms;
    *ok = 1;
    return ms * 1000000UL + rest * 1000000UL / per_ms;
}

/* The reading of `clock`, or *ok cleared when the system call must answer. */
static inline __attribute__((always_inline)) u64 clock_ns(s64 clock, int *ok)
{
    const volatile struct vvar *page = data_page();
    switch (clock) {
    case CLOCK_REALTIME:
    case CLOCK_REALTIME_COARSE: {
        u64 uptime = uptime_ns(page, ok);
        return page->boot_epoch_ns + uptime;
    }
    case CLOCK_MONOTONIC:
    case CLOCK_MONOTONIC_RAW:
    case CLOCK_MONOTONIC_COARSE:
    case CLOCK_BOOTTIME:
        return uptime_ns(page, ok);
    default:
        *ok = 0;
        return 0;
    }
}

s64 __vdso_clock_gettime(s64 clock, struct timespec *ts)
{
    int ok;
    u64 now = clock_ns(clock, &ok);
    if (!ok)
        return system_call(SYS_clock_gettime, clock, (s64)ts, 0);
    ts->tv_sec = (s64)(now / 1000000000UL);
    ts->tv_nsec = (s64)(now % 1000000000UL);
    return 0;
}

s64 __vdso_gettimeofday(struct timeval *tv, void *tz)
{
    int ok;
    u64 now = clock_ns(CLOCK_REALTIME, &ok);
    if (!ok || tz)
        return system_call(SYS_gettimeofday, (s64)tv, (s64)tz, 0);
    if (tv) {
        tv->tv_sec = (s64)(now / 1000000000UL);
        tv->tv_usec = (s64)(now % 1000000000UL / 1000UL);
    }
    return 0;
}

s64 __vdso_time(s64 *t)
{
    int ok;
    u64 now = clock_ns(CLOCK_REALTIME, &ok);
    if (!ok)
        return system_call(SYS_time, (s64)t, 0, 0);
    s64 seconds = (s64)(now / 1000000000UL);
    if (t)
        *t = seconds;
    return seconds;
}

s64 __vdso_clock_getres(s64 clock, struct timespec *res)
{
    return system_call(SYS_clock_getres, clock, (s64)res, 0);
}

s64 __vdso_getcpu(unsigned int *cpu, unsigned int *node, void *unused)
{
    return system_call(SYS_getcpu, (s64)cpu, (s64)node, (s64)unused);
}

/* The names without the prefix, as Linux's vDSO also gives them. */
s64 clock_gettime(s64, struct timespec *) __attribute__((weak, alias("__vdso_clock_gettime")));
s64 gettimeofday(struct timeval *, void *) __attribute__((weak, alias("__vdso_gettimeofday")));
s64 time(s64 *) __attribute__((weak, alias("__vdso_time")));
s64 clock_getres(s64, struct timespec *) __attribute__((weak, alias("__vdso_clock_getres")));
s64 getcpu(unsigned int *, unsigned int *, void *) __attribute__((weak, alias("__vdso_getcpu")));
