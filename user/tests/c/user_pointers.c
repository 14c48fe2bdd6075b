/*
 * What the kernel does with the pointers a program passes: a bad one is
 * EFAULT and the kernel goes on; memory the program could use but has not
 * touched yet (demand-zero) or shares copy-on-write with a child works as
 * the program's own access would — a write through a system call into a
 * page shared after fork changes the writer's copy only; a read-only or
 * inaccessible page is never written; a pipe's or a Unix stream
 * socket's bytes stay in it when the copy to a bad buffer fails.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static int ends[2];
static int scratch;

/* Puts `text` in a file and reads it back into `into` (a file: a failed
 * read leaves its bytes where they are). */
static long through_file(const char *text, void *into) {
    long length = (long)strlen(text);
    if (pwrite(scratch, text, (size_t)length, 0) != length)
        return -2;
    return pread(scratch, into, (size_t)length, 0);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    if (pipe(ends) != 0)
        return 1;
    scratch = open("/tmp/user_pointers", O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (scratch < 0)
        return 1;
    unlink("/tmp/user_pointers");
    long page = sysconf(_SC_PAGESIZE);
    CHECK("write from NULL", write(ends[1], NULL, 8));
    CHECK("write from address 1", write(ends[1], (void *)1, 8));
    CHECK("write from a kernel address", write(ends[1], (void *)0xffff800000000000ul, 8));
    CHECK("write from the last user bytes and past them", write(ends[1], (void *)0x00007ffffffffffcul, 8));
    /* Raw calls: the C library's own wrapper may touch the buffer first. */
    struct stat info;
    CHECK("stat into NULL", syscall(SYS_stat, "/", NULL));
    CHECK("stat from a bad path pointer", syscall(SYS_stat, (const char *)16, &info));
    CHECK("stat into a kernel address", syscall(SYS_stat, "/", (void *)0xffff800000001000ul));
    CHECK("read into NULL", through_file("abcd", NULL));
    /* A pipe's bytes stay in it when the copy out fails. */
    CHECK("write to a pipe", write(ends[1], "kept", 4));
    CHECK("read a pipe into NULL", read(ends[0], NULL, 4));
    char kept[5] = {0};
    CHECK("read the pipe again", read(ends[0], kept, 4));
    printf("it read: %s\n", kept);
    /* And a Unix stream socket's. */
    int pair[2];
    CHECK("socketpair", socketpair(AF_UNIX, SOCK_STREAM, 0, pair));
    CHECK("write to a socket", write(pair[0], "sock", 4));
    CHECK("read a socket into NULL", read(pair[1], NULL, 4));
    char kept_too[5] = {0};
    CHECK("read the socket again", recv(pair[1], kept_too, 4, MSG_DONTWAIT));
    printf("it read: %s\n", kept_too);

    char *fresh = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK("read into untouched memory", through_file("fresh", fresh + page - 2));
    printf("it holds: %.5s\n", fresh + page - 2);

    char *read_only = mmap(NULL, (size_t)page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK("read into a read-only page", through_file("nope", read_only));
    printf("the read-only page still holds zero: %s\n", read_only[0] == 0 ? "yes" : "no");
    char *none = mmap(NULL, (size_t)page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK("read into an inaccessible page", through_file("nope", none));
    CHECK("write from an inaccessible page", write(ends[1], none, 4));

    char *shared_after_fork = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    strcpy(shared_after_fork, "parent");
    pid_t child = fork();
    if (child == 0) {
        long got = through_file("child!", shared_after_fork);
        _exit(got == 6 && memcmp(shared_after_fork, "child!", 6) == 0 ? 0 : 1);
    }
    int status = 0;
    waitpid(child, &status, 0);
    printf("the child read into its copy: %s\n", WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "yes" : "no");
    printf("the parent's copy holds: %s\n", shared_after_fork);
    CHECK("the parent reads into its own", through_file("mine!!", shared_after_fork));
    printf("the parent's copy holds: %.6s\n", shared_after_fork);
    CHECK("munmap", munmap(fresh + page, (size_t)page));
    CHECK("read into an unmapped page", through_file("ab", fresh + page));
    return 0;
}
