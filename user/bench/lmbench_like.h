/*
 * The records users compare kernels by, LMbench-style, for the `syscalls`
 * group (included by syscalls.c, which times the plain ones; the ones
 * that take a size print their own `bench NAME value` lines): a token
 * passed around a ring of 2, 8 and 16 processes (lat_ctx, per hop),
 * signal install and delivery (lat_sig), select/poll/epoll over 10, 100
 * and 1,000 ready descriptors (per call), pipe and UNIX-socket bandwidth
 * (per 64 KiB), open+close, a read fault on a mapped file page (per page)
 * and a thread's create+join.
 *
 * Not here: `execve` of a dynamic program (the group runs static programs
 * only) and TCP loopback latency (the `net` group's tcp_rtt).
 */
#include <poll.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>

/* A ring of `size` processes (this one and size - 1 children), each
 * reading the token from its pipe and writing it to the next one's. The
 * children end only after the time is taken (they wait for `done` to
 * close): a child's exit, which tears down its copy of the parent's
 * address space, is not a hop. Counted, it doubled the figure after
 * fork_64m had left 64 MiB mapped. */
static double token_ring(int size, long rounds) {
    int ends[16][2], done[2];
    for (int i = 0; i < size; i++)
        pipe(ends[i]);
    pipe(done);
    char token = 0;
    for (int i = 1; i < size; i++) {
        if (fork() == 0) {
            close(done[1]);
            for (long round = 0; round < rounds; round++) {
                read(ends[i][0], &token, 1);
                write(ends[(i + 1) % size][1], &token, 1);
            }
            read(done[0], &token, 1);
            _exit(0);
        }
    }
    uint64_t start = now();
    for (long round = 0; round < rounds; round++) {
        write(ends[1 % size][1], &token, 1);
        read(ends[0][0], &token, 1);
    }
    uint64_t spent = now() - start;
    close(done[0]);
    close(done[1]);
    for (int i = 1; i < size; i++)
        wait(NULL);
    for (int i = 0; i < size; i++) {
        close(ends[i][0]);
        close(ends[i][1]);
    }
    return (double)spent / (double)(rounds * size);
}

static void lat_ctx(long rounds) {
    const int sizes[] = {2, 8, 16};
    for (int i = 0; i < 3; i++) {
        token_ring(sizes[i], rounds / 10 + 1); /* warm up */
        printf("bench lat_ctx_%d %.1f\n", sizes[i], token_ring(sizes[i], rounds));
    }
}

static volatile long signals_taken;

static void count_signal(int signal) {
    (void)signal;
    signals_taken++;
}

static void lat_sig_install(long rounds) {
    struct sigaction action = {0};
    action.sa_handler = count_signal;
    for (long i = 0; i < rounds; i++)
        sigaction(SIGUSR1, &action, NULL);
}

/* A signal sent to oneself and its handler run. */
static void lat_sig_deliver(long rounds) {
    struct sigaction action = {0};
    action.sa_handler = count_signal;
    sigaction(SIGUSR1, &action, NULL);
    pid_t me = getpid();
    for (long i = 0; i < rounds; i++)
        kill(me, SIGUSR1);
}

/* `count` descriptors of one pipe's write side (always writable), the
 * pipe's read side kept open; returns the first. */
static int writable_descriptors(int count, int *reader) {
    int ends[2];
    pipe(ends);
    *reader = ends[0];
    int first = ends[1];
    for (int i = 1; i < count; i++)
        dup(first);
    return first;
}

static void close_descriptors(int first, int count, int reader) {
    for (int i = 0; i < count; i++)
        close(first + i);
    close(reader);
}

static void waiting_calls(long rounds) {
    const int counts[] = {10, 100, 1000};
    for (int size = 0; size < 3; size++) {
        int count = counts[size], reader;
        int first = writable_descriptors(count, &reader);
        long calls = rounds * 10 / count + 1;
        /* select */
        fd_set wanted;
        uint64_t start = now();
        for (long i = 0; i < calls; i++) {
            FD_ZERO(&wanted);
            for (int fd = first; fd < first + count; fd++)
                FD_SET(fd, &wanted);
            struct timeval zero = {0, 0};
            select(first + count, NULL, &wanted, NULL, &zero);
        }
        printf("bench select_%d %.1f\n", count, (double)(now() - start) / (double)calls);
        /* poll */
        struct pollfd *polled = calloc((size_t)count, sizeof *polled);
        for (int i = 0; i < count; i++) {
            polled[i].fd = first + i;
            polled[i].events = POLLOUT;
        }
        start = now();
        for (long i = 0; i < calls; i++)
            poll(polled, (nfds_t)count, 0);
        printf("bench poll_%d %.1f\n", count, (double)(now() - start) / (double)calls);
        free(polled);
        /* epoll: every descriptor ready, level-triggered */
        int instance = epoll_create1(0);
        for (int i = 0; i < count; i++) {
            struct epoll_event event = {.events = EPOLLOUT, .data.u32 = (uint32_t)i};
            epoll_ctl(instance, EPOLL_CTL_ADD, first + i, &event);
        }
        struct epoll_event *events = calloc((size_t)count, sizeof *events);
        start = now();
        for (long i = 0; i < calls; i++)
            epoll_wait(instance, events, count, 0);
        printf("bench epoll_%d %.1f\n", count, (double)(now() - start) / (double)calls);
        free(events);
        close(instance);
        close_descriptors(first, count, reader);
    }
}

#define CHUNK (64 * 1024)

/* `rounds` chunks of 64 KiB from a child through `ends` (ends[1] is the
 * child's side, ends[0] this one's); per chunk. */
static double stream_bandwidth(int ends[2], long rounds) {
    static char chunk[CHUNK];
    pid_t child = fork();
    if (child == 0) {
        close(ends[0]);
        for (long i = 0; i < rounds; i++)
            for (size_t sent = 0; sent < CHUNK;) {
                ssize_t wrote = write(ends[1], chunk + sent, CHUNK - sent);
                if (wrote <= 0)
                    _exit(1);
                sent += (size_t)wrote;
            }
        _exit(0);
    }
    close(ends[1]);
    uint64_t start = now();
    for (long i = 0; i < rounds; i++)
        for (size_t got = 0; got < CHUNK;) {
            ssize_t read_now = read(ends[0], chunk + got, CHUNK - got);
            if (read_now <= 0)
                break;
            got += (size_t)read_now;
        }
    uint64_t spent = now() - start;
    close(ends[0]);
    waitpid(child, NULL, 0);
    return (double)spent / (double)rounds;
}

static void bandwidth(long rounds) {
    int ends[2];
    pipe(ends);
    printf("bench pipe_64k %.1f\n", stream_bandwidth(ends, rounds));
    socketpair(AF_UNIX, SOCK_STREAM, 0, ends);
    printf("bench unix_stream_64k %.1f\n", stream_bandwidth(ends, rounds));
}

static void open_close(long rounds) {
    for (long i = 0; i < rounds; i++)
        close(open("/bench/syscalls", O_RDONLY));
}

/* Read faults on the pages of a 1 MiB file mapped privately; per page. */
static void mmap_file_fault(long rounds) {
    const size_t size = 1 << 20;
    int fd = open("/tmp/bench-mapped", O_CREAT | O_RDWR | O_TRUNC, 0644);
    for (size_t written = 0; written < size; written += sizeof page)
        write(fd, page, sizeof page);
    long maps = rounds / (long)(size / 4096) + 1;
    volatile char sum = 0;
    uint64_t start = now();
    for (long i = 0; i < maps; i++) {
        char *region = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        for (size_t offset = 0; offset < size; offset += 4096)
            sum += region[offset];
        munmap(region, size);
    }
    printf("bench mmap_file_fault_4k %.1f\n", (double)(now() - start) / (double)(maps * (long)(size / 4096)));
    close(fd);
    unlink("/tmp/bench-mapped");
}

static void *do_nothing(void *argument) {
    return argument;
}

static void thread_create_join(long rounds) {
    for (long i = 0; i < rounds; i++) {
        pthread_t thread;
        pthread_create(&thread, NULL, do_nothing, NULL);
        pthread_join(thread, NULL);
    }
}
