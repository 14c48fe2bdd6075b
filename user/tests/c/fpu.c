/* The FPU/SSE state is each thread's own: processes and threads doing
 * floating point while yielding to each other on the same CPUs must each
 * get exactly the result they would get alone. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include "check.h"


/* A long loop with no calls: its values stay in SSE registers while
 * timer interrupts let the other threads run on the same CPU. */
static double work(double seed) {
    double sum = 0.0, term = seed;
    for (int i = 1; i <= 3000000; i++) {
        term = term * 1.0000001 + 1.0 / (double)i;
        sum += term / (double)(i % 7 + 1);
    }
    return sum;
}

static void *thread_work(void *argument) {
    double *slot = argument;
    *slot = work(*slot);
    return NULL;
}

int main(void) {
    double expected[4];
    for (int i = 0; i < 4; i++)
        expected[i] = work(i + 0.5);
    int ends[2];
    pipe(ends);
    for (int child = 0; child < 2; child++) {
        if (fork() == 0) {
            double seeds[2] = {child * 2 + 0.5, child * 2 + 1.5};
            pthread_t threads[2];
            for (int t = 0; t < 2; t++)
                pthread_create(&threads[t], NULL, thread_work, &seeds[t]);
            for (int t = 0; t < 2; t++)
                pthread_join(threads[t], NULL);
            int same = seeds[0] == expected[child * 2] && seeds[1] == expected[child * 2 + 1];
            write(ends[1], &same, sizeof same);
            _exit(0);
        }
    }
    int all_same = 1;
    for (int child = 0; child < 2; child++) {
        int same = 0;
        read(ends[0], &same, sizeof same);
        all_same &= same;
        wait(NULL);
    }
    EXPECT("every thread computed what it computes alone", all_same);
    return 0;
}
