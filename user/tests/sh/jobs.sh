# Processes from the shell: background jobs, wait, kill, exit statuses,
# subshells, traps, command substitution.
sleep 0.2 &
first=$!
sleep 0.1 &
wait $first; echo "waited: $?"
wait; echo "all waited"
# The shell may or may not announce "Terminated" before `wait` reaps the
# job (a race on Linux too): its notice goes to the discarded stderr.
( sleep 5 & victim=$!; kill $victim; wait $victim; echo "killed: $?" ) 2>/dev/null
( exit 3 ); echo "subshell exit: $?"
false || echo "false failed"
true && echo "true succeeded"
trap 'echo trapped' USR1
kill -USR1 $$
sh -c 'exit 7'; echo "child exit: $?"
echo "substitution: $(echo inner | tr a-z A-Z)"
count=0; while [ $count -lt 3 ]; do count=$((count + 1)); done; echo "count $count"
for word in alpha beta; do echo "word $word"; done
case hello in h*) echo "case matched";; esac
echo done | cat | cat | cat
