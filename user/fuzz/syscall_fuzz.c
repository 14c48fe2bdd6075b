/* syscall_fuzz: Lamina's system-call fuzzer (issue 23), a static program
 * run in the guest. Trinity-style: every call in its table gets arguments
 * drawn from what each argument is (descriptors it holds, mapped and
 * unmapped addresses, lengths at boundaries, flag combinations, paths in
 * a scratch tree, signal numbers), from several processes and threads at
 * once, with forks, clones and signals in between.
 *
 *   syscall_fuzz [-s SEED] [-n CALLS] [-p PROCS] [-t THREADS] [-r ROUNDS] [-m MASK] [-L]
 *   syscall_fuzz -R WORKER_SEED [-n CALLS] [-m MASK] [-v]   replay one worker alone
 *
 * -m MASK makes only about a quarter of the calls (MASK chooses which:
 * `cargo xtask fuzz` keeps the seeds and masks that reached new kernel
 * code and tries their neighbours); -L fails the run on lost memory; -w
 * prints every worker's state every 5 s; -H waits after a hang so that
 * a debugger can look (QEMU's -s).
 *
 * The parent never makes a fuzzed call. Each round it starts PROCS
 * workers (each with THREADS threads), watches their progress through a
 * shared page, kills a worker that stops making progress (a call may
 * block for ever by design: pause, a read of an empty pipe) and starts
 * another until the round's calls are made. A worker that does not go
 * away after SIGKILL is a kernel hang: reported with the call it was in,
 * and the run fails. After the last round it kills every process left
 * (it is their subreaper), removes the scratch tree and the IPC objects
 * the workers could make, and compares free memory with what it was
 * after the first round (a leak grows with the rounds).
 *
 * Reproducible: worker w of round r starts from seed mix(SEED, r, w),
 * printed when it is killed or hangs; `-R` replays that worker's calls
 * alone, in one thread (`-v` prints each call and its result). The
 * fuzzer runs itself again with ADDR_NO_RANDOMIZE first (as `setarch -R`
 * would), so a replay also meets the same addresses.
 *
 * What it may not do: fuzz anything that reaches past its own processes
 * (pids are its own workers and their children; no mount, reboot, clock
 * setting, kexec or module calls), nor hand the kernel addresses of its
 * own code, stack or bookkeeping as places to write (only its buffers,
 * its arena and addresses that are not mapped). A worker's stdin, stdout
 * and stderr are /dev/null: only the parent writes to the console.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/personality.h>
#include <sys/mman.h>
#include <sys/msg.h>
#include <sys/prctl.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_WORKERS 16
#define MAX_THREADS 4
#define SCRATCH "/tmp/fuzz"
#define BUFFER_PAGES 16
#define PAGE 4096UL
#define ARENA_BYTES (64UL << 20)
#define POOL_FDS 64
#define IPC_KEY_BASE 0x4c460000
#define IPC_KEYS 8
/* A worker that makes no call for this long is killed (and replaced). */
#define STALL_MS 3000
/* A worker that has not ended this long after SIGKILL is a kernel hang. */
#define HANG_MS 20000

/* ---- the shared page: what each worker is doing ---- */

struct slot {
    _Atomic uint64_t calls;    /* calls made so far */
    _Atomic uint64_t seed;     /* the worker's seed */
    _Atomic int32_t pid;       /* 0: free */
    _Atomic int32_t number;    /* the call in progress (-1: none) */
    _Atomic uint64_t args[6];
};

/* IPC objects any worker made, for the parent to remove at the end. */
#define IPC_IDS 8192

struct shared {
    struct slot slots[MAX_WORKERS];
    _Atomic uint32_t ipc_next;
    _Atomic int32_t ipc_ids[IPC_IDS]; /* kind << 28 | id; 0: none */
};

static struct shared *shared;

/* ---- random numbers ---- */

static uint64_t mix(uint64_t a, uint64_t b) {
    uint64_t z = a + 0x9e3779b97f4a7c15ULL * (b + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

struct rng {
    uint64_t state;
};

static uint64_t next(struct rng *r) {
    r->state ^= r->state << 13;
    r->state ^= r->state >> 7;
    r->state ^= r->state << 17;
    return r->state;
}

static uint64_t below(struct rng *r, uint64_t n) { return n ? next(r) % n : 0; }
static int chance(struct rng *r, unsigned percent) { return below(r, 100) < percent; }

/* ---- what the workers work on ---- */

static unsigned char *buffers;     /* BUFFER_PAGES pages, then a PROT_NONE guard */
static unsigned char *arena;       /* ARENA_BYTES reserved for the memory calls */
static pid_t siblings[MAX_WORKERS];
static int sibling_count;
static pid_t own_children[8];
static _Atomic int own_child_count;
static int pool[POOL_FDS];
static _Atomic unsigned pool_next;
static int scratch_fds[4];
static int my_slot;
static int verbose;
static int watch; /* -w: what every worker does, every 5 s */
static int hold;  /* -H: after a hang, wait for a debugger instead of ending */
/* The parent's main loop's last sign of life and what it was doing,
 * for its watcher thread. */
static _Atomic uint64_t parent_alive;
static const char *_Atomic parent_doing = "starting";
static _Atomic uint64_t calls_left;
static _Atomic int fd_pair[2];

static const char *const fixed_paths[] = {
    "f0", "f1", "f2", "f3", "d0", "d1", "d0/f4", "d0/d2", "l0", "l1", "p0", "s0",
    SCRATCH "/f0", SCRATCH "/d1/f5", "d0/../f1", "./f2", "f0/", "nonexistent/x",
    "/proc/self/status", "/proc/self/maps", "/proc/self/fd", "/proc/meminfo", "/dev/null",
    "/dev/zero", "/", "/proc", "/tmp", "/nonexistent", "",
};
/* Paths a call may change (create, remove, rename, truncate, chmod...). */
static const char *const scratch_paths[] = {
    "f0", "f1", "f2", "f3", "d0", "d1", "d0/f4", "d0/d2", "l0", "l1", "p0", "s0",
    SCRATCH "/f0", SCRATCH "/d1/f5", "d0/../f1", "./f2", "f0/", "nonexistent/x", "",
};
#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

static char long_name[300];
/* Read-only data: an address the kernel may read but not write. */
static const unsigned char read_only_anchor[64] = {1};
static char too_long_path[5000];

/* ---- argument kinds ---- */

enum kind {
    K_NONE,    /* 0 */
    K_ANY,     /* anything below */
    K_FD,      /* a descriptor held, or a bad one */
    K_DIRFD,   /* AT_FDCWD, a scratch directory, or a bad one */
    K_IN,      /* an address the kernel reads */
    K_OUT,     /* an address the kernel writes */
    K_LEN,     /* a length */
    K_INT,     /* a small number or a boundary */
    K_FLAGS,   /* some bits */
    K_PATH,    /* a path to look at */
    K_WPATH,   /* a path to change */
    K_PID,     /* one of its own processes, or none */
    K_SIG,     /* a signal number */
    K_MODE,    /* permission bits */
    K_MEM,     /* an address inside the arena */
    K_MEMLEN,  /* a length for the arena */
    K_PROT,    /* PROT_* */
    K_IPCKEY,  /* one of the fuzzer's IPC keys */
    K_TIME,    /* a timespec or timeval, maybe bad */
    K_IOV,     /* an iovec array */
    K_MSGHDR,  /* a msghdr */
    K_SOCKADDR,
    K_FDPAIR,  /* where a pipe or socketpair writes two descriptors */
    K_UID,
    K_CPUSET,
    K_MMAPFLAGS,
    K_MQNAME,  /* one of the fuzzer's message queue names */
    K_RIGHTS,  /* a capability right set (five bits), or bits beyond */
};

struct call {
    long number;
    const char *name;
    unsigned weight;
    unsigned char kinds[6];
    unsigned char returns_fd;
};

#define C(name, weight, fd, a, b, c, d, e, f) {SYS_##name, #name, weight, {a, b, c, d, e, f}, fd}
#define N K_NONE

/* Every call Lamina's table has that the fuzzer may make on its own
 * processes. Left out on purpose: exit, exit_group, vfork, clone, clone3
 * (the wrappers below do those safely), reboot, mount, umount2,
 * pivot_root, swapon, swapoff, kexec_load, kexec_file_load, init_module,
 * finit_module, delete_module, settimeofday, clock_settime, adjtimex,
 * clock_adjtime, acct, iopl, ioperm. */
static const struct call calls[] = {
    C(read, 20, 0, K_FD, K_OUT, K_LEN, N, N, N),
    C(write, 20, 0, K_FD, K_IN, K_LEN, N, N, N),
    C(open, 15, 1, K_PATH, K_FLAGS, K_MODE, N, N, N),
    C(close, 15, 0, K_FD, N, N, N, N, N),
    C(stat, 5, 0, K_PATH, K_OUT, N, N, N, N),
    C(fstat, 5, 0, K_FD, K_OUT, N, N, N, N),
    C(lstat, 5, 0, K_PATH, K_OUT, N, N, N, N),
    C(poll, 5, 0, K_IN, K_INT, K_INT, N, N, N),
    C(lseek, 8, 0, K_FD, K_ANY, K_INT, N, N, N),
    C(mmap, 10, 0, K_MEM, K_MEMLEN, K_PROT, K_MMAPFLAGS, K_FD, K_LEN),
    C(mprotect, 6, 0, K_MEM, K_MEMLEN, K_PROT, N, N, N),
    C(munmap, 6, 0, K_MEM, K_MEMLEN, N, N, N, N),
    C(brk, 2, 0, K_ANY, N, N, N, N, N),
    C(rt_sigprocmask, 4, 0, K_INT, K_IN, K_OUT, K_LEN, N, N),
    C(ioctl, 12, 0, K_FD, K_ANY, K_OUT, N, N, N),
    C(pread64, 6, 0, K_FD, K_OUT, K_LEN, K_ANY, N, N),
    C(pwrite64, 6, 0, K_FD, K_IN, K_LEN, K_ANY, N, N),
    C(readv, 6, 0, K_FD, K_IOV, K_INT, N, N, N),
    C(writev, 6, 0, K_FD, K_IOV, K_INT, N, N, N),
    C(access, 4, 0, K_PATH, K_INT, N, N, N, N),
    C(pipe, 4, 0, K_FDPAIR, N, N, N, N, N),
    C(select, 4, 0, K_INT, K_OUT, K_OUT, K_OUT, K_TIME, N),
    C(sched_yield, 2, 0, N, N, N, N, N, N),
    C(mremap, 4, 0, K_MEM, K_MEMLEN, K_MEMLEN, K_FLAGS, K_MEM, N),
    C(msync, 3, 0, K_MEM, K_MEMLEN, K_FLAGS, N, N, N),
    C(mincore, 3, 0, K_MEM, K_MEMLEN, K_OUT, N, N, N),
    C(madvise, 4, 0, K_MEM, K_MEMLEN, K_INT, N, N, N),
    C(shmget, 3, 0, K_IPCKEY, K_MEMLEN, K_FLAGS, N, N, N),
    C(shmat, 3, 0, K_INT, K_MEM, K_FLAGS, N, N, N),
    C(shmctl, 3, 0, K_INT, K_INT, K_OUT, N, N, N),
    C(dup, 6, 1, K_FD, N, N, N, N, N),
    C(dup2, 4, 1, K_FD, K_FD, N, N, N, N),
    C(pause, 1, 0, N, N, N, N, N, N),
    C(nanosleep, 2, 0, K_TIME, K_OUT, N, N, N, N),
    C(getitimer, 2, 0, K_INT, K_OUT, N, N, N, N),
    C(alarm, 1, 0, K_INT, N, N, N, N, N),
    C(setitimer, 2, 0, K_INT, K_TIME, K_OUT, N, N, N),
    C(getpid, 1, 0, N, N, N, N, N, N),
    C(sendfile, 4, 0, K_FD, K_FD, K_OUT, K_LEN, N, N),
    C(socket, 8, 1, K_INT, K_FLAGS, K_INT, N, N, N),
    C(connect, 5, 0, K_FD, K_SOCKADDR, K_LEN, N, N, N),
    C(accept, 3, 1, K_FD, K_OUT, K_OUT, N, N, N),
    C(sendto, 5, 0, K_FD, K_IN, K_LEN, K_FLAGS, K_SOCKADDR, K_LEN),
    C(recvfrom, 5, 0, K_FD, K_OUT, K_LEN, K_FLAGS, K_OUT, K_OUT),
    C(sendmsg, 5, 0, K_FD, K_MSGHDR, K_FLAGS, N, N, N),
    C(recvmsg, 5, 0, K_FD, K_MSGHDR, K_FLAGS, N, N, N),
    C(shutdown, 3, 0, K_FD, K_INT, N, N, N, N),
    C(bind, 5, 0, K_FD, K_SOCKADDR, K_LEN, N, N, N),
    C(listen, 4, 0, K_FD, K_INT, N, N, N, N),
    C(getsockname, 3, 0, K_FD, K_OUT, K_OUT, N, N, N),
    C(getpeername, 3, 0, K_FD, K_OUT, K_OUT, N, N, N),
    C(socketpair, 4, 0, K_INT, K_FLAGS, K_INT, K_FDPAIR, N, N),
    C(setsockopt, 6, 0, K_FD, K_INT, K_INT, K_IN, K_LEN, N),
    C(getsockopt, 6, 0, K_FD, K_INT, K_INT, K_OUT, K_OUT, N),
    C(wait4, 3, 0, K_PID, K_OUT, K_FLAGS, K_OUT, N, N),
    C(kill, 2, 0, K_PID, K_SIG, N, N, N, N),
    C(uname, 1, 0, K_OUT, N, N, N, N, N),
    C(semget, 3, 0, K_IPCKEY, K_INT, K_FLAGS, N, N, N),
    C(semop, 3, 0, K_INT, K_IN, K_INT, N, N, N),
    C(semctl, 3, 0, K_INT, K_INT, K_INT, K_OUT, N, N),
    C(shmdt, 2, 0, K_MEM, N, N, N, N, N),
    C(msgget, 3, 0, K_IPCKEY, K_FLAGS, N, N, N, N),
    C(msgsnd, 3, 0, K_INT, K_IN, K_LEN, K_FLAGS, N, N),
    C(msgrcv, 3, 0, K_INT, K_OUT, K_LEN, K_ANY, K_FLAGS, N),
    C(msgctl, 3, 0, K_INT, K_INT, K_OUT, N, N, N),
    C(fcntl, 10, 1, K_FD, K_INT, K_ANY, N, N, N),
    C(flock, 3, 0, K_FD, K_INT, N, N, N, N),
    C(fsync, 2, 0, K_FD, N, N, N, N, N),
    C(fdatasync, 2, 0, K_FD, N, N, N, N, N),
    C(truncate, 3, 0, K_WPATH, K_ANY, N, N, N, N),
    C(ftruncate, 4, 0, K_FD, K_ANY, N, N, N, N),
    C(getdents, 4, 0, K_FD, K_OUT, K_LEN, N, N, N),
    C(getcwd, 2, 0, K_OUT, K_LEN, N, N, N, N),
    C(chdir, 2, 0, K_WPATH, N, N, N, N, N),
    C(rename, 4, 0, K_WPATH, K_WPATH, N, N, N, N),
    C(mkdir, 4, 0, K_WPATH, K_MODE, N, N, N, N),
    C(rmdir, 4, 0, K_WPATH, N, N, N, N, N),
    C(creat, 3, 1, K_WPATH, K_MODE, N, N, N, N),
    C(link, 3, 0, K_WPATH, K_WPATH, N, N, N, N),
    C(unlink, 4, 0, K_WPATH, N, N, N, N, N),
    C(symlink, 3, 0, K_PATH, K_WPATH, N, N, N, N),
    C(readlink, 3, 0, K_PATH, K_OUT, K_LEN, N, N, N),
    C(chmod, 2, 0, K_WPATH, K_MODE, N, N, N, N),
    C(fchmod, 2, 0, K_FD, K_MODE, N, N, N, N),
    C(chown, 2, 0, K_WPATH, K_UID, K_UID, N, N, N),
    C(fchown, 2, 0, K_FD, K_UID, K_UID, N, N, N),
    C(umask, 1, 0, K_MODE, N, N, N, N, N),
    C(gettimeofday, 1, 0, K_OUT, K_OUT, N, N, N, N),
    C(getrlimit, 2, 0, K_INT, K_OUT, N, N, N, N),
    C(getrusage, 2, 0, K_INT, K_OUT, N, N, N, N),
    C(sysinfo, 1, 0, K_OUT, N, N, N, N, N),
    C(times, 1, 0, K_OUT, N, N, N, N, N),
    C(getuid, 1, 0, N, N, N, N, N, N),
    C(syslog, 1, 0, K_INT, K_OUT, K_LEN, N, N, N),
    C(setuid, 1, 0, K_UID, N, N, N, N, N),
    C(setgid, 1, 0, K_UID, N, N, N, N, N),
    C(setpgid, 2, 0, K_PID, K_PID, N, N, N, N),
    C(getppid, 1, 0, N, N, N, N, N, N),
    C(getpgrp, 1, 0, N, N, N, N, N, N),
    C(setsid, 1, 0, N, N, N, N, N, N),
    C(setreuid, 1, 0, K_UID, K_UID, N, N, N, N),
    C(setgroups, 1, 0, K_INT, K_IN, N, N, N, N),
    C(getgroups, 1, 0, K_INT, K_OUT, N, N, N, N),
    C(setresuid, 1, 0, K_UID, K_UID, K_UID, N, N, N),
    C(getresuid, 1, 0, K_OUT, K_OUT, K_OUT, N, N, N),
    C(getpgid, 1, 0, K_PID, N, N, N, N, N),
    C(getsid, 1, 0, K_PID, N, N, N, N, N),
    C(capget, 1, 0, K_IN, K_OUT, N, N, N, N),
    C(capset, 1, 0, K_IN, K_IN, N, N, N, N),
    C(rt_sigpending, 2, 0, K_OUT, K_LEN, N, N, N, N),
    C(rt_sigtimedwait, 2, 0, K_IN, K_OUT, K_TIME, K_LEN, N, N),
    C(rt_sigqueueinfo, 2, 0, K_PID, K_SIG, K_IN, N, N, N),
    C(rt_sigsuspend, 1, 0, K_IN, K_LEN, N, N, N, N),
    C(sigaltstack, 1, 0, K_IN, K_OUT, N, N, N, N),
    C(utime, 2, 0, K_WPATH, K_IN, N, N, N, N),
    C(mknod, 2, 0, K_WPATH, K_MODE, K_ANY, N, N, N),
    C(personality, 1, 0, K_INT, N, N, N, N, N),
    C(statfs, 2, 0, K_PATH, K_OUT, N, N, N, N),
    C(fstatfs, 2, 0, K_FD, K_OUT, N, N, N, N),
    C(getpriority, 1, 0, K_INT, K_PID, N, N, N, N),
    C(setpriority, 1, 0, K_INT, K_PID, K_INT, N, N, N),
    C(sched_setparam, 1, 0, K_PID, K_IN, N, N, N, N),
    C(sched_getparam, 1, 0, K_PID, K_OUT, N, N, N, N),
    C(sched_setscheduler, 1, 0, K_PID, K_INT, K_IN, N, N, N),
    C(sched_getscheduler, 1, 0, K_PID, N, N, N, N, N),
    C(sched_get_priority_max, 1, 0, K_INT, N, N, N, N, N),
    C(sched_rr_get_interval, 1, 0, K_PID, K_OUT, N, N, N, N),
    C(mlock, 2, 0, K_MEM, K_MEMLEN, N, N, N, N),
    C(munlock, 2, 0, K_MEM, K_MEMLEN, N, N, N, N),
    C(mlockall, 1, 0, K_FLAGS, N, N, N, N, N),
    C(munlockall, 1, 0, N, N, N, N, N, N),
    C(prctl, 3, 0, K_INT, K_ANY, K_ANY, K_ANY, K_ANY, N),
    C(arch_prctl, 1, 0, K_INT, K_OUT, N, N, N, N),
    C(setrlimit, 1, 0, K_INT, K_IN, N, N, N, N),
    C(sync, 1, 0, N, N, N, N, N, N),
    C(sethostname, 1, 0, K_IN, K_LEN, N, N, N, N),
    C(gettid, 1, 0, N, N, N, N, N, N),
    C(readahead, 1, 0, K_FD, K_ANY, K_LEN, N, N, N),
    C(setxattr, 2, 0, K_WPATH, K_IN, K_IN, K_LEN, K_FLAGS, N),
    C(getxattr, 2, 0, K_PATH, K_IN, K_OUT, K_LEN, N, N),
    C(listxattr, 2, 0, K_PATH, K_OUT, K_LEN, N, N, N),
    C(removexattr, 1, 0, K_WPATH, K_IN, N, N, N, N),
    C(tkill, 1, 0, K_PID, K_SIG, N, N, N, N),
    C(time, 1, 0, K_OUT, N, N, N, N, N),
    C(futex, 8, 0, K_OUT, K_INT, K_INT, K_TIME, K_OUT, K_INT),
    C(sched_setaffinity, 2, 0, K_PID, K_LEN, K_CPUSET, N, N, N),
    C(sched_getaffinity, 2, 0, K_PID, K_LEN, K_OUT, N, N, N),
    C(epoll_create, 3, 1, K_INT, N, N, N, N, N),
    C(getdents64, 4, 0, K_FD, K_OUT, K_LEN, N, N, N),
    C(set_tid_address, 1, 0, K_OUT, N, N, N, N, N),
    C(semtimedop, 2, 0, K_INT, K_IN, K_INT, K_TIME, N, N),
    C(fadvise64, 2, 0, K_FD, K_ANY, K_LEN, K_INT, N, N),
    C(timer_create, 2, 0, K_INT, K_IN, K_OUT, N, N, N),
    C(timer_settime, 2, 0, K_INT, K_FLAGS, K_IN, K_OUT, N, N),
    C(timer_gettime, 1, 0, K_INT, K_OUT, N, N, N, N),
    C(timer_getoverrun, 1, 0, K_INT, N, N, N, N, N),
    C(timer_delete, 1, 0, K_INT, N, N, N, N, N),
    C(clock_gettime, 2, 0, K_INT, K_OUT, N, N, N, N),
    C(clock_getres, 1, 0, K_INT, K_OUT, N, N, N, N),
    C(clock_nanosleep, 2, 0, K_INT, K_FLAGS, K_TIME, K_OUT, N, N),
    C(epoll_wait, 4, 0, K_FD, K_OUT, K_INT, K_INT, N, N),
    C(epoll_ctl, 6, 0, K_FD, K_INT, K_FD, K_IN, N, N),
    C(tgkill, 1, 0, K_PID, K_PID, K_SIG, N, N, N),
    C(utimes, 1, 0, K_WPATH, K_IN, N, N, N, N),
    C(mq_open, 3, 1, K_MQNAME, K_FLAGS, K_MODE, K_IN, N, N),
    C(mq_unlink, 2, 0, K_MQNAME, N, N, N, N, N),
    C(mq_timedsend, 2, 0, K_FD, K_IN, K_LEN, K_INT, K_TIME, N),
    C(mq_timedreceive, 2, 0, K_FD, K_OUT, K_LEN, K_OUT, K_TIME, N),
    C(mq_notify, 1, 0, K_FD, K_IN, N, N, N, N),
    C(mq_getsetattr, 1, 0, K_FD, K_IN, K_OUT, N, N, N),
    C(waitid, 2, 0, K_INT, K_PID, K_OUT, K_FLAGS, K_OUT, N),
    C(inotify_init, 1, 1, N, N, N, N, N, N),
    C(inotify_add_watch, 2, 0, K_FD, K_PATH, K_FLAGS, N, N, N),
    C(inotify_rm_watch, 1, 0, K_FD, K_INT, N, N, N, N),
    C(openat, 15, 1, K_DIRFD, K_PATH, K_FLAGS, K_MODE, N, N),
    C(mkdirat, 3, 0, K_DIRFD, K_WPATH, K_MODE, N, N, N),
    C(mknodat, 2, 0, K_DIRFD, K_WPATH, K_MODE, K_ANY, N, N),
    C(fchownat, 2, 0, K_DIRFD, K_WPATH, K_UID, K_UID, K_FLAGS, N),
    C(futimesat, 1, 0, K_DIRFD, K_WPATH, K_IN, N, N, N),
    C(newfstatat, 5, 0, K_DIRFD, K_PATH, K_OUT, K_FLAGS, N, N),
    C(unlinkat, 4, 0, K_DIRFD, K_WPATH, K_FLAGS, N, N, N),
    C(renameat, 3, 0, K_DIRFD, K_WPATH, K_DIRFD, K_WPATH, N, N),
    C(linkat, 2, 0, K_DIRFD, K_WPATH, K_DIRFD, K_WPATH, K_FLAGS, N),
    C(symlinkat, 2, 0, K_PATH, K_DIRFD, K_WPATH, N, N, N),
    C(readlinkat, 2, 0, K_DIRFD, K_PATH, K_OUT, K_LEN, N, N),
    C(fchmodat, 2, 0, K_DIRFD, K_WPATH, K_MODE, K_FLAGS, N, N),
    C(faccessat, 3, 0, K_DIRFD, K_PATH, K_INT, K_FLAGS, N, N),
    C(pselect6, 3, 0, K_INT, K_OUT, K_OUT, K_OUT, K_TIME, K_IN),
    C(ppoll, 3, 0, K_IN, K_INT, K_TIME, K_IN, K_LEN, N),
    C(unshare, 1, 0, K_FLAGS, N, N, N, N, N),
    C(set_robust_list, 1, 0, K_OUT, K_LEN, N, N, N, N),
    C(get_robust_list, 1, 0, K_PID, K_OUT, K_OUT, N, N, N),
    C(splice, 3, 0, K_FD, K_OUT, K_FD, K_OUT, K_LEN, K_FLAGS),
    C(tee, 2, 0, K_FD, K_FD, K_LEN, K_FLAGS, N, N),
    C(sync_file_range, 1, 0, K_FD, K_ANY, K_LEN, K_FLAGS, N, N),
    C(vmsplice, 2, 0, K_FD, K_IOV, K_INT, K_FLAGS, N, N),
    C(utimensat, 2, 0, K_DIRFD, K_WPATH, K_IN, K_FLAGS, N, N),
    C(epoll_pwait, 3, 0, K_FD, K_OUT, K_INT, K_INT, K_IN, K_LEN),
    C(signalfd, 2, 1, K_FD, K_IN, K_LEN, N, N, N),
    C(timerfd_create, 3, 1, K_INT, K_FLAGS, N, N, N, N),
    C(eventfd, 3, 1, K_INT, N, N, N, N, N),
    C(fallocate, 3, 0, K_FD, K_INT, K_ANY, K_LEN, N, N),
    C(timerfd_settime, 3, 0, K_FD, K_FLAGS, K_IN, K_OUT, N, N),
    C(timerfd_gettime, 2, 0, K_FD, K_OUT, N, N, N, N),
    C(accept4, 3, 1, K_FD, K_OUT, K_OUT, K_FLAGS, N, N),
    C(signalfd4, 2, 1, K_FD, K_IN, K_LEN, K_FLAGS, N, N),
    C(eventfd2, 3, 1, K_INT, K_FLAGS, N, N, N, N),
    C(epoll_create1, 3, 1, K_FLAGS, N, N, N, N, N),
    C(dup3, 3, 1, K_FD, K_FD, K_FLAGS, N, N, N),
    C(pipe2, 4, 0, K_FDPAIR, K_FLAGS, N, N, N, N),
    C(inotify_init1, 1, 1, K_FLAGS, N, N, N, N, N),
    C(preadv, 3, 0, K_FD, K_IOV, K_INT, K_ANY, N, N),
    C(pwritev, 3, 0, K_FD, K_IOV, K_INT, K_ANY, N, N),
    C(rt_tgsigqueueinfo, 1, 0, K_PID, K_PID, K_SIG, K_IN, N, N),
    C(recvmmsg, 2, 0, K_FD, K_OUT, K_INT, K_FLAGS, K_TIME, N),
    C(prlimit64, 2, 0, K_PID, K_INT, K_IN, K_OUT, N, N),
    C(name_to_handle_at, 1, 0, K_DIRFD, K_PATH, K_OUT, K_OUT, K_FLAGS, N),
    C(syncfs, 1, 0, K_FD, N, N, N, N, N),
    C(sendmmsg, 2, 0, K_FD, K_IN, K_INT, K_FLAGS, N, N),
    C(getcpu, 1, 0, K_OUT, K_OUT, K_OUT, N, N, N),
    C(process_vm_readv, 1, 0, K_PID, K_IOV, K_INT, K_IOV, K_INT, K_FLAGS),
    C(kcmp, 1, 0, K_PID, K_PID, K_INT, K_FD, K_FD, N),
    C(sched_setattr, 1, 0, K_PID, K_IN, K_FLAGS, N, N, N),
    C(sched_getattr, 1, 0, K_PID, K_OUT, K_LEN, K_FLAGS, N, N),
    C(renameat2, 3, 0, K_DIRFD, K_WPATH, K_DIRFD, K_WPATH, K_FLAGS, N),
    C(getrandom, 2, 0, K_OUT, K_LEN, K_FLAGS, N, N, N),
    C(memfd_create, 3, 1, K_IN, K_FLAGS, N, N, N, N),
    C(membarrier, 1, 0, K_INT, K_FLAGS, K_INT, N, N, N),
    C(mlock2, 1, 0, K_MEM, K_MEMLEN, K_FLAGS, N, N, N),
    C(copy_file_range, 3, 0, K_FD, K_OUT, K_FD, K_OUT, K_LEN, K_FLAGS),
    C(preadv2, 2, 0, K_FD, K_IOV, K_INT, K_ANY, K_FLAGS, N),
    C(pwritev2, 2, 0, K_FD, K_IOV, K_INT, K_ANY, K_FLAGS, N),
    C(statx, 4, 0, K_DIRFD, K_PATH, K_FLAGS, K_FLAGS, K_OUT, N),
    C(pidfd_send_signal, 1, 0, K_FD, K_SIG, K_IN, K_FLAGS, N, N),
    C(pidfd_open, 2, 1, K_PID, K_FLAGS, N, N, N, N),
    C(close_range, 1, 0, K_FD, K_FD, K_FLAGS, N, N, N),
    C(openat2, 3, 1, K_DIRFD, K_PATH, K_IN, K_LEN, N, N),
    C(pidfd_getfd, 1, 1, K_FD, K_FD, K_FLAGS, N, N, N),
    C(faccessat2, 2, 0, K_DIRFD, K_PATH, K_INT, K_FLAGS, N, N),
    C(epoll_pwait2, 2, 0, K_FD, K_OUT, K_INT, K_TIME, K_IN, K_LEN),
    C(rseq, 1, 0, K_OUT, K_LEN, K_FLAGS, K_INT, N, N),
    /* Numbers past the table's end and one in its middle that no call has. */
    {500, "unknown_500", 1, {K_ANY, K_ANY, K_ANY, K_ANY, K_ANY, K_ANY}, 0},
    {-1, "negative", 1, {K_ANY, K_ANY, N, N, N, N}, 0},
    /* Lamina's native calls (docs/capabilities.md): slots are small numbers,
     * rights are bits, memory goes into the arena, IPC words are anything.
     * The blocking IPC calls end on the 5 ms SIGALRM. */
    {0x4c00, "cap_create_memory", 3, {K_INT, K_RIGHTS, N, N, N, N}, 0},
    {0x4c01, "cap_derive", 3, {K_INT, K_RIGHTS, K_LEN, K_LEN, N, N}, 0},
    {0x4c02, "cap_delegate", 2, {K_INT, K_INT, K_RIGHTS, N, N, N}, 0},
    {0x4c03, "cap_offer", 2, {K_INT, K_INT, N, N, N, N}, 0},
    {0x4c04, "cap_obtain", 2, {K_INT, K_INT, K_RIGHTS, N, N, N}, 0},
    {0x4c05, "cap_revoke", 2, {K_INT, K_INT, N, N, N, N}, 0},
    {0x4c06, "cap_drop", 2, {K_INT, N, N, N, N, N}, 0},
    {0x4c07, "cap_info", 2, {K_INT, K_OUT, N, N, N, N}, 0},
    {0x4c08, "cap_map", 2, {K_INT, K_MEM, K_RIGHTS, N, N, N}, 0},
    {0x4c09, "cap_unmap", 2, {K_INT, N, N, N, N, N}, 0},
    {0x4c0a, "lamina_0x4c0a", 1, {K_ANY, K_ANY, K_ANY, N, N, N}, 0},
    {0x4c10, "endpoint_create", 2, {K_RIGHTS, N, N, N, N, N}, 0},
    {0x4c11, "ipc_send", 2, {K_INT, K_ANY, K_ANY, K_ANY, K_ANY, K_ANY}, 0},
    {0x4c12, "ipc_call", 2, {K_INT, K_ANY, K_ANY, K_ANY, K_ANY, K_ANY}, 0},
    {0x4c13, "ipc_recv", 2, {K_INT, N, N, N, N, N}, 0},
    {0x4c14, "ipc_reply", 1, {K_INT, K_ANY, K_ANY, K_ANY, K_ANY, K_ANY}, 0},
    {0x4c15, "ipc_reply_recv", 1, {K_INT, K_ANY, K_ANY, K_ANY, K_ANY, K_ANY}, 0},
    {0x4c16, "ipc_buffer", 1, {K_MEM, K_MEMLEN, N, N, N, N}, 0},
    {0x4c1f, "lamina_0x4c1f", 1, {K_ANY, K_ANY, K_ANY, N, N, N}, 0},
};
#define CALLS COUNT(calls)

/* Each call's weight in this run: the table's, or 0 for the calls a focus
 * mask (-m) leaves out, so that a run can dwell on some calls' meetings. */
static unsigned weights[CALLS];

/* Pseudo-calls the fuzzer makes through safe wrappers, by weight. */
enum { EXTRA_FORK, EXTRA_CLONE, EXTRA_SIGACTION, EXTRA_EXEC, EXTRA_SIGRETURN, EXTRAS };
static const unsigned extra_weights[EXTRAS] = {3, 2, 4, 1, 1};

static unsigned total_weight;

/* ---- drawing arguments ---- */

static uint64_t boundary(struct rng *r) {
    static const uint64_t values[] = {
        0, 1, 2, 3, 7, 8, 15, 16, 31, 32, 63, 64, 255, 256, 4095, 4096, 4097, 65535, 65536,
        0x7fffffff, 0x80000000, 0xffffffff, 0x100000000ULL, (uint64_t)-1, (uint64_t)-2, (uint64_t)-4096,
        0x7fffffffffffffffULL, 0x8000000000000000ULL,
    };
    return values[below(r, COUNT(values))];
}

static uint64_t small_int(struct rng *r) {
    switch (below(r, 4)) {
    case 0: return below(r, 8);
    case 1: return below(r, 64);
    case 2: return boundary(r);
    default: return next(r) & 0xffff;
    }
}

static uint64_t bad_address(struct rng *r) {
    static const uint64_t values[] = {
        0, 1, 4095, 0x1000, 0xffff800000000000ULL, 0xffffffff80000000ULL, 0x00007ffffffff000ULL,
        0x0000800000000000ULL, (uint64_t)-1, 0xdead000, 0x8000000000000000ULL,
    };
    switch (below(r, 4)) {
    case 0: return (uint64_t)arena + below(r, ARENA_BYTES); /* maybe unmapped or PROT_NONE */
    case 1: return (uint64_t)buffers + BUFFER_PAGES * PAGE - below(r, 16); /* runs into the guard */
    case 2: return (uint64_t)(uintptr_t)read_only_anchor; /* read-only text */
    default: return values[below(r, COUNT(values))];
    }
}

static uint64_t buffer_address(struct rng *r) {
    uint64_t offset = chance(r, 50) ? below(r, BUFFER_PAGES) * PAGE : below(r, BUFFER_PAGES * PAGE);
    return (uint64_t)buffers + offset;
}

static void scribble(struct rng *r, uint64_t address, size_t bytes) {
    unsigned char *p = (unsigned char *)address;
    if (address < (uint64_t)buffers || address + bytes > (uint64_t)buffers + BUFFER_PAGES * PAGE) return;
    for (size_t i = 0; i < bytes; i++) p[i] = (unsigned char)next(r);
}

static uint64_t any_fd(struct rng *r) {
    switch (below(r, 8)) {
    case 0: return (uint64_t)(int64_t)-1;
    case 1: return below(r, 2) ? 1023 : 0x7fffffff;
    case 2: return scratch_fds[below(r, 4)];
    default: {
        int fd = pool[below(r, POOL_FDS)];
        return fd > 0 ? (uint64_t)fd : 3 + below(r, 40);
    }
    }
}

static void remember_fd(long fd) {
    if (fd > 2 && fd < 4096) pool[atomic_fetch_add(&pool_next, 1) % POOL_FDS] = (int)fd;
}

static uint64_t pid_of(struct rng *r) {
    int children = atomic_load(&own_child_count);
    switch (below(r, 7)) {
    case 0: return 0;
    case 1: return getpid();
    case 2: return sibling_count ? (uint64_t)siblings[below(r, sibling_count)] : (uint64_t)getpid();
    case 3: return children ? (uint64_t)own_children[below(r, children)] : 99999;
    case 4: return syscall(SYS_gettid);
    case 5: return 99999;
    default: return (uint64_t)(int64_t) - getpgrp();
    }
}

static uint64_t path(struct rng *r, int writable) {
    switch (below(r, 16)) {
    case 0: return (uint64_t)long_name;
    case 1: return (uint64_t)too_long_path;
    case 2: return bad_address(r);
    default:
        return writable ? (uint64_t)scratch_paths[below(r, COUNT(scratch_paths))] : (uint64_t)fixed_paths[below(r, COUNT(fixed_paths))];
    }
}

static uint64_t flags(struct rng *r) {
    switch (below(r, 5)) {
    case 0: return 0;
    case 1: return 1ULL << below(r, 32);
    case 2: return (1ULL << below(r, 32)) | (1ULL << below(r, 32)) | (1ULL << below(r, 12));
    case 3: return next(r) & 0xfffff;
    default: return next(r);
    }
}

static uint64_t timespec_at(struct rng *r) {
    if (chance(r, 15)) return chance(r, 50) ? 0 : bad_address(r);
    uint64_t *t = (uint64_t *)buffer_address(r);
    if ((uint64_t)(t + 4) > (uint64_t)buffers + BUFFER_PAGES * PAGE) t = (uint64_t *)buffers;
    t = (uint64_t *)((uint64_t)t & ~7ULL);
    t[0] = chance(r, 80) ? 0 : boundary(r);
    t[1] = chance(r, 70) ? below(r, 2000000) : boundary(r);
    t[2] = t[0];
    t[3] = t[1];
    return (uint64_t)t;
}

/* An iovec array in the buffers whose entries point into the buffers or
 * at bad addresses, with lengths at boundaries. */
static uint64_t iov_at(struct rng *r) {
    if (chance(r, 10)) return bad_address(r);
    struct iovec *v = (struct iovec *)(buffers + PAGE * (BUFFER_PAGES - 2) + 16 * below(r, 64));
    for (int i = 0; i < 8; i++) {
        v[i].iov_base = (void *)(chance(r, 85) ? buffer_address(r) : bad_address(r));
        v[i].iov_len = chance(r, 80) ? below(r, 2 * PAGE) : boundary(r);
    }
    return (uint64_t)v;
}

static uint64_t sockaddr_at(struct rng *r) {
    if (chance(r, 10)) return chance(r, 50) ? 0 : bad_address(r);
    unsigned char *s = buffers + PAGE * (BUFFER_PAGES - 3) + 128 * below(r, 8);
    static const uint16_t families[] = {AF_UNIX, AF_INET, AF_INET6, AF_NETLINK, AF_UNSPEC, 0xffff, 17};
    for (int i = 0; i < 128; i++) s[i] = (unsigned char)next(r);
    uint16_t family = families[below(r, COUNT(families))];
    memcpy(s, &family, 2);
    if (family == AF_INET && chance(r, 70)) {
        s[2] = 0x4c, s[3] = (unsigned char)below(r, 4); /* a port or two */
        s[4] = 127, s[5] = 0, s[6] = 0, s[7] = 1;
    } else if (family == AF_UNIX && chance(r, 70)) {
        const char *name = chance(r, 50) ? "s0" : "\0fuzz";
        memcpy(s + 2, name, 6);
    }
    return (uint64_t)s;
}

static uint64_t msghdr_at(struct rng *r) {
    if (chance(r, 10)) return bad_address(r);
    struct msghdr *m = (struct msghdr *)(buffers + PAGE * (BUFFER_PAGES - 4) + 64 * below(r, 16));
    m->msg_name = chance(r, 60) ? 0 : (void *)sockaddr_at(r);
    m->msg_namelen = (socklen_t)(chance(r, 70) ? 16 + below(r, 112) : boundary(r));
    m->msg_iov = (struct iovec *)iov_at(r);
    m->msg_iovlen = chance(r, 80) ? below(r, 8) : boundary(r);
    if (chance(r, 40)) {
        unsigned char *control = buffers + PAGE * (BUFFER_PAGES - 5) + 256 * below(r, 8);
        struct cmsghdr *c = (struct cmsghdr *)control;
        c->cmsg_len = chance(r, 70) ? CMSG_LEN(4 * below(r, 4)) : boundary(r);
        c->cmsg_level = chance(r, 70) ? SOL_SOCKET : (int)small_int(r);
        c->cmsg_type = chance(r, 50) ? SCM_RIGHTS : (chance(r, 50) ? SCM_CREDENTIALS : (int)small_int(r));
        int *fds = (int *)CMSG_DATA(c);
        for (int i = 0; i < 4; i++) fds[i] = (int)any_fd(r);
        m->msg_control = control;
        m->msg_controllen = chance(r, 80) ? c->cmsg_len : boundary(r);
    } else {
        m->msg_control = 0;
        m->msg_controllen = 0;
    }
    m->msg_flags = (int)flags(r);
    return (uint64_t)m;
}

static uint64_t argument(struct rng *r, unsigned kind) {
    switch (kind) {
    case K_NONE: return next(r) & 0xff;
    case K_FD: return any_fd(r);
    case K_DIRFD: return chance(r, 60) ? (uint64_t)(int64_t)AT_FDCWD : (chance(r, 70) ? (uint64_t)scratch_fds[below(r, 4)] : any_fd(r));
    case K_IN: {
        if (chance(r, 12)) return bad_address(r);
        uint64_t address = buffer_address(r);
        scribble(r, address, 64);
        return address;
    }
    case K_OUT: return chance(r, 12) ? bad_address(r) : (chance(r, 5) ? 0 : buffer_address(r));
    case K_LEN: return chance(r, 60) ? below(r, 2 * PAGE) : boundary(r);
    case K_INT: return small_int(r);
    case K_FLAGS: return flags(r);
    case K_PATH: return path(r, 0);
    case K_WPATH: return path(r, 1);
    case K_PID: return pid_of(r);
    case K_SIG: return chance(r, 90) ? below(r, 66) : boundary(r);
    case K_MODE: return chance(r, 80) ? (next(r) & 07777) : next(r);
    case K_MEM:
        if (chance(r, 5)) return 0;
        return (uint64_t)arena + (chance(r, 70) ? below(r, ARENA_BYTES / PAGE) * PAGE : below(r, ARENA_BYTES));
    case K_MEMLEN: return chance(r, 70) ? (1 + below(r, 64)) * PAGE : (chance(r, 50) ? below(r, 3 * PAGE) : boundary(r));
    case K_PROT: return chance(r, 85) ? below(r, 8) : flags(r);
    case K_RIGHTS: return chance(r, 85) ? below(r, 32) : flags(r);
    case K_IPCKEY: return chance(r, 20) ? IPC_PRIVATE : IPC_KEY_BASE + below(r, IPC_KEYS);
    case K_TIME: return timespec_at(r);
    case K_IOV: return iov_at(r);
    case K_MSGHDR: return msghdr_at(r);
    case K_SOCKADDR: return sockaddr_at(r);
    case K_FDPAIR: return chance(r, 85) ? (uint64_t)fd_pair : bad_address(r);
    case K_UID: return chance(r, 60) ? below(r, 3) : (chance(r, 50) ? (uint64_t)-1 : boundary(r));
    case K_CPUSET: {
        uint64_t *set = (uint64_t *)buffer_address(r);
        set = (uint64_t *)((uint64_t)set & ~7ULL);
        if ((uint64_t)(set + 1) <= (uint64_t)buffers + BUFFER_PAGES * PAGE) *set = chance(r, 70) ? 1ULL << below(r, 8) : next(r);
        return chance(r, 10) ? bad_address(r) : (uint64_t)set;
    }
    case K_MMAPFLAGS: {
        uint64_t base = chance(r, 50) ? MAP_PRIVATE : MAP_SHARED;
        static const uint64_t extra[] = {MAP_ANONYMOUS, MAP_FIXED, MAP_FIXED_NOREPLACE, MAP_POPULATE, MAP_NORESERVE, MAP_GROWSDOWN, MAP_STACK, MAP_HUGETLB, MAP_LOCKED};
        for (int i = 0; i < 3; i++) if (chance(r, 40)) base |= extra[below(r, COUNT(extra))];
        return chance(r, 90) ? base : flags(r);
    }
    case K_MQNAME: {
        static const char *const names[] = {"/fuzz0", "/fuzz1", "/fuzz2", "/fuzz3", "fuzz4", "/", "/a/b"};
        return chance(r, 10) ? bad_address(r) : (uint64_t)names[below(r, COUNT(names))];
    }
    default: /* K_ANY */
        switch (below(r, 6)) {
        case 0: return any_fd(r);
        case 1: return buffer_address(r);
        case 2: return bad_address(r);
        case 3: return boundary(r);
        case 4: return small_int(r);
        default: return next(r);
        }
    }
}

/* ---- making one call ---- */

static int is_range_call(long number) {
    switch (number) {
    case SYS_mprotect: case SYS_munmap: case SYS_madvise: case SYS_mremap: case SYS_msync:
    case SYS_mlock: case SYS_munlock: case SYS_mlock2: case SYS_mincore: case SYS_mmap:
        return 1;
    default:
        return 0;
    }
}

/* Keeps a range call on the fuzzer's own memory inside the arena: a range
 * that starts there ends there; one that starts elsewhere (0, a bad
 * address) is at most two pages, or misaligned so that it must be refused.
 * A huge length stays only with a misaligned start (EINVAL on Linux). */
static void keep_in_arena(struct rng *r, long number, uint64_t *a) {
    uint64_t start = (uint64_t)arena, end = start + ARENA_BYTES;
    if (number == SYS_mmap && !(a[3] & (MAP_FIXED | MAP_FIXED_NOREPLACE))) return;
    if (a[0] & (PAGE - 1)) return;
    if (a[0] >= start && a[0] < end) {
        if (a[1] > end - a[0]) a[1] = end - a[0];
    } else if (a[1] > 2 * PAGE) {
        a[1] = 2 * PAGE;
    }
    if (number == SYS_mremap) {
        if (a[2] > ARENA_BYTES) a[2] = chance(r, 50) ? ARENA_BYTES / 2 : a[1];
        if (a[3] & 2 /* MREMAP_FIXED */) {
            if (a[4] < start || a[4] >= end) a[4] = start + below(r, ARENA_BYTES / PAGE) * PAGE;
            a[4] &= ~(PAGE - 1);
            if (a[2] > end - a[4]) a[2] = end - a[4];
        }
    }
}

static long make_call(struct rng *r, const struct call *call, struct slot *slot) {
    uint64_t a[6];
    for (int i = 0; i < 6; i++) a[i] = argument(r, call->kinds[i]);
    if (is_range_call(call->number)) keep_in_arena(r, call->number, a);
    if (call->number == SYS_arch_prctl && a[0] == 0x1002 /* ARCH_SET_FS: our thread pointer */) a[0] = 0x1003;
    if (call->number == SYS_shmat) a[2] &= ~(uint64_t)SHM_REMAP;
    if (call->number == SYS_prctl && a[0] == PR_SET_MM) a[0] = PR_GET_DUMPABLE;
    atomic_store(&slot->number, (int32_t)call->number);
    for (int i = 0; i < 6; i++) atomic_store(&slot->args[i], a[i]);
    long result = syscall(call->number, a[0], a[1], a[2], a[3], a[4], a[5]);
    int error = result < 0 ? errno : 0;
    atomic_store(&slot->number, -1);
    if (result >= 0 && call->returns_fd) remember_fd(result);
    if (result == 0 && (call->number == SYS_pipe || call->number == SYS_pipe2 || call->number == SYS_socketpair)) {
        remember_fd(atomic_load(&fd_pair[0]));
        remember_fd(atomic_load(&fd_pair[1]));
    }
    if (result >= 0 && (call->number == SYS_shmget || call->number == SYS_semget || call->number == SYS_msgget)) {
        int kind = call->number == SYS_shmget ? 1 : call->number == SYS_semget ? 2 : 3;
        uint32_t at = atomic_fetch_add(&shared->ipc_next, 1) % IPC_IDS;
        atomic_store(&shared->ipc_ids[at], (int32_t)(kind << 28 | (int32_t)result));
    }
    if (verbose) {
        char line[256];
        int n = snprintf(line, sizeof line, "%s(%#llx, %#llx, %#llx, %#llx, %#llx, %#llx) = %ld%s%s\n", call->name,
                         (unsigned long long)a[0], (unsigned long long)a[1], (unsigned long long)a[2], (unsigned long long)a[3],
                         (unsigned long long)a[4], (unsigned long long)a[5], result < 0 ? -(long)error : result,
                         result < 0 ? " " : "", result < 0 ? strerror(error) : "");
        if (n > 0) write(verbose, line, (size_t)n);
    }
    return result;
}

static const struct call *pick_call(struct rng *r) {
    uint64_t at = below(r, total_weight);
    for (size_t i = 0; i < CALLS; i++) {
        if (at < weights[i]) return &calls[i];
        at -= weights[i];
    }
    return &calls[0];
}

static void table_calls(struct rng *r, struct slot *slot, int count) {
    for (int i = 0; i < count; i++) {
        make_call(r, pick_call(r), slot);
        atomic_fetch_add(&slot->calls, 1);
    }
}

/* ---- the safe wrappers: fork, clone, sigaction, execve, sigreturn ---- */

static void empty_handler(int signal) { (void)signal; }
static void info_handler(int signal, siginfo_t *info, void *context) { (void)signal, (void)info, (void)context; }

static pid_t thread_ids[MAX_THREADS];

/* SIGALRM every 5 ms interrupts whatever call blocks; it passes the
 * interruption on to the process's other threads (SIGUSR2). */
static void alarm_handler(int signal) {
    (void)signal;
    int saved = errno;
    pid_t me = (pid_t)syscall(SYS_gettid);
    for (int i = 0; i < MAX_THREADS; i++)
        if (thread_ids[i] && thread_ids[i] != me) syscall(SYS_tgkill, getpid(), thread_ids[i], SIGUSR2);
    errno = saved;
}

static void arm_interruptions(void) {
    struct sigaction action = {0};
    action.sa_handler = alarm_handler;
    sigaction(SIGALRM, &action, 0);
    action.sa_handler = empty_handler;
    sigaction(SIGUSR2, &action, 0);
    struct itimerval every = {{0, 5000}, {0, 5000}};
    setitimer(ITIMER_REAL, &every, 0);
}

static void note_child(pid_t pid) {
    int at = atomic_fetch_add(&own_child_count, 1);
    if (at >= (int)COUNT(own_children)) {
        atomic_store(&own_child_count, (int)COUNT(own_children));
        at = (int)(pid % COUNT(own_children));
    }
    own_children[at] = pid;
}

static void extra_fork(struct rng *r, struct slot *slot) {
    uint64_t child_seed = next(r);
    pid_t pid = fork();
    if (pid == 0) {
        struct rng child = {child_seed | 1};
        atomic_store(&own_child_count, 0);
        memset(thread_ids, 0, sizeof thread_ids);
        thread_ids[0] = (pid_t)syscall(SYS_gettid);
        arm_interruptions();
        table_calls(&child, slot, 10 + (int)below(&child, 40));
        _exit(0);
    }
    if (pid > 0) note_child(pid);
}

#define CLONE_STACKS 4
#define CLONE_STACK_BYTES (64 * 1024)
static _Alignas(16) unsigned char clone_stacks[CLONE_STACKS][CLONE_STACK_BYTES];
static _Atomic int clone_busy[CLONE_STACKS];

struct clone_start {
    uint64_t seed;
    struct slot *slot;
};
static struct clone_start clone_starts[CLONE_STACKS];

static int clone_child(void *argument) {
    struct clone_start *start = argument;
    struct rng child = {start->seed | 1};
    table_calls(&child, start->slot, 5 + (int)below(&child, 20));
    return 0;
}

static void extra_clone(struct rng *r, struct slot *slot) {
    int stack = -1;
    for (int i = 0; i < CLONE_STACKS && stack < 0; i++) {
        int idle = 0;
        if (atomic_compare_exchange_strong(&clone_busy[i], &idle, 1)) stack = i;
    }
    if (stack < 0) return;
    static const int options[] = {CLONE_VM, CLONE_FS, CLONE_FILES, CLONE_SIGHAND, CLONE_THREAD, CLONE_SYSVSEM,
                                  CLONE_PARENT_SETTID, CLONE_CHILD_SETTID, CLONE_IO, CLONE_PARENT, CLONE_NEWNS,
                                  CLONE_NEWUTS, CLONE_NEWPID, CLONE_NEWNET};
    int flags = chance(r, 80) ? SIGCHLD : (int)below(r, 65);
    for (int i = 0; i < 3; i++)
        if (chance(r, 50)) flags |= options[below(r, COUNT(options))];
    /* The wrapper keeps what Linux requires so that the child can run. */
    if (flags & CLONE_THREAD) flags |= CLONE_SIGHAND;
    if (flags & CLONE_SIGHAND) flags |= CLONE_VM;
    clone_starts[stack] = (struct clone_start){next(r), slot};
    pid_t parent_tid = 0;
    if (flags & CLONE_VM) flags |= CLONE_CHILD_CLEARTID; /* frees the stack when the child ends */
    int *child_tid = (int *)&clone_busy[stack];
    long pid = clone(clone_child, clone_stacks[stack] + CLONE_STACK_BYTES, flags, &clone_starts[stack], &parent_tid, 0, child_tid);
    if (pid > 0 && !(flags & CLONE_THREAD)) note_child((pid_t)pid);
    if (pid <= 0 || !(flags & CLONE_VM)) atomic_store(&clone_busy[stack], 0);
}

static void extra_sigaction(struct rng *r) {
    struct sigaction action = {0};
    int signal = 1 + (int)below(r, 64);
    if ((signal == SIGALRM || signal == SIGUSR2) && chance(r, 90)) return;
    switch (below(r, 4)) {
    case 0: action.sa_handler = SIG_DFL; break;
    case 1: action.sa_handler = SIG_IGN; break;
    case 2: action.sa_handler = empty_handler; break;
    default: action.sa_sigaction = info_handler; action.sa_flags |= SA_SIGINFO; break;
    }
    static const int options[] = {SA_RESTART, SA_NODEFER, SA_RESETHAND, SA_ONSTACK, SA_NOCLDSTOP, SA_NOCLDWAIT};
    for (int i = 0; i < 2; i++)
        if (chance(r, 40)) action.sa_flags |= options[below(r, COUNT(options))];
    for (int i = 0; i < 4; i++) sigaddset(&action.sa_mask, 1 + (int)below(r, 64));
    sigaction(signal, &action, 0);
    if (chance(r, 30)) raise(signal);
}

static void extra_exec(struct rng *r) {
    static const char *const programs[] = {"/nonexistent", "f0", "d0", "/bin/true", "/proc/self/status", "", "/dev/null"};
    const char *program = programs[below(r, COUNT(programs))];
    char *argv[8] = {"true", 0};
    for (int i = 1; i < 7 && chance(r, 50); i++) argv[i] = (char *)(chance(r, 90) ? buffer_address(r) : bad_address(r));
    char **arguments = argv;
    if (chance(r, 10)) {
        /* More than Linux's limit: E2BIG. */
        static char *many[4096];
        char *page = (char *)buffers + PAGE * (BUFFER_PAGES - 6);
        memset(page, 'A', PAGE - 1);
        page[PAGE - 1] = 0;
        many[0] = "true";
        for (int i = 1; i < 4095; i++) many[i] = page;
        arguments = many;
    } else if (chance(r, 10)) {
        arguments = (char **)bad_address(r);
    }
    syscall(SYS_execve, program, arguments, chance(r, 90) ? (char *[]){0} : (char **)bad_address(r));
}

static void make_step(struct rng *r, struct slot *slot, int may_spawn) {
    uint64_t extras = 0;
    for (int i = 0; i < EXTRAS; i++) extras += extra_weights[i];
    uint64_t at = below(r, total_weight + extras);
    if (at < total_weight || !may_spawn) {
        make_call(r, pick_call(r), slot);
    } else {
        at -= total_weight;
        int extra = 0;
        while (at >= extra_weights[extra]) at -= extra_weights[extra++];
        atomic_store(&slot->number, -2 - extra);
        switch (extra) {
        case EXTRA_FORK: extra_fork(r, slot); break;
        case EXTRA_CLONE: extra_clone(r, slot); break;
        case EXTRA_SIGACTION: extra_sigaction(r); break;
        case EXTRA_EXEC: extra_exec(r); break;
        default: syscall(SYS_rt_sigreturn); break;
        }
        atomic_store(&slot->number, -1);
    }
    atomic_fetch_add(&slot->calls, 1);
}

/* ---- a worker ---- */

struct thread_start {
    uint64_t seed;
    int index;
};

static void *fuzz_thread(void *argument) {
    struct thread_start *start = argument;
    struct rng r = {start->seed | 1};
    struct slot *slot = &shared->slots[my_slot];
    thread_ids[start->index] = (pid_t)syscall(SYS_gettid);
    uint64_t made = 0;
    for (;;) {
        uint64_t left = atomic_load(&calls_left);
        if (left == 0) break;
        if (!atomic_compare_exchange_weak(&calls_left, &left, left - 1)) continue;
        make_step(&r, slot, 1);
        if (++made % 512 == 0) {
            /* Hygiene: room for new descriptors, back in the scratch tree. */
            syscall(SYS_close_range, 96, ~0U, 0);
            if (chdir(SCRATCH) != 0) {
                mkdir(SCRATCH, 0777);
                chdir(SCRATCH);
            }
        }
    }
    return 0;
}

static void open_initial_descriptors(int index) {
    int fds[2];
    remember_fd(open("f0", O_RDWR | O_CREAT, 0644));
    remember_fd(open("/dev/null", O_RDWR));
    remember_fd(open("/proc/self/status", O_RDONLY));
    if (pipe(fds) == 0) remember_fd(fds[0]), remember_fd(fds[1]);
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0) remember_fd(fds[0]), remember_fd(fds[1]);
    if (socketpair(AF_UNIX, SOCK_DGRAM, 0, fds) == 0) remember_fd(fds[0]), remember_fd(fds[1]);
    remember_fd(syscall(SYS_eventfd2, 0, 0));
    remember_fd(syscall(SYS_epoll_create1, 0));
    remember_fd(syscall(SYS_timerfd_create, CLOCK_MONOTONIC, 0));
    remember_fd(syscall(SYS_memfd_create, "fuzz", 0));
    int listener = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)(0x4c00 + index)), .sin_addr = {htonl(0x7f000001)}};
    if (listener >= 0 && bind(listener, (struct sockaddr *)&address, sizeof address) == 0) listen(listener, 4);
    remember_fd(listener);
    int client = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (client >= 0) connect(client, (struct sockaddr *)&address, sizeof address);
    remember_fd(client);
    remember_fd(socket(AF_INET6, SOCK_DGRAM, 0));
    remember_fd(socket(AF_UNIX, SOCK_SEQPACKET, 0));
}

static void set_up_process(int index) {
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
        dup2(null, 0), dup2(null, 1);
        if (!verbose) dup2(null, 2);
        if (null > 2) close(null);
    }
    mkdir(SCRATCH, 0777);
    if (chdir(SCRATCH) != 0) _exit(3);
    mkdir("d0", 0777), mkdir("d1", 0777);
    scratch_fds[0] = open(".", O_RDONLY | O_DIRECTORY);
    scratch_fds[1] = open("d0", O_RDONLY | O_DIRECTORY);
    scratch_fds[2] = open("d1", O_RDONLY | O_DIRECTORY);
    scratch_fds[3] = open("d0", O_PATH);
    open_initial_descriptors(index);
}

static void run_worker(uint64_t seed, int index, uint64_t budget, int threads) {
    setpgid(0, 0);
    /* Worker w on CPU w mod the CPUs online (its threads and children
     * inherit it until a fuzzed call changes it): Lamina starts a thread
     * on its creator's CPU, so without this every worker would share the
     * parent's CPU and nothing would meet across CPUs. */
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    if (online > 1) {
        cpu_set_t cpus;
        CPU_ZERO(&cpus);
        CPU_SET(index % online, &cpus);
        sched_setaffinity(0, sizeof cpus, &cpus);
    }
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    my_slot = index;
    set_up_process(index);
    atomic_store(&calls_left, budget);
    thread_ids[0] = (pid_t)syscall(SYS_gettid);
    arm_interruptions();
    static struct thread_start starts[MAX_THREADS];
    pthread_t handles[MAX_THREADS];
    int started = 0;
    for (int i = 1; i < threads; i++) {
        starts[i] = (struct thread_start){mix(seed, (uint64_t)i), i};
        if (pthread_create(&handles[i], 0, fuzz_thread, &starts[i]) == 0) started |= 1 << i;
    }
    starts[0] = (struct thread_start){mix(seed, 0), 0};
    fuzz_thread(&starts[0]);
    for (int i = 1; i < threads; i++)
        if (started & (1 << i)) pthread_join(handles[i], 0);
    _exit(0);
}

/* ---- the parent ---- */

static uint64_t now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

static void alive(const char *doing) {
    atomic_store(&parent_alive, now_ms());
    atomic_store(&parent_doing, doing);
}

static const char *call_name(int number) {
    static const char *const extras[] = {"fork", "clone", "sigaction", "execve", "rt_sigreturn"};
    if (number <= -2 && -2 - number < EXTRAS) return extras[-2 - number];
    if (number == -1) return "(between calls)";
    for (size_t i = 0; i < CALLS; i++)
        if (calls[i].number == number) return calls[i].name;
    return "?";
}

static void describe_slot(const char *what, struct slot *slot) {
    int number = atomic_load(&slot->number);
    printf("fuzz: %s: worker pid %d seed %#llx after %llu calls, in %s(%#llx, %#llx, %#llx, %#llx, %#llx, %#llx)\n", what,
           atomic_load(&slot->pid), (unsigned long long)atomic_load(&slot->seed), (unsigned long long)atomic_load(&slot->calls),
           call_name(number), (unsigned long long)slot->args[0], (unsigned long long)slot->args[1],
           (unsigned long long)slot->args[2], (unsigned long long)slot->args[3], (unsigned long long)slot->args[4],
           (unsigned long long)slot->args[5]);
    fflush(stdout);
}

struct tally {
    uint64_t workers, stalled, signalled, exited_badly;
};

struct worker_state {
    pid_t pid;
    uint64_t budget;      /* calls left for this place in the round */
    uint64_t last_calls;  /* progress seen */
    uint64_t last_change; /* when */
    uint64_t killed_at;   /* 0: not killed */
};

static int start_worker(struct worker_state *w, int index, uint64_t seed, int threads) {
    struct slot *slot = &shared->slots[index];
    atomic_store(&slot->calls, 0);
    atomic_store(&slot->seed, seed);
    atomic_store(&slot->number, -1);
    fflush(stdout);
    alive("fork (starting a worker)");
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) run_worker(seed, index, w->budget, threads);
    atomic_store(&slot->pid, pid);
    siblings[index] = pid;
    if (sibling_count <= index) sibling_count = index + 1;
    w->pid = pid;
    w->last_calls = 0;
    w->last_change = now_ms();
    w->killed_at = 0;
    return 0;
}

/* Every process below this one (they come to it as their subreaper):
 * killed, then reaped. Returns 0, or -1 if some never went. */
static int end_every_descendant(void) {
    uint64_t deadline = now_ms() + HANG_MS;
    pid_t me = getpid();
    for (;;) {
        alive("ending the round's descendants (/proc, kill, waitpid)");
        DIR *proc = opendir("/proc");
        int seen = 0;
        struct dirent *entry;
        while (proc && (entry = readdir(proc))) {
            int pid = atoi(entry->d_name);
            if (pid <= 0 || pid == me) continue;
            char path[64], text[512];
            snprintf(path, sizeof path, "/proc/%d/stat", pid);
            int fd = open(path, O_RDONLY);
            if (fd < 0) continue;
            ssize_t n = read(fd, text, sizeof text - 1);
            close(fd);
            if (n <= 0) continue;
            text[n] = 0;
            char *end = strrchr(text, ')');
            int parent = 0;
            if (end && sscanf(end + 2, "%*c %d", &parent) == 1 && parent == me) {
                kill(pid, SIGKILL);
                seen++;
            }
        }
        if (proc) closedir(proc);
        while (waitpid(-1, 0, WNOHANG) > 0) {
        }
        if (!seen && waitpid(-1, 0, WNOHANG) < 0 && errno == ECHILD) return 0;
        if (now_ms() > deadline) return -1;
        usleep(20000);
    }
}

static void remove_tree(const char *path) {
    DIR *directory = opendir(path);
    if (directory) {
        struct dirent *entry;
        while ((entry = readdir(directory))) {
            if (!strcmp(entry->d_name, ".") || !strcmp(entry->d_name, "..")) continue;
            char inner[4096];
            snprintf(inner, sizeof inner, "%s/%s", path, entry->d_name);
            chmod(inner, 0777);
            if (unlink(inner) != 0) remove_tree(inner);
        }
        closedir(directory);
    }
    rmdir(path);
}

/* What the workers may have left that outlives them: the scratch tree,
 * IPC objects and message queues. */
static void remove_leftovers(void) {
    alive("removing the scratch tree and IPC objects");
    remove_tree(SCRATCH);
    for (int key = IPC_KEY_BASE; key < IPC_KEY_BASE + IPC_KEYS; key++) {
        int id;
        if ((id = shmget(key, 0, 0)) >= 0) shmctl(id, IPC_RMID, 0);
        if ((id = semget(key, 0, 0)) >= 0) semctl(id, 0, IPC_RMID);
        if ((id = msgget(key, 0)) >= 0) msgctl(id, IPC_RMID, 0);
    }
    for (int i = 0; i < IPC_IDS; i++) {
        int32_t entry = atomic_exchange(&shared->ipc_ids[i], 0);
        if (!entry) continue;
        int kind = entry >> 28, id = entry & 0x0fffffff;
        if (kind == 1) shmctl(id, IPC_RMID, 0);
        else if (kind == 2) semctl(id, 0, IPC_RMID);
        else msgctl(id, IPC_RMID, 0);
    }
    static const char *const queues[] = {"/fuzz0", "/fuzz1", "/fuzz2", "/fuzz3", "fuzz4"};
    for (size_t i = 0; i < COUNT(queues); i++) syscall(SYS_mq_unlink, queues[i]);
}

static void list_processes(void);

static void dump_file(const char *path) {
    char text[2048];
    int fd = open(path, O_RDONLY);
    ssize_t n;
    printf("fuzz: --- %s%s%s\n", path, fd < 0 ? ": " : "", fd < 0 ? strerror(errno) : "");
    while (fd >= 0 && (n = read(fd, text, sizeof text)) > 0) fwrite(text, 1, (size_t)n, stdout);
    if (fd >= 0) close(fd);
}

/* The parent's watcher: if the main loop shows no sign of life for 30 s
 * the kernel has it stuck in a call; says what every CPU and process is
 * doing, once, and fails the run. */
static void *watch_parent(void *unused) {
    (void)unused;
    for (;;) {
        sleep(5);
        if (now_ms() - atomic_load(&parent_alive) < 30000) continue;
        printf("fuzz: HANG: the parent has been stuck for 30 s in %s\n", atomic_load(&parent_doing));
        dump_file("/proc/lamina/sched");
        list_processes();
        printf("fuzz: result FAIL (hang)\n");
        fflush(stdout);
        while (hold) pause();
        _exit(1);
    }
    return 0;
}

/* Every process's /proc/PID/stat line (for a report). */
static void list_processes(void) {
    DIR *proc = opendir("/proc");
    struct dirent *entry;
    /* Said, not silent: a hang once listed nothing because /proc itself
     * could not be opened, and the cause was lost. */
    if (!proc) printf("fuzz:   (opendir /proc: %s)\n", strerror(errno));
    while (proc && (entry = readdir(proc))) {
        if (atoi(entry->d_name) <= 0) continue;
        char path[300], text[256];
        snprintf(path, sizeof path, "/proc/%s/stat", entry->d_name);
        int fd = open(path, O_RDONLY);
        ssize_t n = fd >= 0 ? read(fd, text, sizeof text - 1) : -1;
        if (fd >= 0) close(fd);
        if (n > 0) {
            text[n] = 0;
            printf("fuzz:   %s", text);
        }
    }
    if (proc) closedir(proc);
}

struct memory {
    long free_kib, heap_kib, processes;
};

static struct memory memory_now(void) {
    struct memory m = {0};
    long total = 0, cached = 0;
    FILE *file = fopen("/proc/meminfo", "r");
    char line[128];
    while (file && fgets(line, sizeof line, file)) {
        sscanf(line, "MemTotal: %ld", &total);
        sscanf(line, "MemFree: %ld", &m.free_kib);
        sscanf(line, "Cached: %ld", &cached);
    }
    if (file) fclose(file);
    m.heap_kib = total - m.free_kib - cached;
    DIR *proc = opendir("/proc");
    struct dirent *entry;
    while (proc && (entry = readdir(proc)))
        if (atoi(entry->d_name) > 0) m.processes++;
    if (proc) closedir(proc);
    return m;
}

/* One round: `procs` places, each making `budget` calls through as many
 * workers as it takes. Returns 0, or -1 after a hang. */
static int run_round(uint64_t seed, int round, int procs, int threads, uint64_t budget, struct tally *tally) {
    struct worker_state workers[MAX_WORKERS] = {0};
    uint64_t starts[MAX_WORKERS] = {0};
    int running = 0;
    uint64_t last_report = now_ms();
    sibling_count = 0;
    for (int i = 0; i < procs; i++) {
        workers[i].budget = budget;
        if (start_worker(&workers[i], i, mix(seed, (uint64_t)round << 32 | (uint64_t)i), threads) == 0) running++, tally->workers++;
    }
    while (running) {
        alive("its round's loop (waitpid, kill, usleep)");
        int status;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid > 0) {
            for (int i = 0; i < procs; i++) {
                if (workers[i].pid != pid) continue;
                struct slot *slot = &shared->slots[i];
                uint64_t made = atomic_load(&slot->calls);
                workers[i].pid = 0;
                running--;
                if (workers[i].killed_at) tally->stalled++;
                else if (WIFSIGNALED(status)) tally->signalled++;
                else if (WEXITSTATUS(status) != 0) tally->exited_badly++;
                /* The place's calls not made yet go to the next worker. */
                workers[i].budget = made >= workers[i].budget ? 0 : workers[i].budget - made;
                if (workers[i].budget > 0) {
                    starts[i]++;
                    uint64_t next_seed = mix(seed, (uint64_t)round << 32 | (uint64_t)(i + MAX_WORKERS * starts[i]));
                    if (start_worker(&workers[i], i, next_seed, threads) == 0) running++, tally->workers++;
                }
            }
            continue;
        }
        uint64_t now = now_ms();
        if (watch && now / 5000 != last_report / 5000) {
            last_report = now;
            for (int i = 0; i < procs; i++)
                if (workers[i].pid) describe_slot("watch", &shared->slots[i]);
        }
        for (int i = 0; i < procs; i++) {
            struct worker_state *w = &workers[i];
            if (!w->pid) continue;
            uint64_t made = atomic_load(&shared->slots[i].calls);
            if (made != w->last_calls) {
                w->last_calls = made;
                w->last_change = now;
            } else if (!w->killed_at && now - w->last_change > STALL_MS) {
                kill(w->pid, SIGCONT);
                kill(w->pid, SIGKILL);
                w->killed_at = now;
            } else if (w->killed_at && now - w->killed_at > HANG_MS) {
                describe_slot("HANG (SIGKILL did not end it)", &shared->slots[i]);
                list_processes();
                dump_file("/proc/lamina/sched");
                return -1;
            }
        }
        usleep(10000);
    }
    if (watch) printf("fuzz: round %d: every worker ended; ending their descendants\n", round);
    if (end_every_descendant() != 0) {
        printf("fuzz: HANG: processes left after the round that SIGKILL did not end:\n");
        pid_t waited = waitpid(-1, 0, WNOHANG);
        printf("fuzz:   (waitpid(-1, WNOHANG): %d%s%s)\n", (int)waited, waited < 0 ? ", " : "", waited < 0 ? strerror(errno) : "");
        list_processes();
        dump_file("/proc/lamina/sched");
        return -1;
    }
    return 0;
}

static void usage(void) {
    fprintf(stderr, "usage: syscall_fuzz [-s SEED] [-n CALLS] [-p PROCS] [-t THREADS] [-r ROUNDS] [-m MASK] [-L] [-w] [-H]\n"
                    "       syscall_fuzz -R WORKER_SEED [-n CALLS] [-m MASK] [-v]\n");
    exit(2);
}

/* The calls' weights: all of them, or with focus mask `mask` about a
 * quarter of the calls (chosen by the mask as a seed). */
static void choose_calls(uint64_t mask) {
    total_weight = 0;
    for (size_t i = 0; i < CALLS; i++) {
        weights[i] = mask && mix(mask, i) % 4 ? 0 : calls[i].weight;
        total_weight += weights[i];
    }
    if (total_weight == 0) choose_calls(0);
}

static void prepare_memory(void) {
    buffers = mmap(0, (BUFFER_PAGES + 1) * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    arena = mmap(0, ARENA_BYTES, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    shared = mmap(0, sizeof *shared, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (buffers == MAP_FAILED || arena == MAP_FAILED || shared == MAP_FAILED) {
        perror("syscall_fuzz: mmap");
        exit(2);
    }
    mprotect(buffers + BUFFER_PAGES * PAGE, PAGE, PROT_NONE);
    /* Part of the arena is mapped to begin with, so that the memory calls
     * meet mappings as well as holes. */
    mmap(arena, ARENA_BYTES / 4, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    memset(long_name, 'n', sizeof long_name - 1);
    memset(too_long_path, 'p', sizeof too_long_path - 1);
}

int main(int argc, char **argv) {
    uint64_t seed = 1, replay = 0, total = 100000, mask = 0;
    int procs = 4, threads = 2, rounds = 5, leak_check = 0, option;
    while ((option = getopt(argc, argv, "s:n:p:t:r:R:m:LvwH")) != -1) {
        switch (option) {
        case 's': seed = strtoull(optarg, 0, 0); break;
        case 'n': total = strtoull(optarg, 0, 0); break;
        case 'p': procs = atoi(optarg); break;
        case 't': threads = atoi(optarg); break;
        case 'r': rounds = atoi(optarg); break;
        case 'R': replay = strtoull(optarg, 0, 0); break;
        case 'm': mask = strtoull(optarg, 0, 0); break;
        case 'L': leak_check = 1; break;
        case 'v': verbose = 2; break;
        case 'w': watch = 1; break;
        case 'H': hold = 1; break;
        default: usage();
        }
    }
    if (procs < 1 || procs > MAX_WORKERS || threads < 1 || threads > MAX_THREADS || rounds < 1 || total < 1) usage();
    int persona = personality(0xffffffff);
    if (persona != -1 && !(persona & ADDR_NO_RANDOMIZE) && personality(persona | ADDR_NO_RANDOMIZE) != -1) {
        execv("/proc/self/exe", argv);
        /* Without /proc: on at the randomised addresses. */
    }
    setvbuf(stdout, 0, _IOLBF, 0);
    prepare_memory();
    choose_calls(mask);
    if (mask) {
        printf("fuzz: focus:");
        for (size_t i = 0; i < CALLS; i++)
            if (weights[i]) printf(" %s", calls[i].name);
        printf("\n");
    }
    if (replay) {
        /* One worker alone, in one thread: the calls its seed makes. */
        printf("fuzz: replaying worker seed %#llx for %llu calls\n", (unsigned long long)replay, (unsigned long long)total);
        pid_t pid = fork();
        if (pid == 0) run_worker(replay, 0, total, 1);
        int status = 0;
        waitpid(pid, &status, 0);
        describe_slot("replay ended", &shared->slots[0]);
        printf("fuzz: replay status %#x\n", status);
        return 0;
    }
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    alive("starting");
    pthread_t watcher;
    pthread_create(&watcher, 0, watch_parent, 0);
    signal(SIGPIPE, SIG_IGN);
    remove_leftovers();
    /* What the first exec of a program caches (its pages) is not a leak:
     * cache /bin/true's before the first measurement. */
    pid_t warm_up = fork();
    if (warm_up == 0) {
        execl("/bin/true", "true", (char *)0);
        _exit(127);
    }
    if (warm_up > 0) waitpid(warm_up, 0, 0);
    struct memory before = memory_now();
    uint64_t started = now_ms();
    printf("fuzz: seed %#llx, mask %#llx, %llu calls in %d rounds, %d processes of %d threads, addresses %s\n", (unsigned long long)seed,
           (unsigned long long)mask, (unsigned long long)total, rounds, procs, threads,
           personality(0xffffffff) & ADDR_NO_RANDOMIZE ? "fixed" : "randomised");
    struct tally tally = {0};
    struct memory warm = before;
    uint64_t per_worker = total / ((uint64_t)rounds * (uint64_t)procs);
    for (int round = 0; round < rounds; round++) {
        if (run_round(seed, round, procs, threads, per_worker ? per_worker : 1, &tally) != 0) {
            printf("fuzz: result FAIL (hang)\n");
            fflush(stdout);
            alive("holding for a debugger");
            while (hold) {
                alive("holding for a debugger");
                sleep(5);
            }
            return 1;
        }
        remove_leftovers();
        struct memory m = memory_now();
        printf("fuzz: round %d (%llu s): %llu workers so far (%llu stalled and killed, %llu killed by a signal, %llu exited non-zero); free %ld KiB, heap %ld KiB, %ld processes\n",
               round, (unsigned long long)((now_ms() - started) / 1000), (unsigned long long)tally.workers, (unsigned long long)tally.stalled, (unsigned long long)tally.signalled,
               (unsigned long long)tally.exited_badly, m.free_kib, m.heap_kib, m.processes);
        if (round == 0) warm = m;
    }
    struct memory after = memory_now();
    int failed = 0;
    if (after.processes != before.processes) {
        printf("fuzz: FAIL: %ld processes before, %ld after:\n", before.processes, after.processes);
        list_processes();
        failed = 1;
    }
    /* From the end of the first round (caches warm) to the end of the
     * last: what every later round lost for good. */
    long lost_free = warm.free_kib - after.free_kib, grown_heap = after.heap_kib - warm.heap_kib;
    printf("fuzz: memory after the first round vs the last: free frames %+ld KiB, heap %+ld KiB\n", -lost_free, grown_heap);
    if (leak_check && rounds > 1 && (lost_free > 1024 || grown_heap > 1024)) {
        printf("fuzz: FAIL: memory leaked (more than 1 MiB lost over %d rounds)\n", rounds - 1);
        failed = 1;
    }
    printf("fuzz: result %s\n", failed ? "FAIL" : "ok");
    return failed;
}
