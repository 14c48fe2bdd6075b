/*
 * The machine's names: sethostname and setdomainname change what uname
 * and /proc/sys/kernel report; 64 bytes at most (EINVAL beyond, and for
 * a negative length), EFAULT for a bad pointer, EPERM for a process that
 * is not root. Output is identical on Lamina and Linux (the names are
 * set before they are printed).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static void show(void) {
    struct utsname names;
    uname(&names);
    printf("  uname: nodename \"%s\" domainname \"%s\"\n", names.nodename, names.domainname);
    const char *files[] = {"/proc/sys/kernel/hostname", "/proc/sys/kernel/domainname", "/proc/sys/kernel/ostype"};
    for (int index = 0; index < 3; index++) {
        char text[128] = {0};
        int fd = open(files[index], O_RDONLY);
        ssize_t got = fd < 0 ? -1 : read(fd, text, sizeof text - 1);
        printf("  %s: %s", files[index], got < 0 ? "unreadable\n" : text);
        close(fd);
    }
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    struct utsname before;
    uname(&before);
    CHECK("sethostname(\"box\")", sethostname("box", 3));
    CHECK("setdomainname(\"example\")", setdomainname("example", 7));
    show();
    char longest[65];
    memset(longest, 'x', sizeof longest);
    CHECK("sethostname of 64 bytes", sethostname(longest, 64));
    struct utsname names;
    uname(&names);
    printf("  its length: %d\n", (int)strlen(names.nodename));
    CHECK("sethostname of 65 bytes", sethostname(longest, 65));
    CHECK("sethostname of length -1", syscall(170, "x", -1L));
    CHECK("sethostname from a bad pointer", sethostname((const char *)8, 4));
    CHECK("an empty host name", sethostname("", 0));
    show();
    pid_t child = fork();
    if (child == 0) {
        setuid(1000);
        CHECK("sethostname as uid 1000", sethostname("nope", 4));
        CHECK("setdomainname as uid 1000", setdomainname("nope", 4));
        _exit(0);
    }
    waitpid(child, NULL, 0);
    CHECK("sethostname(\"lamina\")", sethostname("lamina", 6));
    CHECK("setdomainname(\"(none)\")", setdomainname("(none)", 6));
    show();
    /* The names the boot had, for the tests after this one. */
    sethostname(before.nodename, strlen(before.nodename));
    setdomainname(before.domainname, strlen(before.domainname));
    return 0;
}
