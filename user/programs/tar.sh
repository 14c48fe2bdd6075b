#!/bin/sh
# tar smoke test: reproducible archive to stdout, list, extract, compare
umask 022; export TZ=UTC
TAR=${TAR:-/usr/local/bin/tar}; tar() { "$TAR" "$@"; }   # a path with "/": BusyBox sh would run its own tar applet
D=/tmp/tarsmoke; rm -rf "$D"; mkdir -p "$D/src/sub/deeper" "$D/out" && cd "$D" || exit 1
echo hello > src/a.txt; echo world > src/sub/b.txt; : > src/sub/deeper/empty
seq 1 3000 > src/sub/nums.txt; ln -s ../a.txt src/sub/link
T="--format=gnu --sort=name --mtime=@1000000000 --owner=0 --group=0 --numeric-owner"
tar $T -cf - src | tee a.tar | tar -tvf -
echo "size $(wc -c < a.tar) md5 $(md5sum < a.tar)"
tar -xf a.tar -C out && cmp src/sub/nums.txt out/src/sub/nums.txt && echo extracted-ok
cat out/src/sub/link; tar -xOf a.tar src/sub/b.txt
tar $T -C src -cf - sub | tar -tf - | sort
tar -rf a.tar --mtime=@0 --owner=0 --group=0 --numeric-owner -C out src/a.txt; tar -tf a.tar | tail -n 2
cd / && rm -rf "$D"
