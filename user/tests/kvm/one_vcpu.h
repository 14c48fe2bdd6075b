/*
 * A VM with guest memory at guest-physical 0 and one vCPU, for the small
 * KVM tests on Lamina (kvm_fpu, kvm_interrupt_once): what every one of
 * them set up the same way. Header-only; no checks of its own.
 */
#ifndef LAMINA_TESTS_ONE_VCPU_H
#define LAMINA_TESTS_ONE_VCPU_H

#include <fcntl.h>
#include <linux/kvm.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

/* Opens /dev/kvm, makes a VM with `bytes` of anonymous memory at
   guest-physical 0 and vCPU 0, and maps its kvm_run; 0 on success. */
static inline int one_vcpu_vm(uint64_t bytes, uint8_t **memory, int *vcpu, struct kvm_run **run) {
    int kvm = open("/dev/kvm", O_RDWR);
    int vm = kvm < 0 ? -1 : ioctl(kvm, KVM_CREATE_VM, 0);
    *memory = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    struct kvm_userspace_memory_region region = {.slot = 0, .guest_phys_addr = 0, .memory_size = bytes, .userspace_addr = (uint64_t)*memory};
    *vcpu = vm < 0 || *memory == MAP_FAILED || ioctl(vm, KVM_SET_USER_MEMORY_REGION, &region) != 0 ? -1 : ioctl(vm, KVM_CREATE_VCPU, 0);
    *run = *vcpu < 0 ? MAP_FAILED : mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, *vcpu, 0);
    return *run == MAP_FAILED ? -1 : 0;
}

/* Puts the vCPU in real mode with CS base 0, at `rip`, interrupts off. */
static inline void real_mode_at(int vcpu, uint64_t rip, uint64_t rsp) {
    struct kvm_sregs sregs;
    ioctl(vcpu, KVM_GET_SREGS, &sregs);
    sregs.cs.base = 0;
    sregs.cs.selector = 0;
    ioctl(vcpu, KVM_SET_SREGS, &sregs);
    struct kvm_regs regs = {.rip = rip, .rflags = 2, .rsp = rsp};
    ioctl(vcpu, KVM_SET_REGS, &regs);
}

#endif
