/*
 * The kernel crash tier's workload (xtask/src/testing/crash_tier.rs): runs
 * a plan of file operations under a directory while QEMU logs every write
 * and flush the disk sees, and timestamps the log with markers.
 *
 *   crash_workload PLAN DIRECTORY DEVICE FIRST_MARKER_SECTOR
 *
 * PLAN holds one operation a line, `<process> <verb> <arguments>` (the
 * format of crash-check's `plan.rs`, which also builds the model the crash
 * states are judged by): mkdir, rmdir, create PATH SEED LENGTH, write
 * PATH SEED OFFSET LENGTH, fsync PATH, sync, rename FROM TO, unlink PATH,
 * sqlite-create DATABASE and sqlite-insert DATABASE ROW (one statement,
 * one transaction, by a `/bin/sqlite3` process each, with
 * `synchronous=extra`: the rollback journal's unlink, SQLite's commit
 * point, is made durable by an fsync of its directory before the
 * statement returns — under the default `full` it is not, and a power
 * cut may roll the last transaction back, as SQLite documents).
 * Lines of process 0 run in order; a run of lines of processes 1, 2, ...
 * runs as that many processes at once.
 *
 * Before operation i starts and after it returns, a 512-byte marker is
 * written to DEVICE at sector FIRST_MARKER_SECTOR + 2i (+1): the magic,
 * i, and 0 for begin or 1 for end. Plain writes, never flushed: they date
 * the log and make nothing durable. Data bytes are crash-check's
 * `bytes_for(seed, length)`, computed the same way here.
 *
 * Prints `crash-workload: N operations done` and exits 0, or names the
 * operation that failed and exits 1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_STEPS 4096
#define MAX_LINE 512

struct step {
    int process;
    char line[MAX_LINE];
};

static struct step steps[MAX_STEPS];
static const char *directory;
static int device;
static uint64_t first_marker;

static void marker(long operation, int end) {
    unsigned char sector[512] = {0};
    memcpy(sector, "LAMINA-CRASH-MK\n", 16);
    uint64_t number = (uint64_t)operation;
    memcpy(sector + 16, &number, 8);
    sector[24] = (unsigned char)end;
    off_t at = (off_t)((first_marker + 2 * (uint64_t)operation + (uint64_t)end) * 512);
    if (pwrite(device, sector, sizeof sector, at) != (ssize_t)sizeof sector) {
        printf("crash-workload: marker %ld/%d: %s\n", operation, end, strerror(errno));
        exit(1);
    }
}

static void bytes_for(uint32_t seed, unsigned char *out, size_t length) {
    uint64_t state = 0x9E3779B97F4A7C15ull ^ ((uint64_t)seed << 32 | 0xA5A5);
    for (size_t i = 0; i < length; i++) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        out[i] = (unsigned char)(state >> 24);
    }
}

static void path_of(char *out, const char *relative) {
    snprintf(out, 4096, "%s%s", directory, relative);
}

static int write_all(int fd, uint32_t seed, size_t offset, size_t length) {
    unsigned char *data = malloc(length ? length : 1);
    if (data == NULL)
        return -1;
    bytes_for(seed, data, length);
    size_t done = 0;
    while (done < length) {
        ssize_t wrote = pwrite(fd, data + done, length - done, (off_t)(offset + done));
        if (wrote <= 0) {
            free(data);
            return -1;
        }
        done += (size_t)wrote;
    }
    free(data);
    return 0;
}

/* Runs `/bin/sqlite3 DATABASE STATEMENT` to its end. */
static int sqlite(const char *database, const char *statement) {
    pid_t child = fork();
    if (child == 0) {
        execl("/bin/sqlite3", "sqlite3", database, statement, (char *)NULL);
        _exit(127);
    }
    int status;
    if (child < 0 || waitpid(child, &status, 0) != child)
        return -1;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return errno = EIO, -1;
    return 0;
}

/* Runs one plan line; 0 or -1 with errno. */
static int perform(const char *line) {
    char verb[16], first[1024], second[1024];
    char path[4096], other[4096];
    unsigned long seed, a, b;
    if (sscanf(line, "%15s", verb) != 1)
        return errno = EINVAL, -1;
    if (strcmp(verb, "sync") == 0) {
        sync();
        return 0;
    }
    if (sscanf(line, "%*s %1023s", first) != 1)
        return errno = EINVAL, -1;
    path_of(path, first);
    if (strcmp(verb, "mkdir") == 0)
        return mkdir(path, 0755);
    if (strcmp(verb, "rmdir") == 0)
        return rmdir(path);
    if (strcmp(verb, "unlink") == 0)
        return unlink(path);
    if (strcmp(verb, "rename") == 0) {
        if (sscanf(line, "%*s %*s %1023s", second) != 1)
            return errno = EINVAL, -1;
        path_of(other, second);
        return rename(path, other);
    }
    if (strcmp(verb, "sqlite-create") == 0)
        return sqlite(path, "pragma synchronous=extra; create table t(id integer primary key, v text);");
    if (strcmp(verb, "sqlite-insert") == 0 && sscanf(line, "%*s %*s %lu", &a) == 1) {
        char statement[256];
        snprintf(statement, sizeof statement, "pragma synchronous=extra; insert into t values(%lu, 'row %lu, inserted in a transaction of its own');", a, a);
        return sqlite(path, statement);
    }
    if (strcmp(verb, "fsync") == 0) {
        int fd = open(path, O_RDONLY);
        if (fd < 0)
            return -1;
        int result = fsync(fd);
        close(fd);
        return result;
    }
    if (strcmp(verb, "create") == 0 && sscanf(line, "%*s %*s %lu %lu", &seed, &a) == 2) {
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
        if (fd < 0)
            return -1;
        int result = write_all(fd, (uint32_t)seed, 0, a);
        close(fd);
        return result;
    }
    if (strcmp(verb, "write") == 0 && sscanf(line, "%*s %*s %lu %lu %lu", &seed, &a, &b) == 3) {
        int fd = open(path, O_WRONLY);
        if (fd < 0)
            return -1;
        int result = write_all(fd, (uint32_t)seed, a, b);
        close(fd);
        return result;
    }
    return errno = EINVAL, -1;
}

/* Runs the steps of `process` among first..last, in order. */
static void run_steps(int process, long first, long last) {
    for (long i = first; i < last; i++) {
        if (steps[i].process != process)
            continue;
        marker(i, 0);
        if (perform(steps[i].line) != 0) {
            printf("crash-workload: operation %ld (%s) failed: %s\n", i, steps[i].line, strerror(errno));
            exit(1);
        }
        marker(i, 1);
    }
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: crash_workload PLAN DIRECTORY DEVICE FIRST_MARKER_SECTOR\n");
        return 2;
    }
    directory = argv[2];
    first_marker = strtoull(argv[4], NULL, 10);
    FILE *plan = fopen(argv[1], "r");
    device = open(argv[3], O_RDWR);
    if (plan == NULL || device < 0) {
        printf("crash-workload: cannot open the plan or the device: %s\n", strerror(errno));
        return 1;
    }
    long count = 0;
    char line[MAX_LINE + 8];
    while (count < MAX_STEPS && fgets(line, sizeof line, plan) != NULL) {
        line[strcspn(line, "\n")] = 0;
        int consumed = 0;
        if (sscanf(line, "%d %n", &steps[count].process, &consumed) != 1)
            continue;
        snprintf(steps[count].line, MAX_LINE, "%s", line + consumed);
        count++;
    }
    fclose(plan);
    long at = 0;
    while (at < count) {
        if (steps[at].process == 0) {
            run_steps(0, at, at + 1);
            at++;
            continue;
        }
        /* A run of concurrent steps: one process per number. */
        long end = at;
        int highest = 0;
        while (end < count && steps[end].process != 0) {
            if (steps[end].process > highest)
                highest = steps[end].process;
            end++;
        }
        fflush(stdout);
        for (int process = 1; process <= highest; process++) {
            pid_t child = fork();
            if (child == 0) {
                run_steps(process, at, end);
                fflush(stdout);
                _exit(0);
            }
            if (child < 0) {
                printf("crash-workload: fork: %s\n", strerror(errno));
                return 1;
            }
        }
        int status, failed = 0;
        while (wait(&status) > 0)
            failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
        if (failed)
            return 1;
        at = end;
    }
    printf("crash-workload: %ld operations done\n", count);
    return 0;
}
