/*
 * The first process of every guest that `cargo xtask exec` and `make run`
 * boot, on Lamina and on Linux alike: mounts /proc, /dev and /dev/shm (Linux needs
 * them; Lamina has them and accepts the calls), makes the console the
 * controlling terminal, runs the program named in /etc/lamina-init (its
 * arguments NUL-separated; /bin/sh when the file is missing) as its child,
 * reports its exit status between the markers xtask reads, and powers off.
 * Before the program it loads the kernel modules /etc/lamina-modules lists,
 * one path a line (xtask adds them for Linux guests with a disk: Debian
 * builds virtio and ext4 as modules; Lamina's guests have no such list),
 * and with /etc/lamina-disk mounts /dev/vda read-write at /mnt. BusyBox's
 * poweroff, reboot and halt (signals to process 1) sync, unmount and do so.
 *
 * Two ways to run it:
 * - on the console (no /etc/lamina-stdin): the program's standard streams
 *   are the console, for people at a terminal and for tests of the tty;
 * - piped (xtask put /etc/lamina-stdin in the archive): the program reads
 *   exactly that file and then end of file, and its standard output and
 *   error are pipes this process reads and copies to the console as
 *   `lamina-exec: out BASE64` and `lamina-exec: err BASE64` lines, so xtask
 *   gets every byte of each stream apart, whatever the console's line
 *   discipline or a kernel message printed between the lines.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <net/route.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_ARGUMENTS 1024

static char names[65536];

static int read_arguments(char **arguments) {
    int count = 0;
    int fd = open("/etc/lamina-init", O_RDONLY);
    ssize_t length = fd >= 0 ? read(fd, names, sizeof names - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (length <= 0) {
        strcpy(names, "/bin/sh");
        length = (ssize_t)strlen(names);
    }
    names[length] = 0;
    for (char *name = names; name < names + length && count < MAX_ARGUMENTS - 1; name += strlen(name) + 1)
        if (*name)
            arguments[count++] = name;
    arguments[count] = NULL;
    return count;
}

#define STDIN_FILE "/etc/lamina-stdin"
/* Bytes per console line: a multiple of 3, so only a stream's last line pads. */
#define CHUNK 768

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Writes all of `length` bytes to the console (fd 1), retrying short writes. */
static void write_console(const char *bytes, size_t length) {
    while (length > 0) {
        ssize_t written = write(1, bytes, length);
        if (written <= 0)
            return;
        bytes += written;
        length -= (size_t)written;
    }
}

/* One `lamina-exec: NAME BASE64` line for `length` (<= CHUNK) bytes. */
static void report_chunk(const char *name, const unsigned char *bytes, size_t length) {
    char line[64 + CHUNK / 3 * 4];
    size_t at = (size_t)snprintf(line, 64, "lamina-exec: %s ", name);
    for (size_t index = 0; index < length; index += 3) {
        unsigned value = (unsigned)bytes[index] << 16;
        if (index + 1 < length)
            value |= (unsigned)bytes[index + 1] << 8;
        if (index + 2 < length)
            value |= bytes[index + 2];
        line[at++] = alphabet[(value >> 18) & 63];
        line[at++] = alphabet[(value >> 12) & 63];
        line[at++] = index + 1 < length ? alphabet[(value >> 6) & 63] : '=';
        line[at++] = index + 2 < length ? alphabet[value & 63] : '=';
    }
    line[at++] = '\n';
    write_console(line, at);
}

/*
 * Waits for `child` (with WNOHANG in `flags`: only if it has already
 * exited) and, as process 1 must, reaps every orphan that ends meanwhile:
 * a program's children that outlive it (a test suite's, killed by its
 * runner) are ours to collect. Returns 1 with the child's wait status once
 * it has exited, 0 otherwise.
 */
static int reap(pid_t child, int *status, int flags) {
    for (;;) {
        int seen;
        pid_t pid = waitpid(-1, &seen, flags);
        if (pid == child) {
            *status = seen;
            return 1;
        }
        if (pid > 0 || (pid < 0 && errno == EINTR))
            continue;
        return 0;
    }
}

/*
 * Copies the child's two output pipes to the console until both reach end
 * of file, or until the child has exited and nothing more is waiting (a
 * background process it left may hold a pipe open). Returns the child's
 * wait status.
 */
static int relay_pipes(pid_t child, int output, int errors) {
    struct pollfd ends[2] = {{.fd = output, .events = POLLIN}, {.fd = errors, .events = POLLIN}};
    const char *names[2] = {"out", "err"};
    unsigned char chunk[CHUNK];
    int status = 0, exited = 0, open_ends = 2;
    while (open_ends > 0) {
        if (!exited && reap(child, &status, WNOHANG))
            exited = 1;
        int ready = poll(ends, 2, exited ? 0 : 100);
        if (ready < 0)
            continue;
        if (ready == 0 && exited)
            break;
        for (int which = 0; which < 2; which++) {
            if (ends[which].fd < 0 || ends[which].revents == 0)
                continue;
            ssize_t length = read(ends[which].fd, chunk, sizeof chunk);
            if (length > 0) {
                report_chunk(names[which], chunk, (size_t)length);
            } else {
                close(ends[which].fd);
                ends[which].fd = -1;
                open_ends--;
            }
        }
    }
    if (!exited)
        reap(child, &status, 0);
    return status;
}

/* Runs the program with STDIN_FILE as its input and pipes as its output. */
static int run_piped(char **arguments, char **environment) {
    int output[2], errors[2];
    if (pipe(output) < 0 || pipe(errors) < 0) {
        perror("init: pipe");
        return 127 << 8;
    }
    pid_t child = fork();
    if (child == 0) {
        int input = open(STDIN_FILE, O_RDONLY);
        if (input < 0) {
            perror(STDIN_FILE);
            _exit(127);
        }
        dup2(input, 0);
        dup2(output[1], 1);
        dup2(errors[1], 2);
        for (int fd = 3; fd < 16; fd++)
            close(fd);
        setpgid(0, 0);
        execve(arguments[0], arguments, environment);
        perror(arguments[0]);
        _exit(127);
    }
    close(output[1]);
    close(errors[1]);
    if (child < 0) {
        perror("init: fork");
        return 127 << 8;
    }
    return relay_pipes(child, output[0], errors[0]);
}

/* Runs the program on the console, its foreground process group. */
static int run_on_console(char **arguments, char **environment) {
    pid_t child = fork();
    if (child == 0) {
        setpgid(0, 0);
        tcsetpgrp(0, getpid());
        execve(arguments[0], arguments, environment);
        perror(arguments[0]);
        _exit(127);
    }
    int status = 127 << 8;
    if (child > 0)
        reap(child, &status, 0);
    tcsetpgrp(0, getpgrp());
    return status;
}

#define MODULE_LIST "/etc/lamina-modules"
#define DISK_MARKER "/etc/lamina-disk"

/* With /etc/lamina-disk (xtask's --disk), the disk is mounted read-write
   at /mnt (its journal replayed if it needs it). A disk that holds no
   ext4 stays unmounted, silently: the program then finds /mnt empty, on
   both kernels alike. */
static void mount_disk(void) {
    if (access(DISK_MARKER, F_OK) != 0)
        return;
    mkdir("/mnt", 0755);
    mount("/dev/vda", "/mnt", "ext4", 0, NULL);
}

/* The loopback interface up, as a booted system has it (Linux leaves lo
   down until someone brings it up; Lamina's is always up, and its
   interface ioctls may refuse: nothing to do then). */
static void bring_up_loopback(void) {
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return;
    struct ifreq request;
    memset(&request, 0, sizeof request);
    strcpy(request.ifr_name, "lo");
    if (ioctl(fd, SIOCGIFFLAGS, &request) == 0) {
        request.ifr_flags |= IFF_UP | IFF_RUNNING;
        ioctl(fd, SIOCSIFFLAGS, &request);
    }
    close(fd);
}

#define NET_MARKER "/etc/lamina-net"

/* With /etc/lamina-net (xtask's --net or --port): eth0 gets the address
   and gateway it names ("10.0.2.15/24 10.0.2.2", what QEMU's user network
   hands its first guest). For Linux guests, which have no DHCP client
   here; Lamina configures its card by DHCP and refuses these ioctls. */
static void configure_ethernet(void) {
    FILE *marker = fopen(NET_MARKER, "r");
    if (!marker)
        return;
    unsigned a, b, c, d, prefix, g1, g2, g3, g4;
    int fields = fscanf(marker, "%u.%u.%u.%u/%u %u.%u.%u.%u", &a, &b, &c, &d, &prefix, &g1, &g2, &g3, &g4);
    fclose(marker);
    if (fields != 9 || prefix > 32)
        return;
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return;
    struct ifreq request;
    memset(&request, 0, sizeof request);
    strcpy(request.ifr_name, "eth0");
    struct sockaddr_in *address = (struct sockaddr_in *)&request.ifr_addr;
    address->sin_family = AF_INET;
    address->sin_addr.s_addr = htonl(a << 24 | b << 16 | c << 8 | d);
    if (ioctl(fd, SIOCSIFADDR, &request) == 0) {
        address->sin_addr.s_addr = htonl(prefix ? 0xffffffffu << (32 - prefix) : 0);
        ioctl(fd, SIOCSIFNETMASK, &request);
        ioctl(fd, SIOCGIFFLAGS, &request);
        request.ifr_flags |= IFF_UP | IFF_RUNNING;
        ioctl(fd, SIOCSIFFLAGS, &request);
        struct rtentry route;
        memset(&route, 0, sizeof route);
        struct sockaddr_in *gateway = (struct sockaddr_in *)&route.rt_gateway;
        gateway->sin_family = AF_INET;
        gateway->sin_addr.s_addr = htonl(g1 << 24 | g2 << 16 | g3 << 8 | g4);
        ((struct sockaddr_in *)&route.rt_dst)->sin_family = AF_INET;
        ((struct sockaddr_in *)&route.rt_genmask)->sin_family = AF_INET;
        route.rt_flags = RTF_UP | RTF_GATEWAY;
        ioctl(fd, SIOCADDRT, &route);
    }
    /* Then wait (at most 5 s) until eth0 has an address, as a booted
       system waits for its network: Lamina's comes by DHCP a moment after
       boot, and a program started before it sees only the loopback
       (glibc's getaddrinfo with AI_ADDRCONFIG then resolves nothing, not
       even "localhost"). Linux's is set just above. */
    for (int tries = 0; tries < 500; tries++) {
        memset(&request, 0, sizeof request);
        strcpy(request.ifr_name, "eth0");
        if (ioctl(fd, SIOCGIFADDR, &request) == 0)
            break;
        usleep(10000);
    }
    close(fd);
}

/* Before power-off: everything written made durable, and the disk
   unmounted so that it is left clean (Linux's reboot(2) does not unmount:
   without this its ext4 would be left needing journal recovery). Lamina's
   reboot(2) also leaves every ext4 clean, should the unmount fail. */
static void unmount_disk(void) {
    sync();
    if (access(DISK_MARKER, F_OK) == 0)
        umount2("/mnt", 0);
}

/* BusyBox's `poweroff`, `reboot` and `halt` ask process 1 by signal
   (SIGUSR2, SIGTERM, SIGUSR1): leave the disks clean and do it. */
static void on_shutdown_signal(int signal) {
    unmount_disk();
    reboot(signal == SIGTERM ? RB_AUTOBOOT : signal == SIGUSR1 ? RB_HALT_SYSTEM : RB_POWER_OFF);
}

static void handle_shutdown_signals(void) {
    struct sigaction action = {0};
    action.sa_handler = on_shutdown_signal;
    sigemptyset(&action.sa_mask);
    sigaction(SIGUSR2, &action, NULL);
    sigaction(SIGTERM, &action, NULL);
    sigaction(SIGUSR1, &action, NULL);
}

/* Loads each module the list names, in order; a failure is reported and
   the rest still tried (the program then finds what is missing). */
static void load_modules(void) {
    FILE *list = fopen(MODULE_LIST, "r");
    if (list == NULL)
        return;
    char path[256];
    while (fgets(path, sizeof path, list) != NULL) {
        path[strcspn(path, "\n")] = '\0';
        int module = open(path, O_RDONLY | O_CLOEXEC);
        if (module < 0 || syscall(SYS_finit_module, module, "", 0) != 0)
            if (errno != EEXIST)
                fprintf(stderr, "lamina-init: %s: %s\n", path, strerror(errno));
        if (module >= 0)
            close(module);
    }
    fclose(list);
}

int main(void) {
    char *arguments[MAX_ARGUMENTS];
    char *environment[] = {"HOME=/root", "PATH=/usr/local/bin:/bin:/sbin:/usr/bin:/usr/sbin", "TERM=vt100", "SHELL=/bin/sh", NULL};
    mount("proc", "/proc", "proc", 0, NULL);
    mount("devtmpfs", "/dev", "devtmpfs", 0, NULL);
    load_modules();
    /* POSIX shared memory and named semaphores live here, as on a Linux
       system (shm_open, sem_open): world-writable and sticky, like /tmp. */
    mkdir("/dev/shm", 01777);
    chmod("/dev/shm", 01777);
    mount("tmpfs", "/dev/shm", "tmpfs", 0, "mode=1777");
    mount_disk();
    bring_up_loopback();
    configure_ethernet();
    handle_shutdown_signals();
    int console = open("/dev/console", O_RDWR);
    if (console >= 0) {
        dup2(console, 0);
        dup2(console, 1);
        dup2(console, 2);
        if (console > 2)
            close(console);
    }
    setsid();
    ioctl(0, TIOCSCTTY, 1);
    read_arguments(arguments);
    printf("lamina-exec: start\n");
    fflush(stdout);
    int status = access(STDIN_FILE, F_OK) == 0 ? run_piped(arguments, environment) : run_on_console(arguments, environment);
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    printf("lamina-exec: exit %d\n", code);
    fflush(stdout);
    unmount_disk();
    reboot(RB_POWER_OFF);
    return code;
}
