/*
 * No-execute (issue 23): code copied into the stack, the heap, a writable
 * mapping or read-only data does not run (SIGSEGV); the same bytes run once
 * the page is made executable with mprotect, and stop again when it is made
 * read-only. (Writable and executable at once, which Linux allows and
 * Lamina refuses — W^X —, is checked in native/isolation.c.)
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"

/* mov eax, 42; ret */
static const unsigned char code[] = {0xb8, 0x2a, 0x00, 0x00, 0x00, 0xc3};
static const unsigned char in_read_only_data[16] = {0xb8, 0x2a, 0x00, 0x00, 0x00, 0xc3};

static sigjmp_buf recover;

static void on_fault(int signal) {
    siglongjmp(recover, signal);
}

/* Calls `where` as a function: "returned 42", or the signal it died of. */
static void try_running(const char *what, void *where) {
    struct sigaction action = {.sa_handler = on_fault}, old_segv, old_bus;
    sigaction(SIGSEGV, &action, &old_segv);
    sigaction(SIGBUS, &action, &old_bus);
    int signal = sigsetjmp(recover, 1);
    if (signal == 0) {
        int (*function)(void) = (int (*)(void))where;
        int result = function();
        printf("%s: returned %d\n", what, result);
    } else {
        printf("%s: %s\n", what, signal == SIGSEGV ? "SIGSEGV" : "another signal");
    }
    sigaction(SIGSEGV, &old_segv, NULL);
    sigaction(SIGBUS, &old_bus, NULL);
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    unsigned char on_stack[64] __attribute__((aligned(16)));
    memcpy(on_stack, code, sizeof code);
    try_running("code on the stack", on_stack);

    unsigned char *on_heap = malloc(64);
    memcpy(on_heap, code, sizeof code);
    try_running("code on the heap", on_heap);

    try_running("code in read-only data", (void *)in_read_only_data);

    unsigned char *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memcpy(page, code, sizeof code);
    try_running("code in a read-write mapping", page);
    CHECK("mprotect to read-execute", mprotect(page, 4096, PROT_READ | PROT_EXEC));
    try_running("  after mprotect(PROT_READ | PROT_EXEC)", page);
    CHECK("mprotect to read only", mprotect(page, 4096, PROT_READ));
    try_running("  after mprotect(PROT_READ)", page);

    return 0;
}
