/*
 * Where threads run: one thread spins 300 million additions, then four
 * threads do the same at once; prints both times, their ratio and the
 * CPU each thread ended on (sched_getcpu). On N CPUs a kernel that
 * spreads threads shows a ratio near 4/N. Build: musl-gcc -static -O1
 * -o thread_spread thread_spread.c; run: cargo xtask exec --smp 4
 * [--linux] -- ./thread_spread
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
static volatile unsigned long sink;
static int cpus[8];
static void *spin(void *arg) {
    long index = (long)arg;
    unsigned long x = 0;
    for (unsigned long i = 0; i < 300000000UL; i++) x += i;
    sink = x;
    cpus[index] = sched_getcpu();
    return NULL;
}
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
int main(void) {
    double start = now();
    spin((void *)0);
    double one = now() - start;
    pthread_t threads[4];
    start = now();
    for (long i = 0; i < 4; i++) pthread_create(&threads[i], NULL, spin, (void *)i);
    for (int i = 0; i < 4; i++) pthread_join(threads[i], NULL);
    double four = now() - start;
    printf("one thread %.2f s, four threads %.2f s (%.2f x), cpus %d %d %d %d\n", one, four, four / one, cpus[0], cpus[1], cpus[2], cpus[3]);
    return 0;
}
