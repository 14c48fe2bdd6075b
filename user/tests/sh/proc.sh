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
# The sleeper outlives every check below (it is killed, not waited out), so
# no line depends on how fast the guest runs.
# Its stderr is dropped: ash may or may not announce "Terminated" (as on
# Linux, a race with the reaping `wait`).
(
    sleep 600 & sleeper=$!
    # The child shows its program's name once it has exec'd it; wait for that
    # as long as it takes (bounded at 60 s), not for a fixed window.
    tries=0
    until grep -q '^sleep' /proc/$sleeper/comm || [ $tries -ge 1200 ]; do tries=$((tries + 1)); sleep 0.05; done
    grep -q '^sleep' /proc/$sleeper/comm && echo "comm of a child"
    ps -o pid,comm | head -1
    ps | grep -c 'sleep 600$'
    kill $sleeper
    wait $sleeper; echo "sleeper ended: $?"
    [ -d /proc/$sleeper ] || echo "gone after wait"
) 2>/dev/null
