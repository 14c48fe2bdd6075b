/*
 * Helpers for the user-space tests: each check prints one line with the
 * call's result and errno name, so that the output on Lamina and on Linux
 * can be compared line by line. Nothing printed may depend on the kernel
 * (no pids, times or inode numbers).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static const char *errno_name(int error) {
    switch (error) {
    case 0: return "OK";
    case EPERM: return "EPERM";
    case ENOENT: return "ENOENT";
    case ESRCH: return "ESRCH";
    case EINTR: return "EINTR";
    case EBADF: return "EBADF";
    case ECHILD: return "ECHILD";
    case EAGAIN: return "EAGAIN";
    case ENOMEM: return "ENOMEM";
    case EACCES: return "EACCES";
    case EFAULT: return "EFAULT";
    case EIO: return "EIO";
    case EBUSY: return "EBUSY";
    case EEXIST: return "EEXIST";
    case EXDEV: return "EXDEV";
    case ENOTDIR: return "ENOTDIR";
    case EISDIR: return "EISDIR";
    case EINVAL: return "EINVAL";
    case EMFILE: return "EMFILE";
    case ENOTTY: return "ENOTTY";
    case EFBIG: return "EFBIG";
    case ESPIPE: return "ESPIPE";
    case EPIPE: return "EPIPE";
    case ERANGE: return "ERANGE";
    case ENAMETOOLONG: return "ENAMETOOLONG";
    case ENOSYS: return "ENOSYS";
    case ENOTEMPTY: return "ENOTEMPTY";
    case ELOOP: return "ELOOP";
    case ETIMEDOUT: return "ETIMEDOUT";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    case EMSGSIZE: return "EMSGSIZE";
    case ENOPROTOOPT: return "ENOPROTOOPT";
    case ENOTSOCK: return "ENOTSOCK";
    case EAFNOSUPPORT: return "EAFNOSUPPORT";
    case EPROTONOSUPPORT: return "EPROTONOSUPPORT";
    case ENOEXEC: return "ENOEXEC";
    case E2BIG: return "E2BIG";
    case ENXIO: return "ENXIO";
    case EDEADLK: return "EDEADLK";
    case ENOMSG: return "ENOMSG";
    case EIDRM: return "EIDRM";
    case ENOSPC: return "ENOSPC";
    case EOWNERDEAD: return "EOWNERDEAD";
    case ENOTRECOVERABLE: return "ENOTRECOVERABLE";
    case ECONNREFUSED: return "ECONNREFUSED";
    case ETOOMANYREFS: return "ETOOMANYREFS";
    case ENOBUFS: return "ENOBUFS";
    case EADDRINUSE: return "EADDRINUSE";
    case ENOTCONN: return "ENOTCONN";
    case EISCONN: return "EISCONN";
    case EPROTOTYPE: return "EPROTOTYPE";
    case EALREADY: return "EALREADY";
    case EINPROGRESS: return "EINPROGRESS";
    case ECONNRESET: return "ECONNRESET";
    case EADDRNOTAVAIL: return "EADDRNOTAVAIL";
    case EDESTADDRREQ: return "EDESTADDRREQ";
    case ENETUNREACH: return "ENETUNREACH";
    case EDOM: return "EDOM";
    case ESOCKTNOSUPPORT: return "ESOCKTNOSUPPORT";
    case ENODEV: return "ENODEV";
    default: return "E?";
    }
}

/* Runs `call` (an expression returning a number), prints "label: value errno". */
#define CHECK(label, call)                                                              \
    do {                                                                                \
        errno = 0;                                                                      \
        long result_ = (long)(call);                                                    \
        printf("%s: %ld %s\n", label, result_, result_ < 0 ? errno_name(errno) : "OK"); \
    } while (0)

/* The time `ms` milliseconds from now on `clock` (an absolute deadline). */
static inline struct timespec time_after_ms(clockid_t clock, long ms) {
    struct timespec at;
    clock_gettime(clock, &at);
    at.tv_nsec += ms * 1000000;
    at.tv_sec += at.tv_nsec / 1000000000;
    at.tv_nsec %= 1000000000;
    return at;
}

/* Prints whether a condition holds. */
#define EXPECT(label, condition) printf("%s: %s\n", label, (condition) ? "yes" : "no")
