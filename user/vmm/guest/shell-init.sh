#!/bin/busybox sh
# /init of the VMM's shell guest (xtask's hypervisor step): a BusyBox shell
# whose output reaches the VMM through the guest's 8250 serial driver
# (ttyS0, interrupt-driven: the VMM emulates the PIC, the PIT and COM1),
# and a sleep that only ends if the guest's timer interrupts arrive.
/bin/busybox --install -s /bin
mount -t proc proc /proc
echo "guest shell: $(uname -sr), $(grep -c ^processor /proc/cpuinfo) CPU"
ls /
echo "uptime before: $(cut -d' ' -f1 /proc/uptime)"
sleep 1
echo "uptime after: $(cut -d' ' -f1 /proc/uptime)"
poweroff -f
