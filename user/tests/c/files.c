/* Files: open, read, write, seek, positioned I/O, truncate, stat family,
 * names (link, rename, unlink, mkdir, rmdir, symlink, readlink), the
 * working directory, umask, access, and their error paths. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "check.h"

static void list(const char *path) {
    DIR *directory = opendir(path);
    if (!directory) {
        printf("opendir %s: %s\n", path, errno_name(errno));
        return;
    }
    char names[64][260];
    int count = 0;
    struct dirent *entry;
    while ((entry = readdir(directory)) && count < 64)
        snprintf(names[count++], 260, "%s%s", entry->d_name, entry->d_type == DT_DIR ? "/" : "");
    closedir(directory);
    qsort(names, count, 260, (int (*)(const void *, const void *))strcmp);
    printf("list %s:", path);
    for (int i = 0; i < count; i++)
        printf(" %s", names[i]);
    printf("\n");
}

/* The same listing through the old getdents(2) and its struct linux_dirent
 * (d_type in the record's last byte), as old binaries read directories. */
static void list_old(const char *path) {
    int fd = open(path, O_RDONLY | O_DIRECTORY);
    if (fd < 0) {
        printf("open %s: %s\n", path, errno_name(errno));
        return;
    }
    char records[4096];
    char names[64][260];
    int count = 0;
    long got;
    while ((got = syscall(SYS_getdents, fd, records, sizeof records)) > 0) {
        for (long at = 0; at < got && count < 64;) {
            unsigned short length = *(unsigned short *)(records + at + 16);
            const char *name = records + at + 18;
            char type = records[at + length - 1];
            snprintf(names[count++], 260, "%s%s", name, type == DT_DIR ? "/" : "");
            at += length;
        }
    }
    if (got < 0)
        printf("getdents %s: %s\n", path, errno_name(errno));
    close(fd);
    qsort(names, count, 260, (int (*)(const void *, const void *))strcmp);
    printf("old list %s:", path);
    for (int i = 0; i < count; i++)
        printf(" %s", names[i]);
    printf("\n");
}

int main(void) {
    char buffer[256];
    CHECK("chdir /tmp", chdir("/tmp"));
    CHECK("mkdir t", mkdir("t", 0755));
    CHECK("mkdir t again", mkdir("t", 0755));
    CHECK("chdir t", chdir("t"));
    CHECK("getcwd", getcwd(buffer, sizeof buffer) ? 0 : -1);
    printf("cwd: %s\n", buffer);
    CHECK("getcwd small", getcwd(buffer, 3) ? 0 : -1);
    CHECK("umask", umask(022));
    int fd = open("a.txt", O_CREAT | O_RDWR | O_TRUNC, 0666);
    EXPECT("open a.txt", fd >= 0);
    CHECK("write", write(fd, "hello, world\n", 13));
    CHECK("lseek set 7", lseek(fd, 7, SEEK_SET));
    memset(buffer, 0, sizeof buffer);
    CHECK("read", read(fd, buffer, 100));
    printf("read back: %s", buffer);
    CHECK("lseek end", lseek(fd, 0, SEEK_END));
    CHECK("lseek negative", lseek(fd, -100, SEEK_SET));
    CHECK("lseek bad whence", lseek(fd, 0, 42));
    CHECK("pwrite", pwrite(fd, "HELLO", 5, 0));
    memset(buffer, 0, sizeof buffer);
    CHECK("pread", pread(fd, buffer, 5, 0));
    printf("pread back: %s\n", buffer);
    CHECK("pread negative", pread(fd, buffer, 5, -1));
    struct stat status;
    CHECK("fstat", fstat(fd, &status));
    printf("size %ld mode %o nlink %ld\n", (long)status.st_size, status.st_mode, (long)status.st_nlink);
    CHECK("ftruncate 4", ftruncate(fd, 4));
    CHECK("fstat", fstat(fd, &status));
    printf("size after truncate %ld\n", (long)status.st_size);
    CHECK("ftruncate negative", ftruncate(fd, -1));
    CHECK("fsync", fsync(fd));
    CHECK("close", close(fd));
    CHECK("close again", close(fd));
    CHECK("read closed", read(fd, buffer, 1));
    CHECK("write closed", write(fd, buffer, 1));
    CHECK("open missing", open("missing", O_RDONLY));
    CHECK("open excl existing", open("a.txt", O_CREAT | O_EXCL | O_WRONLY, 0644));
    CHECK("open dir for writing", open("/tmp", O_WRONLY));
    CHECK("open file as directory", open("a.txt", O_RDONLY | O_DIRECTORY));
    CHECK("open through file", open("a.txt/x", O_RDONLY));
    CHECK("open bad pointer", syscall(SYS_open, (char *)1, O_RDONLY));
    CHECK("stat bad buffer", syscall(SYS_stat, "a.txt", (void *)16));
    CHECK("read bad buffer", read(0 + 100, (void *)1, 1));
    fd = open("a.txt", O_RDONLY);
    CHECK("read into bad buffer", read(fd, (void *)1, 1));
    CHECK("write on read-only", write(fd, "x", 1));
    close(fd);
    CHECK("link", link("a.txt", "b.txt"));
    CHECK("stat b", stat("b.txt", &status));
    printf("links: %ld\n", (long)status.st_nlink);
    CHECK("symlink", symlink("a.txt", "c.link"));
    memset(buffer, 0, sizeof buffer);
    CHECK("readlink", readlink("c.link", buffer, sizeof buffer));
    printf("link target: %s\n", buffer);
    CHECK("readlink on file", readlink("a.txt", buffer, sizeof buffer));
    CHECK("lstat link", lstat("c.link", &status));
    EXPECT("lstat sees a link", S_ISLNK(status.st_mode));
    CHECK("stat through link", stat("c.link", &status));
    EXPECT("stat sees a file", S_ISREG(status.st_mode));
    CHECK("symlink loop", symlink("loop", "loop"));
    CHECK("open loop", open("loop", O_RDONLY));
    CHECK("open nofollow", open("c.link", O_RDONLY | O_NOFOLLOW));
    CHECK("rename", rename("b.txt", "d.txt"));
    CHECK("rename missing", rename("b.txt", "e.txt"));
    CHECK("mkdir sub", mkdir("sub", 0700));
    CHECK("rename file onto dir", rename("d.txt", "sub"));
    CHECK("rename dir into itself", rename("sub", "sub/inner"));
    CHECK("unlink dir", unlink("sub"));
    CHECK("rmdir file", rmdir("d.txt"));
    int inner = open("sub/f", O_CREAT | O_WRONLY, 0600);
    close(inner);
    CHECK("rmdir non-empty", rmdir("sub"));
    CHECK("access exists", access("a.txt", R_OK | W_OK));
    CHECK("access missing", access("nothing", F_OK));
    CHECK("access bad mode", access("a.txt", 0x40));
    CHECK("chmod", chmod("a.txt", 0600));
    CHECK("stat", stat("a.txt", &status));
    printf("mode now %o\n", status.st_mode & 07777);
    CHECK("newfstatat empty path", fstatat(AT_FDCWD, "", &status, 0));
    CHECK("unlinkat dir", unlinkat(AT_FDCWD, "sub/f", 0));
    CHECK("unlinkat removedir", unlinkat(AT_FDCWD, "sub", AT_REMOVEDIR));
    CHECK("unlinkat bad flag", unlinkat(AT_FDCWD, "a.txt", 0x1));
    list(".");
    list_old(".");
    list("/tmp/t/../t");
    char long_name[300];
    memset(long_name, 'x', 299);
    long_name[299] = 0;
    CHECK("long name", open(long_name, O_RDONLY));
    CHECK("dup2 bad", dup2(100, 3));
    CHECK("fcntl bad fd", fcntl(100, F_GETFD));
    CHECK("chdir to file", chdir("a.txt"));
    CHECK("chdir missing", chdir("/nope"));
    return 0;
}
