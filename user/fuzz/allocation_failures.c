/*
 * Allocation-failure injection's driver (issue 23; Biscuit's method): runs a
 * workload once with its allocations (frames, and the kernel heap's fallible
 * sites) recorded by call path, then once
 * per recorded path with that path's first allocation failing. Each time the
 * kernel must go on (a hang or a panic fails the run), the workload must end
 * (a failed call is an errno, a failed page fault an OOM kill), and at the
 * end the free memory must be what it was before the failures (nothing
 * leaked). The kernel side is Lamina's own prctl,
 * PR_LAMINA_ALLOCATION_FAILURES (docs/reliability.md).
 *
 * allocation_failures [-v]        the run; prints `inject: result ok` last
 * allocation_failures -b         80 runs without failures: the drift of free memory
 * allocation_failures workload    the workload alone
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mqueue.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/msg.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <dirent.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <lamina/meminfo.h>

#define PR_LAMINA_ALLOCATION_FAILURES 0x4c414600
enum { OP_OFF, OP_RECORD, OP_ARM, OP_MARK, OP_REPORT, OP_FIRED };
#define MAX_PATHS 1024
#define REPORT_BYTES (1 << 20)
/* Longest one workload run may take (TCG): past it the kernel hangs. */
#define RUN_SECONDS 60
/* Free memory may differ this much at the end (caches). */
#define LEAK_TOLERANCE_KIB 512

static long control(long op, long a, long b) {
    return prctl(PR_LAMINA_ALLOCATION_FAILURES, op, a, b, 0);
}

/* The workload's System V IPC keys (fixed, so that what a killed run left
 * can be found and removed). */
#define SHM_KEY 0x1a1a0001
#define MSG_KEY 0x1a1a0002
#define SEM_KEY 0x1a1a0003

/* ---- the workload: calls that take frames and make kernel objects ---- */

static void *thread_body(void *argument) {
    volatile char stack_use[8192];
    stack_use[0] = 1;
    return stack_use[0] ? argument : NULL;
}

static int workload(void) {
    /* Anonymous memory, touched (demand zero) and grown. */
    char *memory = mmap(NULL, 64 << 10, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory != MAP_FAILED) {
        for (int at = 0; at < (64 << 10); at += 4096) memory[at] = 1;
        char *grown = mremap(memory, 64 << 10, 256 << 10, MREMAP_MAYMOVE);
        if (grown != MAP_FAILED) {
            grown[200 << 10] = 2;
            munmap(grown, 256 << 10);
        }
    }
    /* The heap's break. */
    char *end = sbrk(0);
    if (sbrk(64 << 10) != (void *)-1) {
        end[4096] = 1;
        sbrk(-(64 << 10));
    }
    /* A fork whose child writes (copy-on-write), and a fork that execs. */
    static volatile char shared_page[4096] = {1};
    pid_t child = fork();
    if (child == 0) {
        shared_page[0] = 2;
        _exit(shared_page[0] == 2 ? 0 : 1);
    }
    if (child > 0) waitpid(child, NULL, 0);
    child = fork();
    if (child == 0) {
        execl("/bin/true", "true", (char *)NULL);
        _exit(127);
    }
    if (child > 0) waitpid(child, NULL, 0);
    /* A thread (a kernel stack). */
    pthread_t thread;
    if (pthread_create(&thread, NULL, thread_body, NULL) == 0) pthread_join(thread, NULL);
    /* A pipe and a socket pair with data in flight. */
    static char buffer[16 << 10];
    int ends[2];
    if (pipe(ends) == 0) {
        if (write(ends[1], buffer, sizeof buffer) > 0 && read(ends[0], buffer, sizeof buffer) < 0) return 1;
        close(ends[0]);
        close(ends[1]);
    }
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, ends) == 0) {
        if (send(ends[0], buffer, 4096, 0) > 0 && recv(ends[1], buffer, 4096, 0) < 0) return 1;
        close(ends[0]);
        close(ends[1]);
    }
    /* A file in the tmpfs, written, mapped shared, read and removed. */
    int fd = open("/tmp/inject-file", O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) {
        if (write(fd, buffer, sizeof buffer) > 0) {
            char *mapped = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            if (mapped != MAP_FAILED) {
                mapped[5000] = 3;
                munmap(mapped, 8192);
            }
        }
        close(fd);
        unlink("/tmp/inject-file");
    }
    /* Descriptors of every kind the kernel makes objects for. */
    int epoll = epoll_create1(0), event = eventfd(1, 0), timer = timerfd_create(CLOCK_MONOTONIC, 0);
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGUSR1);
    int signal_fd = signalfd(-1, &signals, 0);
    if (epoll >= 0 && event >= 0) {
        struct epoll_event wanted = {.events = EPOLLIN};
        epoll_ctl(epoll, EPOLL_CTL_ADD, event, &wanted);
        epoll_wait(epoll, &wanted, 1, 0);
    }
    int made[] = {epoll, event, timer, signal_fd};
    for (unsigned i = 0; i < sizeof made / sizeof made[0]; i++)
        if (made[i] >= 0) close(made[i]);
    /* TCP over the loopback: a listener, a connection, bytes each way. */
    int listener = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_addr = {htonl(INADDR_LOOPBACK)}};
    socklen_t address_length = sizeof address;
    if (listener >= 0 && bind(listener, (struct sockaddr *)&address, sizeof address) == 0 && listen(listener, 1) == 0 &&
        getsockname(listener, (struct sockaddr *)&address, &address_length) == 0) {
        int client = socket(AF_INET, SOCK_STREAM, 0);
        if (client >= 0 && connect(client, (struct sockaddr *)&address, sizeof address) == 0) {
            int server = accept(listener, NULL, NULL);
            if (server >= 0) {
                if (send(client, buffer, 2048, 0) > 0) recv(server, buffer, 2048, 0);
                close(server);
            }
        }
        if (client >= 0) close(client);
    }
    if (listener >= 0) close(listener);
    int datagram = socket(AF_INET, SOCK_DGRAM, 0);
    if (datagram >= 0) {
        struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(9), .sin_addr = {htonl(INADDR_LOOPBACK)}};
        sendto(datagram, buffer, 100, 0, (struct sockaddr *)&to, sizeof to);
        close(datagram);
    }
    /* System V and POSIX IPC objects, made and removed. */
    int segment = shmget(SHM_KEY, 16384, IPC_CREAT | 0600);
    if (segment >= 0) {
        char *attached = shmat(segment, NULL, 0);
        if (attached != (void *)-1) {
            attached[8192] = 5;
            shmdt(attached);
        }
        shmctl(segment, IPC_RMID, NULL);
    }
    int queue = msgget(MSG_KEY, IPC_CREAT | 0600);
    if (queue >= 0) {
        struct { long type; char text[64]; } message = {1, "hello"};
        if (msgsnd(queue, &message, sizeof message.text, 0) == 0) msgrcv(queue, &message, sizeof message.text, 0, 0);
        msgctl(queue, IPC_RMID, NULL);
    }
    int semaphores = semget(SEM_KEY, 4, IPC_CREAT | 0600);
    if (semaphores >= 0) {
        struct sembuf up = {0, 1, 0};
        semop(semaphores, &up, 1);
        semctl(semaphores, 0, IPC_RMID);
    }
    mqd_t message_queue = mq_open("/inject-queue", O_RDWR | O_CREAT, 0600, NULL);
    if (message_queue != (mqd_t)-1) {
        mq_send(message_queue, "hi", 2, 0);
        mq_close(message_queue);
        mq_unlink("/inject-queue");
    }
    /* The tree: directories, links, a listing of /proc. */
    if (mkdir("/tmp/inject-dir", 0700) == 0) {
        symlink("/tmp/inject-dir", "/tmp/inject-link");
        rename("/tmp/inject-link", "/tmp/inject-dir/link");
        unlink("/tmp/inject-dir/link");
        rmdir("/tmp/inject-dir");
    }
    DIR *listing = opendir("/proc");
    if (listing) {
        while (readdir(listing)) {
        }
        closedir(listing);
    }
    /* Memory whose mapping is split and changed. */
    char *split = mmap(NULL, 8 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (split != MAP_FAILED) {
        split[0] = split[5 * 4096] = 1;
        mprotect(split + 2 * 4096, 4096, PROT_READ);
        madvise(split + 4 * 4096, 2 * 4096, MADV_DONTNEED);
        mlock(split, 4096);
        munmap(split + 4096, 4096);
    }
    /* A memfd, grown and mapped. */
    fd = memfd_create("inject", 0);
    if (fd >= 0) {
        if (ftruncate(fd, 32 << 10) == 0) {
            char *mapped = mmap(NULL, 32 << 10, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            if (mapped != MAP_FAILED) {
                mapped[20000] = 4;
                munmap(mapped, 32 << 10);
            }
        }
        close(fd);
    }
    return 0;
}

/* ---- the driver ---- */

static char self_path[256];
static int verbose;


/* Kills and reaps whatever a run left (this process is a subreaper). */
static void reap_everything(void) {
    kill(-getpid(), 0);
    for (;;) {
        pid_t left = waitpid(-1, NULL, WNOHANG);
        if (left > 0) continue;
        if (left == 0) {
            /* Something is still running: end it. */
            struct timespec pause_time = {0, 10 * 1000 * 1000};
            nanosleep(&pause_time, NULL);
            continue;
        }
        break;
    }
}

/* Removes what a run that was killed half-way left behind (files, IPC
 * objects): the workload's leftovers, not the kernel's. */
static void remove_leftovers(void) {
    unlink("/tmp/inject-file");
    unlink("/tmp/inject-link");
    unlink("/tmp/inject-dir/link");
    rmdir("/tmp/inject-dir");
    mq_unlink("/inject-queue");
    int id = shmget(SHM_KEY, 0, 0);
    if (id >= 0) shmctl(id, IPC_RMID, NULL);
    id = msgget(MSG_KEY, 0);
    if (id >= 0) msgctl(id, IPC_RMID, NULL);
    id = semget(SEM_KEY, 0, 0);
    if (id >= 0) semctl(id, 0, IPC_RMID);
}

static void on_alarm(int signal) {
    (void)signal;
}

/* Runs the workload in a child (injectable when `marked`); its wait status,
 * or -1 if it did not end within RUN_SECONDS. */
static int run_workload(int marked) {
    pid_t child = fork();
    if (child == 0) {
        if (marked && control(OP_MARK, 1, 0) != 0) _exit(120);
        execl(self_path, self_path, "workload", (char *)NULL);
        _exit(127);
    }
    if (child < 0) return -2;
    struct sigaction action = {.sa_handler = on_alarm};
    sigaction(SIGALRM, &action, NULL);
    alarm(RUN_SECONDS);
    int status = 0;
    pid_t done = waitpid(child, &status, 0);
    alarm(0);
    if (done != child) return -1;
    reap_everything();
    remove_leftovers();
    return status;
}

static const char *ending(int status) {
    static char text[32];
    if (status == -1) return "HANG";
    if (WIFEXITED(status)) snprintf(text, sizeof text, "exit %d", WEXITSTATUS(status));
    else snprintf(text, sizeof text, "signal %d", WTERMSIG(status));
    return text;
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "workload") == 0) return workload();
    verbose = argc == 2 && strcmp(argv[1], "-v") == 0;
    /* Fixed addresses (as under `setarch -R`), so that every run of the
     * workload takes the paths the recording saw: a randomised layout can
     * need a page-table page one run and not the next. */
    int persona = personality(0xffffffff);
    if (persona != -1 && !(persona & ADDR_NO_RANDOMIZE) && personality(persona | ADDR_NO_RANDOMIZE) != -1) execv("/proc/self/exe", argv);
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (readlink("/proc/self/exe", self_path, sizeof self_path - 1) < 0) {
        printf("inject: cannot find myself: %s\n", strerror(errno));
        return 1;
    }
    if (control(OP_OFF, 0, 0) != 0) {
        printf("inject: PR_LAMINA_ALLOCATION_FAILURES refused: %s\n", strerror(errno));
        return 1;
    }
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    /* Warm the caches (exec cache, page cache) before anything is measured. */
    for (int i = 0; i < 2; i++) {
        int status = run_workload(0);
        if (status != 0) {
            printf("inject: the workload alone ended with %s\n", ending(status));
            return 1;
        }
    }
    if (argc == 2 && strcmp(argv[1], "-b") == 0) {
        /* The drift of free memory over runs without failures. */
        long first = meminfo_kib("MemFree");
        for (int i = 0; i < 80; i++) run_workload(0);
        printf("inject: 80 runs without failures: free %ld KiB -> %ld KiB\n", first, meminfo_kib("MemFree"));
        return 0;
    }
    control(OP_RECORD, 0, 0);
    int status = run_workload(1);
    control(OP_OFF, 0, 0);
    if (status != 0) {
        printf("inject: the recorded workload ended with %s\n", ending(status));
        return 1;
    }
    static char report[REPORT_BYTES];
    long length = control(OP_REPORT, (long)report, sizeof report - 1);
    if (length < 0 || length >= (long)sizeof report) {
        printf("inject: no report (%ld)\n", length);
        return 1;
    }
    report[length] = 0;
    static uint64_t hashes[MAX_PATHS];
    static long hits[MAX_PATHS];
    static char *names[MAX_PATHS];
    int paths = 0, frame_paths = 0;
    long overflow = -1;
    for (char *line = strtok(report, "\n"); line; line = strtok(NULL, "\n")) {
        char site[16];
        if (sscanf(line, "overflow %ld", &overflow) == 1) continue;
        if (paths < MAX_PATHS && sscanf(line, "%" SCNx64 " %15s %ld", &hashes[paths], site, &hits[paths]) == 3) {
            frame_paths += strcmp(site, "frame") == 0;
            names[paths++] = line;
        }
    }
    long before = meminfo_kib("MemFree");
    printf("inject: %d allocation paths recorded (%d of frames, %d of the heap; %ld lost to a full table), %ld KiB free\n", paths,
           frame_paths, paths - frame_paths, overflow, before);
    int fired = 0, hangs = 0, clean_ends = 0, runs = 0, middles = 0, worst_path = -1;
    long worst_loss = 0;
    for (int path = 0; path < paths && hangs == 0; path++) {
        /* The path's first allocation fails, then (for a path taken more
         * than once) one half-way through what the workload does on it. */
        for (int which = 0; which < 2 && hangs == 0; which++) {
            long skip = which == 0 ? 0 : hits[path] / 2;
            if (which == 1 && skip == 0) break;
            long free_before = meminfo_kib("MemFree");
            control(OP_ARM, (long)hashes[path], skip);
            status = run_workload(1);
            long failed = control(OP_FIRED, 0, 0);
            control(OP_OFF, 0, 0);
            runs++;
            long lost = free_before - meminfo_kib("MemFree");
            if (lost > worst_loss) {
                worst_loss = lost;
                worst_path = path;
            }
            fired += failed > 0 && which == 0;
            middles += failed > 0 && which == 1;
            hangs += status == -1;
            clean_ends += status != -1;
            if (verbose || status == -1)
                printf("inject: path %d allocation %ld: %s, workload %s: %s\n", path, skip, failed > 0 ? "failed" : "not reached", ending(status),
                       names[path]);
        }
    }
    /* The kernel still does everything the workload asks, unfailed. */
    status = run_workload(0);
    long after = meminfo_kib("MemFree");
    int leaked = before - after > LEAK_TOLERANCE_KIB;
    printf("inject: %d paths, %d failed at their first allocation, %d also half-way, %d not reached again, %d hangs in %d runs; workload after "
           "them: %s; free %ld KiB -> %ld KiB\n",
           paths, fired, middles, paths - fired, hangs, runs, ending(status), before, after);
    if (worst_path >= 0)
        printf("inject: the most free memory one run ended with less: %ld KiB, path %d: %s\n", worst_loss, worst_path, names[worst_path]);
    int ok = paths > 0 && hangs == 0 && status == 0 && !leaked && clean_ends == runs;
    printf("inject: result %s\n", ok ? "ok" : "FAIL");
    return ok ? 0 : 1;
}
