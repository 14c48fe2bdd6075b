/*
 * /sys/devices/system/cpu as programs read it (glibc's get_nprocs_conf,
 * stress-ng): online, possible and present in Linux's list format, and
 * one cpuN directory per CPU, with an online file for all but cpu0.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

static void show(const char *path) {
    char text[64] = "";
    FILE *file = fopen(path, "r");
    if (!file) {
        printf("%s: missing\n", path);
        return;
    }
    if (!fgets(text, sizeof text, file)) text[0] = 0;
    fclose(file);
    text[strcspn(text, "\n")] = 0;
    printf("%s: %s\n", path, text);
}

int main(void) {
    /* The Linux guest's init does not mount sysfs; Lamina's /sys is there
     * from boot (and its mount of sysfs is accepted). Results not shown. */
    mkdir("/sys", 0555);
    mount("sysfs", "/sys", "sysfs", 0, NULL);
    show("/sys/devices/system/cpu/online");
    show("/sys/devices/system/cpu/possible");
    show("/sys/devices/system/cpu/present");
    DIR *directory = opendir("/sys/devices/system/cpu");
    int cpus = 0;
    struct dirent *entry;
    while (directory && (entry = readdir(directory))) {
        char *end;
        if (strncmp(entry->d_name, "cpu", 3) == 0 && entry->d_name[3] >= '0' && entry->d_name[3] <= '9') {
            strtol(entry->d_name + 3, &end, 10);
            if (*end == 0) cpus++;
        }
    }
    if (directory) closedir(directory);
    EXPECT("cpuN directories, one per online CPU", cpus == sysconf(_SC_NPROCESSORS_ONLN));
    show("/sys/devices/system/cpu/cpu1/online");
    CHECK("cpu0 has no online file", access("/sys/devices/system/cpu/cpu0/online", F_OK));
    return 0;
}
