/*
 * A reproducer for QEMU 7.2's VMCB fault (docs/hypervisor.md, "Why one
 * translator thread"): a tiny VMM whose real-mode guest spins for 25 s,
 * either with no exits (`kvm_exit_storm 0`), looping on `out 0x80` (`1`: an
 * exit to the VMM and a new KVM_RUN each time) or on `cpuid` (`2`: exits
 * the kernel handles without returning to the VMM). Pinned to CPU 1 beside
 * a VMM booting Linux on CPU 0 under QEMU with a translator thread per CPU,
 * modes 1 and 2 made the Linux guest triple-fault in about half the runs;
 * mode 0 never did, and with one translator thread none did. Not a test:
 * a tool. Build: musl-gcc -static -O2 -I user/include -I target/guest/uapi.
 */
#include <fcntl.h>
#include <linux/kvm.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
static volatile int done;
static void on_alarm(int s) { (void)s; done = 1; }
int main(int argc, char **argv) {
    int kvm = open("/dev/kvm", O_RDWR), vm = ioctl(kvm, KVM_CREATE_VM, 0);
    uint8_t *mem = mmap(NULL, 0x10000, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    /* mode 0: jmp $; mode 1: out 0x80, loop; mode 2: cpuid, loop */
    static const uint8_t spin[] = {0xEB, 0xFE};
    static const uint8_t io[] = {0xE6, 0x80, 0xEB, 0xFC};
    static const uint8_t cpuid[] = {0x0F, 0xA2, 0xEB, 0xFC};
    int mode = argc > 1 ? argv[1][0] - '0' : 0;
    if (mode == 0) memcpy(mem + 0x1000, spin, 2);
    else if (mode == 1) memcpy(mem + 0x1000, io, 4);
    else memcpy(mem + 0x1000, cpuid, 4);
    struct kvm_userspace_memory_region r = {.slot = 0, .memory_size = 0x10000, .userspace_addr = (uint64_t)mem};
    ioctl(vm, KVM_SET_USER_MEMORY_REGION, &r);
    int vcpu = ioctl(vm, KVM_CREATE_VCPU, 0);
    struct kvm_sregs s; ioctl(vcpu, KVM_GET_SREGS, &s); s.cs.base = 0; s.cs.selector = 0; ioctl(vcpu, KVM_SET_SREGS, &s);
    struct kvm_regs g = {.rip = 0x1000, .rflags = 0x202}; ioctl(vcpu, KVM_SET_REGS, &g);
    struct sigaction a = {.sa_handler = on_alarm}; sigaction(SIGALRM, &a, NULL); alarm(25);
    long exits = 0;
    while (!done) { if (ioctl(vcpu, KVM_RUN, 0) == 0) exits++; }
    printf("spinvm mode %d: %ld exits\n", mode, exits);
    return 0;
}
