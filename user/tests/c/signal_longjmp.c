/*
 * Handlers that leave by siglongjmp, many times over (stress-ng's sigsegv
 * stressor's pattern): 20,000 faults caught on the alternate stack and
 * 20,000 on the main stack, each left by siglongjmp, all survive; then a
 * handler that returns normally, nested in another, gives each
 * interrupted level its own floating-point state back.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"

static sigjmp_buf back;
static volatile int caught;

static void on_fault(int signal) {
    (void)signal;
    caught++;
    siglongjmp(back, 1);
}

static long faults_left_by_longjmp(int on_alternate, int rounds) {
    struct sigaction action = {.sa_handler = on_fault, .sa_flags = on_alternate ? SA_ONSTACK : 0};
    sigemptyset(&action.sa_mask);
    sigaction(SIGSEGV, &action, NULL);
    volatile char *read_only = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    caught = 0;
    for (volatile int round = 0; round < rounds; round++) {
        if (sigsetjmp(back, 1) == 0) {
            read_only[0] = 1;
        }
    }
    munmap((void *)read_only, 4096);
    signal(SIGSEGV, SIG_DFL);
    return caught;
}

static volatile double inner_result;

static void inner(int signal) {
    (void)signal;
    volatile double value = 3.0;
    for (int step = 0; step < 10; step++) value = value * 1.5 + 0.25;
    inner_result = value;
}

static void outer(int signal) {
    (void)signal;
    volatile double mine = 7.0;
    raise(SIGUSR2);
    inner_result += mine * 2.0; /* mine must still be 7 */
}

int main(void) {
    stack_t alternate = {.ss_sp = malloc(64 * 1024), .ss_size = 64 * 1024};
    sigaltstack(&alternate, NULL);
    CHECK("faults caught on the alternate stack, each left by siglongjmp", faults_left_by_longjmp(1, 20000));
    CHECK("faults caught on the main stack, each left by siglongjmp", faults_left_by_longjmp(0, 20000));
    signal(SIGUSR1, outer);
    signal(SIGUSR2, inner);
    volatile double interrupted = 1.0 / 3.0;
    raise(SIGUSR1);
    EXPECT("the interrupted code's value is intact", interrupted == 1.0 / 3.0);
    printf("nested handlers computed %.6f\n", inner_result);
    return 0;
}
