#!/bin/sh
# The `apps` benchmark group: whole-program workloads, the same on every
# kernel. Each line prints `bench NAME <time per run>` (guest instructions
# under icount, else nanoseconds).
set -e
cd /tmp
mkdir -p tree
i=0
while [ $i -lt 64 ]; do
    dd if=/dev/urandom of=tree/f$i bs=4096 count=64 2>/dev/null
    i=$((i + 1))
done
/bench/syscalls timed shell_loop 1 /bin/sh -c 'i=0; while [ $i -lt 200 ]; do echo $i | cut -c1 > /dev/null; i=$((i + 1)); done'
/bench/syscalls timed tar_gzip_16m 1 /bin/sh -c 'tar -cf - tree | gzip -1 > /dev/null'
/bench/syscalls timed sha256_64m 1 /bin/sh -c 'dd if=/dev/zero bs=65536 count=1024 2>/dev/null | sha256sum > /dev/null'
/bench/syscalls timed fanout 1 /bin/sh -c 'for j in 1 2 3 4 5 6 7 8; do (k=0; while [ $k -lt 100 ]; do k=$((k + 1)); done) & done; wait'
