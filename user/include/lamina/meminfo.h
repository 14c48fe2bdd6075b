/*
 * One field of /proc/meminfo, for guest programs that check memory comes
 * back (the same on Lamina and Linux). Header-only; nothing else here.
 */
#ifndef LAMINA_MEMINFO_H
#define LAMINA_MEMINFO_H

#include <stdio.h>
#include <string.h>

/* The value in KiB of `field` ("MemFree", "MemAvailable"...), or -1. */
static inline long meminfo_kib(const char *field) {
    FILE *file = fopen("/proc/meminfo", "r");
    char line[128];
    long value = -1;
    size_t length = strlen(field);
    while (file && fgets(line, sizeof line, file)) {
        if (strncmp(line, field, length) == 0 && line[length] == ':') {
            sscanf(line + length + 1, "%ld", &value);
            break;
        }
    }
    if (file) fclose(file);
    return value;
}

#endif
