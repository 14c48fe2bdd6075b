/*
 * The first program of the Linux guest the VMM's test boots (xtask's
 * hypervisor step): one line into the kernel's log, which the boot console
 * prints by polling the serial port (the VMM emulates no interrupts yet),
 * then power off, which halts the guest with interrupts off and so ends
 * the VMM. The initramfs holds only this and /dev/kmsg.
 */
#include <fcntl.h>
#include <sys/reboot.h>
#include <unistd.h>

int main(void) {
    static const char line[] = "<2>guest init: hello from Linux's init inside the VMM\n";
    int log = open("/dev/kmsg", O_WRONLY);
    if (log >= 0)
        write(log, line, sizeof line - 1);
    reboot(RB_POWER_OFF);
    return 0;
}
