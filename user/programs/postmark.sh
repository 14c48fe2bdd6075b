#!/bin/sh
# PostMark 1.53 (Debian's, static): a pool of 20 files of 512 B to 4 KiB in
# /tmp/pm, 40 transactions, seed 42 — its counts, without its times and rates
mkdir -p /tmp/pm
printf 'set location /tmp/pm\nset number 20\nset transactions 40\nset size 512 4096\nset seed 42\nrun\nquit\n' | postmark | sed -e 's/ *([^)]*)//g' -e '/seconds/d'
echo "left in /tmp/pm: $(ls /tmp/pm | wc -l)"
