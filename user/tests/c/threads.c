/* Threads (clone with CLONE_THREAD through pthreads): creation, join,
 * mutexes and condition variables over futexes, thread-local storage,
 * thread ids, pthread_exit, and exit_group ending every thread. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "check.h"

#define THREADS 4
#define ROUNDS 2000

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static long counter;
static int arrived;
static __thread int own_value;
static pid_t ids[THREADS];

static void *worker(void *argument) {
    long index = (long)argument;
    own_value = (int)index * 10;
    ids[index] = (pid_t)syscall(SYS_gettid);
    for (int round = 0; round < ROUNDS; round++) {
        pthread_mutex_lock(&lock);
        counter++;
        pthread_mutex_unlock(&lock);
    }
    pthread_mutex_lock(&lock);
    arrived++;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
    return (void *)(long)(own_value + 1);
}

static void *exits_early(void *argument) {
    (void)argument;
    pthread_exit((void *)7);
    return NULL;
}

static void *sleeps_forever(void *argument) {
    (void)argument;
    for (;;)
        pause();
    return NULL;
}

int main(void) {
    pthread_t threads[THREADS];
    own_value = -1;
    for (long i = 0; i < THREADS; i++)
        CHECK("pthread_create", pthread_create(&threads[i], NULL, worker, (void *)i));
    pthread_mutex_lock(&lock);
    while (arrived < THREADS)
        pthread_cond_wait(&changed, &lock);
    pthread_mutex_unlock(&lock);
    long sum = 0;
    for (int i = 0; i < THREADS; i++) {
        void *result;
        CHECK("pthread_join", pthread_join(threads[i], &result));
        sum += (long)result;
    }
    printf("counter %ld (want %d)\n", counter, THREADS * ROUNDS);
    printf("results sum %ld\n", sum);
    printf("main's own value still %d\n", own_value);
    int distinct = 1;
    for (int i = 0; i < THREADS; i++)
        for (int j = 0; j < i; j++)
            distinct &= ids[i] != ids[j];
    EXPECT("thread ids distinct", distinct);
    EXPECT("thread ids differ from pid", ids[0] != getpid());
    EXPECT("main thread id is pid", syscall(SYS_gettid) == getpid());
    pthread_t early;
    void *value;
    pthread_create(&early, NULL, exits_early, NULL);
    CHECK("join early", pthread_join(early, &value));
    printf("pthread_exit value %ld\n", (long)value);
    pid_t child = fork();
    if (child == 0) {
        pthread_t sleeper;
        pthread_create(&sleeper, NULL, sleeps_forever, NULL);
        usleep(10000);
        exit(5); /* exit_group ends the sleeping thread too */
    }
    int status;
    waitpid(child, &status, 0);
    printf("child with a sleeping thread exited %d\n", WEXITSTATUS(status));
    return 0;
}
