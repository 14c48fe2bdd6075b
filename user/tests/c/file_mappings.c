/*
 * Shared mappings of files: stores through a MAP_SHARED mapping reach the
 * file (read, a private mapping made later) and writes to the file reach
 * the mapping; two mappings, a forked child's and an unrelated open's
 * mapping of the same file share one memory; truncation zeroes what lies
 * past the end; an unlinked file's mapping stays shared; POSIX shared
 * memory (shm_open) and named semaphores (sem_open) work across processes.
 */
#include <fcntl.h>
#include <semaphore.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

#define SIZE 8192

static int wait_child(pid_t child) {
    int status;
    waitpid(child, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

static void stores_and_writes_meet(void) {
    int fd = open("/tmp/mapped", O_RDWR | O_CREAT | O_TRUNC, 0644);
    write(fd, "hello world", 11);
    ftruncate(fd, SIZE);
    char *map = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    EXPECT("mmap MAP_SHARED of a file", map != MAP_FAILED);
    EXPECT("  it shows the file", memcmp(map, "hello world", 11) == 0);
    map[0] = 'H';
    map[SIZE - 1] = '!';
    char bytes[12] = {0};
    pread(fd, bytes, 11, 0);
    printf("  pread after a store: %s\n", bytes);
    pread(fd, bytes, 1, SIZE - 1);
    printf("  the last byte: %c\n", bytes[0]);
    pwrite(fd, "WORLD", 5, 6);
    printf("  the mapping after pwrite: %.11s\n", map);
    char *again = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    again[1] = 'E';
    printf("  a second mapping's store seen by the first: %c\n", map[1]);
    char *private = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    printf("  a private mapping made later: %.11s\n", private);
    private[0] = 'p';
    printf("  its own store stays its own: %c\n", map[0]);
    CHECK("msync(MS_SYNC)", msync(map, SIZE, MS_SYNC));

    pid_t child = fork();
    if (child == 0) {
        map[2] = 'L';
        int own = open("/tmp/mapped", O_RDWR);
        char *fresh = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, own, 0);
        fresh[3] = 'L';
        _exit(fresh[2] == 'L' ? 0 : 1);
    }
    printf("  a child's stores (inherited and own mapping): %d %.5s\n", wait_child(child), map);

    ftruncate(fd, 4);
    printf("  after truncating to 4: byte 5 is %d, byte 2 is %c\n", map[5], map[2]);
    ftruncate(fd, SIZE);
    struct stat status;
    fstat(fd, &status);
    printf("  size after growing again: %ld\n", (long)status.st_size);
    munmap(map, SIZE);
    munmap(again, SIZE);
    munmap(private, SIZE);
    close(fd);

    int readonly = open("/tmp/mapped", O_RDONLY);
    CHECK("MAP_SHARED writable of a read-only descriptor", (long)mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, readonly, 0));
    char *view = mmap(NULL, SIZE, PROT_READ, MAP_SHARED, readonly, 0);
    EXPECT("MAP_SHARED read-only of it", view != MAP_FAILED && memcmp(view, "HELL", 4) == 0);
    munmap(view, SIZE);
    close(readonly);
}

static void unlinked_file_stays_shared(void) {
    int fd = open("/tmp/gone", O_RDWR | O_CREAT | O_TRUNC, 0644);
    ftruncate(fd, 4096);
    volatile int *counter = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    CHECK("unlink of a mapped file", unlink("/tmp/gone"));
    pid_t child = fork();
    if (child == 0) {
        *counter = 42;
        _exit(0);
    }
    wait_child(child);
    printf("  the child's store through it: %d\n", *counter);
}

static void posix_shared_memory(void) {
    shm_unlink("/lamina-test");
    int fd = shm_open("/lamina-test", O_RDWR | O_CREAT | O_EXCL, 0600);
    EXPECT("shm_open", fd >= 0);
    CHECK("  ftruncate", ftruncate(fd, 4096));
    pid_t child = fork();
    if (child == 0) {
        int own = shm_open("/lamina-test", O_RDWR, 0);
        char *memory = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, own, 0);
        strcpy(memory, "from the child");
        _exit(0);
    }
    wait_child(child);
    char *memory = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    printf("  the parent's later mapping reads: %s\n", memory);
    CHECK("  shm_unlink", shm_unlink("/lamina-test"));
    close(fd);

    sem_unlink("/lamina-sem");
    sem_t *semaphore = sem_open("/lamina-sem", O_CREAT | O_EXCL, 0600, 0);
    EXPECT("sem_open", semaphore != SEM_FAILED);
    child = fork();
    if (child == 0) {
        sem_t *own = sem_open("/lamina-sem", 0);
        sem_post(own);
        sem_post(own);
        _exit(0);
    }
    wait_child(child);
    struct timespec limit = time_after_ms(CLOCK_REALTIME, 2000);
    CHECK("  sem_timedwait sees the child's post", sem_timedwait(semaphore, &limit));
    int value = -1;
    sem_getvalue(semaphore, &value);
    printf("  value left: %d\n", value);
    CHECK("  sem_unlink", sem_unlink("/lamina-sem"));
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    stores_and_writes_meet();
    unlinked_file_stays_shared();
    posix_shared_memory();
    return 0;
}
