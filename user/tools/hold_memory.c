/*
 * hold_memory MIB: allocates MIB mebibytes, writes every page, reads them
 * all back and prints "held MIB MiB" (or what went wrong). The page-cache
 * check runs it after filling memory with cached file data: the cache
 * must give frames back to a program's page faults.
 */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    long mib = argc > 1 ? atol(argv[1]) : 0;
    if (mib <= 0) {
        fprintf(stderr, "usage: hold_memory MIB\n");
        return 2;
    }
    long bytes = mib << 20;
    unsigned char *memory = malloc(bytes);
    if (memory == NULL) {
        printf("malloc of %ld MiB failed\n", mib);
        return 1;
    }
    for (long at = 0; at < bytes; at += 4096) {
        memory[at] = (unsigned char)(at >> 12);
    }
    for (long at = 0; at < bytes; at += 4096) {
        if (memory[at] != (unsigned char)(at >> 12)) {
            printf("page %ld lost its byte\n", at >> 12);
            return 1;
        }
    }
    printf("held %ld MiB\n", mib);
    return 0;
}
