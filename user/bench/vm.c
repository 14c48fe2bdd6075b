/*
 * The `vm` benchmark group (issue 24): what a guest's exits cost, run the
 * same on Lamina's /dev/kvm and on Linux's KVM (nested SVM under QEMU's
 * TCG), printing `bench NAME <nanoseconds per operation>`:
 *
 *   vm_cpuid      a guest `cpuid` the hypervisor answers itself
 *                 (an exit handled in the kernel, back to the guest)
 *   vm_io_exit    a guest `out` the VMM sees (exit to user space and a
 *                 new KVM_RUN)
 *   vm_page_fault a guest's first touch of a page of its memory (a
 *                 nested page fault: the VMM's page made and lent)
 *
 * The guest is 32-bit protected-mode code with flat segments and paging
 * off; each phase ends with an `out` to port 0x81, and the VMM times the
 * run from its start to that exit. The VMM sets the hypervisor's
 * supported CPUID table first, as VMMs must.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define MEMORY (24u << 20)
#define CODE 0x1000
#define ROUNDS 2000
#define PAGES 2000
#define PAGES_START 0x100000

static uint64_t now(void) {
    struct timespec at;
    clock_gettime(CLOCK_MONOTONIC, &at);
    return (uint64_t)at.tv_sec * 1000000000u + (uint64_t)at.tv_nsec;
}

static void fail(const char *what) {
    fprintf(stderr, "vm bench: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void put32(uint8_t *at, uint32_t value) {
    memcpy(at, &value, 4);
}

int main(void) {
    int kvm = open("/dev/kvm", O_RDWR);
    if (kvm < 0)
        fail("/dev/kvm");
    int vm = ioctl(kvm, KVM_CREATE_VM, 0);
    uint8_t *memory = mmap(NULL, MEMORY, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (vm < 0 || memory == MAP_FAILED)
        fail("KVM_CREATE_VM");
    struct kvm_userspace_memory_region region = {.slot = 0, .guest_phys_addr = 0, .memory_size = MEMORY, .userspace_addr = (uint64_t)memory};
    if (ioctl(vm, KVM_SET_USER_MEMORY_REGION, &region) != 0)
        fail("KVM_SET_USER_MEMORY_REGION");

    /* The guest: three phases, each ended by `out 0x81, al`. */
    uint8_t *code = memory + CODE;
    size_t at = 0;
    /* cpuid: mov esi, ROUNDS; 1: xor eax, eax; cpuid; dec esi; jnz 1b */
    code[at++] = 0xBE; put32(code + at, ROUNDS); at += 4;
    size_t loop = at;
    code[at++] = 0x31; code[at++] = 0xC0;
    code[at++] = 0x0F; code[at++] = 0xA2;
    code[at++] = 0x4E;
    code[at++] = 0x75; code[at] = (uint8_t)(loop - (at + 1)); at++;
    code[at++] = 0xE6; code[at++] = 0x81;
    /* io: mov esi, ROUNDS; 1: out 0x80, al; dec esi; jnz 1b */
    code[at++] = 0xBE; put32(code + at, ROUNDS); at += 4;
    loop = at;
    code[at++] = 0xE6; code[at++] = 0x80;
    code[at++] = 0x4E;
    code[at++] = 0x75; code[at] = (uint8_t)(loop - (at + 1)); at++;
    code[at++] = 0xE6; code[at++] = 0x81;
    /* pages: mov edi, PAGES_START; mov esi, PAGES; 1: mov [edi], al;
       add edi, 4096; dec esi; jnz 1b */
    code[at++] = 0xBF; put32(code + at, PAGES_START); at += 4;
    code[at++] = 0xBE; put32(code + at, PAGES); at += 4;
    loop = at;
    code[at++] = 0x88; code[at++] = 0x07;
    code[at++] = 0x81; code[at++] = 0xC7; put32(code + at, 4096); at += 4;
    code[at++] = 0x4E;
    code[at++] = 0x75; code[at] = (uint8_t)(loop - (at + 1)); at++;
    code[at++] = 0xE6; code[at++] = 0x81;
    code[at++] = 0xF4;

    int vcpu = ioctl(vm, KVM_CREATE_VCPU, 0);
    long size = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
    struct kvm_run *run = vcpu < 0 ? MAP_FAILED : mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, vcpu, 0);
    if (run == MAP_FAILED)
        fail("KVM_CREATE_VCPU");
    struct {
        struct kvm_cpuid2 header;
        struct kvm_cpuid_entry2 entries[256];
    } cpuid = {.header.nent = 256};
    if (ioctl(kvm, KVM_GET_SUPPORTED_CPUID, &cpuid) != 0 || ioctl(vcpu, KVM_SET_CPUID2, &cpuid) != 0)
        fail("CPUID table");
    struct kvm_sregs sregs;
    ioctl(vcpu, KVM_GET_SREGS, &sregs);
    struct kvm_segment flat = {.base = 0, .limit = 0xFFFFFFFF, .selector = 0x10, .type = 0xB, .present = 1, .db = 1, .s = 1, .g = 1};
    sregs.cs = flat;
    flat.selector = 0x18;
    flat.type = 0x3;
    sregs.ds = sregs.es = sregs.fs = sregs.gs = sregs.ss = flat;
    sregs.cr0 = 0x11;
    if (ioctl(vcpu, KVM_SET_SREGS, &sregs) != 0)
        fail("KVM_SET_SREGS");
    struct kvm_regs regs = {.rip = CODE, .rflags = 2};
    if (ioctl(vcpu, KVM_SET_REGS, &regs) != 0)
        fail("KVM_SET_REGS");

    static const struct {
        const char *name;
        long operations;
    } phases[] = {{"vm_cpuid", ROUNDS}, {"vm_io_exit", ROUNDS}, {"vm_page_fault", PAGES}};
    for (size_t phase = 0; phase < 3; phase++) {
        uint64_t start = now();
        for (;;) {
            if (ioctl(vcpu, KVM_RUN, 0) != 0) {
                if (errno == EINTR)
                    continue;
                fail("KVM_RUN");
            }
            if (run->exit_reason != KVM_EXIT_IO) {
                fprintf(stderr, "vm bench: unexpected exit %u in %s\n", run->exit_reason, phases[phase].name);
                return 1;
            }
            if (run->io.port == 0x81)
                break;
        }
        printf("bench %s %.1f\n", phases[phase].name, (double)(now() - start) / (double)phases[phase].operations);
    }
    return 0;
}
