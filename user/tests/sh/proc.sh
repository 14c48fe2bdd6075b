# /proc as programs read it: the caller's own entries, system files, ps.
grep Name /proc/self/status
tr '\0' ' ' < /proc/self/cmdline; echo
readlink /proc/self/exe
grep -c processor /proc/cpuinfo
head -1 /proc/meminfo | cut -d: -f1
cut -d' ' -f1 /proc/uptime | grep -c '\.'
grep -q ' /proc proc' /proc/mounts && echo "proc mounted"
[ -d /proc/$$ ] && echo "own directory exists"
[ "$(cut -d' ' -f1 /proc/$$/stat)" = "$$" ] && echo "stat names the pid"
sleep 1 & sleeper=$!
# The child shows its program's name once it has exec'd it.
for try in 1 2 3 4 5 6 7 8 9 10; do grep -q '^sleep' /proc/$sleeper/comm && break; sleep 0.05; done
grep -q '^sleep' /proc/$sleeper/comm && echo "comm of a child"
ps -o pid,comm | head -1
ps | grep -c 'sleep 1$'
wait
[ -d /proc/$sleeper ] || echo "gone after wait"
