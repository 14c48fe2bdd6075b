/*
 * An interrupt the VMM hands over with KVM_INTERRUPT reaches the guest
 * once, and a guest spinning with its interrupts off does not keep the
 * host's CPU (issue 24). A real-mode guest's handler counts its entries,
 * spins with IF off for a while, and reports the count with an `out`;
 * every other vector's stub reports itself, so a wrong vector shows too.
 *
 * Run by the hypervisor step on Lamina under QEMU with one translator
 * thread and two CPUs, where QEMU switches CPUs every 100 ms by asking the
 * running one to stop. Before this test, Lamina had two faults here and
 * QEMU 7.2 one (docs/hypervisor.md, "Several guests at once"):
 * - a 64-bit store to the VMCB's 32-bit TLB_CONTROL zeroed the interrupt
 *   control word at every entry, V_INTR_MASKING with it, so host
 *   interrupts could not end a guest running with IF off;
 * - QEMU's TCG, given an external interrupt through EVENTINJ, keeps the
 *   vector as its pending exception and delivers it again at the next
 *   such stop request, whatever the guest's IF: this handler then counted
 *   2, and a Linux guest re-entered its interrupt handler holding the
 *   first entry's lock and spun for good. Lamina now hands interrupts over
 *   as the guest's virtual interrupt (V_IRQ), which QEMU delivers cleanly;
 * - `sti` just before VMRUN: QEMU carries that shadow into the guest, so
 *   the guest's first instruction (here a `hlt`) ran before the virtual
 *   interrupt it could take.
 * Each line says what was checked; "FAIL" marks a failure.
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

#include "one_vcpu.h"

enum { MAIN_CODE = 0x1000, HANDLER = 0x1100, COUNT = 0x2000, VECTOR = 0x30, ROUNDS = 3, STUBS = 0x3000 };

static int failures;

static void check(int ok, const char *what, unsigned value) {
    printf("%s %s (%u)\n", ok ? "ok  " : "FAIL", what, value);
    if (!ok)
        failures++;
}

static double seconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec + now.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    /* Spin length in loop iterations: long enough to span several of
       QEMU's 100 ms CPU switches. */
    uint32_t spins = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 0) : 0x8000000;
    uint8_t *memory;
    int vcpu;
    struct kvm_run *run;
    one_vcpu_vm(0x10000, &memory, &vcpu, &run);
    check(run != MAP_FAILED, "a VM, its memory, a vCPU and its kvm_run", 0);
    if (run == MAP_FAILED)
        return 1;

    /* The real-mode interrupt table: VECTOR's entry is 0000:HANDLER, every
       other one a stub that tells the VMM which vector came instead. */
    for (int vector = 0; vector < 256; vector++) {
        uint16_t entry[2] = {vector == VECTOR ? HANDLER : STUBS + vector * 4, 0};
        memcpy(memory + vector * 4, entry, sizeof entry);
        const uint8_t stub[4] = {0xB0, (uint8_t)vector, 0xE6, 0x90}; /* mov al, vector; out 0x90, al */
        memcpy(memory + STUBS + vector * 4, stub, sizeof stub);
    }
    const uint8_t main_code[] = {
        0xFB,       /* sti */
        0xF4,       /* hlt            <- HLT exit; the interrupt comes after it */
        0xEB, 0xFD, /* jmp to the hlt (another round) */
    };
    memcpy(memory + MAIN_CODE, main_code, sizeof main_code);
    uint8_t handler[] = {
        0xFE, 0x06, COUNT & 0xFF, COUNT >> 8,  /* inc byte [COUNT] */
        0x66, 0xB9, 0, 0, 0, 0,                /* mov ecx, spins */
        0x66, 0x49,                            /* dec ecx        (IF is off) */
        0x75, 0xFC,                            /* jnz dec */
        0xA0, COUNT & 0xFF, COUNT >> 8,        /* mov al, [COUNT] */
        0xE6, 0x80,                            /* out 0x80, al   <- IO exit */
        0xCF,                                  /* iret */
    };
    memcpy(handler + 6, &spins, 4);
    memcpy(memory + HANDLER, handler, sizeof handler);

    real_mode_at(vcpu, MAIN_CODE, 0x8000);

    int r = ioctl(vcpu, KVM_RUN, 0);
    check(r == 0 && run->exit_reason == KVM_EXIT_HLT && run->ready_for_interrupt_injection, "the guest halts with interrupts on", run->exit_reason);
    for (int round = 1; round <= ROUNDS && failures == 0; round++) {
        memory[COUNT] = 0;
        struct kvm_interrupt irq = {.irq = VECTOR};
        check(ioctl(vcpu, KVM_INTERRUPT, &irq) == 0, "KVM_INTERRUPT", VECTOR);
        double start = seconds();
        r = ioctl(vcpu, KVM_RUN, 0);
        while (r == -1 && errno == EINTR)
            r = ioctl(vcpu, KVM_RUN, 0);
        double spun = seconds() - start;
        uint8_t seen = run->exit_reason == KVM_EXIT_IO ? ((uint8_t *)run)[run->io.data_offset] : 0xFF;
        if (r == 0 && run->exit_reason == KVM_EXIT_IO && run->io.port == 0x90)
            check(0, "the guest took another vector", seen);
        check(r == 0 && run->exit_reason == KVM_EXIT_IO && run->io.port == 0x80, "the handler reports at its end", run->exit_reason);
        char what[96];
        snprintf(what, sizeof what, "round %d: the handler ran once through a %.1f s spin with IF off", round, spun);
        check(seen == 1 && memory[COUNT] == 1, what, seen);
        r = ioctl(vcpu, KVM_RUN, 0);
        check(r == 0 && run->exit_reason == KVM_EXIT_HLT, "iret back to the hlt", run->exit_reason);
    }
    printf("%d failures\n", failures);
    return failures != 0;
}
