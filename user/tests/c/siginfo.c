/*
 * siginfo as Linux fills it: kill (SI_USER with the sender's pid and uid),
 * sigqueue's value (SI_QUEUE), raise/tgkill (SI_TKILL), SIGCHLD for an exit
 * and a kill (CLD_EXITED / CLD_KILLED with the child's pid and status),
 * and a fault's SIGSEGV (SEGV_MAPERR or SEGV_ACCERR with the address).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static volatile siginfo_t seen;
static volatile int count;
static sigjmp_buf back;

static void on_signal(int signal, siginfo_t *info, void *context) {
    (void)signal;
    (void)context;
    memcpy((void *)&seen, info, sizeof seen);
    count++;
}

static void on_fault(int signal, siginfo_t *info, void *context) {
    on_signal(signal, info, context);
    siglongjmp(back, 1);
}

static void handle(int signal, void (*handler)(int, siginfo_t *, void *)) {
    struct sigaction action = {0};
    action.sa_sigaction = handler;
    action.sa_flags = SA_SIGINFO;
    sigemptyset(&action.sa_mask);
    sigaction(signal, &action, NULL);
}

static void wait_for(int before) {
    for (int tries = 0; count == before && tries < 2000; tries++)
        usleep(1000);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    handle(SIGUSR1, on_signal);
    handle(SIGCHLD, on_signal);
    handle(SIGSEGV, on_fault);

    pid_t parent = getpid();
    int before = count;
    pid_t child = fork();
    if (child == 0) {
        kill(parent, SIGUSR1);
        pause();
        _exit(0);
    }
    wait_for(before);
    printf("kill: signo %d code %d from the child %s uid %d\n", seen.si_signo, seen.si_code, seen.si_pid == child ? "yes" : "no", (int)seen.si_uid);
    before = count;
    kill(child, SIGKILL);
    wait_for(before);
    printf("SIGCHLD for a kill: code %d (CLD_KILLED %d) child %s status %d\n", seen.si_code, CLD_KILLED, seen.si_pid == child ? "yes" : "no", seen.si_status);
    waitpid(child, NULL, 0);

    before = count;
    child = fork();
    if (child == 0)
        _exit(42);
    wait_for(before);
    printf("SIGCHLD for an exit: code %d (CLD_EXITED %d) child %s status %d\n", seen.si_code, CLD_EXITED, seen.si_pid == child ? "yes" : "no", seen.si_status);
    waitpid(child, NULL, 0);

    before = count;
    raise(SIGUSR1);
    printf("raise: code %d (SI_TKILL %d) own pid %s\n", seen.si_code, SI_TKILL, seen.si_pid == getpid() ? "yes" : "no");

    union sigval payload = {.sival_int = 1234};
    before = count;
    CHECK("sigqueue", sigqueue(getpid(), SIGUSR1, payload));
    printf("sigqueue: code %d (SI_QUEUE %d) value %d\n", seen.si_code, SI_QUEUE, seen.si_value.sival_int);

    volatile int *nowhere = (volatile int *)(uintptr_t)0x10;
    if (sigsetjmp(back, 1) == 0)
        *nowhere = 1;
    printf("unmapped write: signo %d code %d (SEGV_MAPERR %d) address %#lx\n", seen.si_signo, seen.si_code, SEGV_MAPERR, (unsigned long)(uintptr_t)seen.si_addr);
    volatile int *readonly = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (sigsetjmp(back, 1) == 0)
        readonly[1] = 1;
    printf("read-only write: code %d (SEGV_ACCERR %d) at the page %s\n", seen.si_code, SEGV_ACCERR, seen.si_addr == (void *)&readonly[1] ? "yes" : "no");

    /* A real-time signal queues every sending, in order; a standard one
     * is pending once. */
    sigset_t realtime;
    sigemptyset(&realtime);
    sigaddset(&realtime, SIGRTMIN);
    sigaddset(&realtime, SIGUSR2);
    sigprocmask(SIG_BLOCK, &realtime, NULL);
    for (int value = 1; value <= 5; value++) {
        union sigval queued = {.sival_int = value};
        sigqueue(getpid(), SIGRTMIN, queued);
        sigqueue(getpid(), SIGUSR2, queued);
    }
    struct timespec none = {0, 0};
    sigset_t only;
    sigemptyset(&only);
    sigaddset(&only, SIGRTMIN);
    printf("five SIGRTMIN queued, taken:");
    siginfo_t taken;
    while (sigtimedwait(&only, &taken, &none) == SIGRTMIN)
        printf(" %d", taken.si_value.sival_int);
    printf("\nfive SIGUSR2 sent, taken:");
    sigemptyset(&only);
    sigaddset(&only, SIGUSR2);
    while (sigtimedwait(&only, &taken, &none) == SIGUSR2)
        printf(" %d", taken.si_value.sival_int);
    printf("\n");
    return 0;
}
