/*
 * Lamina's native IPC, timed (included by syscalls.c after `now`): a call
 * answered by `reply_recv` in another process, both on CPU 0
 * (ipc_roundtrip_0w_user: no payload, the seL4 fast-path figure), and with
 * the server on CPU 1 when there is one (ipc_roundtrip_cross_cpu). Linux
 * has no such call: there these print nothing, and the records carry
 * Lamina's figure alone.
 */
#include <lamina/native.h>

/* Answers every call on `endpoint` with its own words, forever. */
static void ipc_echo_server(uint64_t endpoint) {
    struct lamina_message message = {{0}, 0};
    if (lamina_ipc(LAMINA_RECV, endpoint, &message) < 0)
        _exit(1);
    for (;;) {
        message.info = 0;
        if (lamina_ipc(LAMINA_REPLY_RECV, endpoint, &message) < 0)
            _exit(1);
    }
}

static void pin_to(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof set, &set);
}

/* Time per call + answer with the server on `server_cpu`, or -1. */
static double ipc_roundtrip(int server_cpu, long rounds) {
    int64_t endpoint = lamina_create_endpoint(LAMINA_ALL);
    if (endpoint < 0)
        return -1;
    pin_to(0);
    pid_t server = fork();
    if (server == 0) {
        pin_to(server_cpu);
        ipc_echo_server((uint64_t)endpoint);
    }
    struct lamina_message message = {{0}, 0};
    for (long i = 0; i < rounds / 10 + 1; i++) /* warm up */
        lamina_ipc(LAMINA_CALL, endpoint, &message);
    uint64_t start = now();
    for (long i = 0; i < rounds; i++) {
        message.info = 0;
        if (lamina_ipc(LAMINA_CALL, endpoint, &message) < 0)
            return -1;
    }
    double each = (double)(now() - start) / (double)rounds;
    kill(server, SIGKILL);
    waitpid(server, NULL, 0);
    lamina_drop((uint64_t)endpoint);
    cpu_set_t all;
    CPU_ZERO(&all);
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
        CPU_SET(cpu, &all);
    sched_setaffinity(0, sizeof all, &all);
    return each;
}

static void ipc_roundtrips(long rounds) {
    double same = ipc_roundtrip(0, rounds);
    if (same < 0)
        return;
    printf("bench ipc_roundtrip_0w_user %.1f\n", same);
    if (sysconf(_SC_NPROCESSORS_ONLN) > 1) {
        double cross = ipc_roundtrip(1, rounds);
        if (cross >= 0)
            printf("bench ipc_roundtrip_cross_cpu %.1f\n", cross);
    }
}
