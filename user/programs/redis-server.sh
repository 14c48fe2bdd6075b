#!/bin/sh
# Redis over the loopback: a server in the background, the cli and the
# benchmark's own checks against it, then a clean shutdown.
redis-server --port 6390 --save '' --appendonly no --daemonize no --logfile /tmp/redis.log &
for try in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
    redis-cli -p 6390 ping 2>/dev/null | grep -q PONG && break
    sleep 0.5
done
redis-cli -p 6390 ping
redis-cli -p 6390 set greeting "hello from the guest"
redis-cli -p 6390 get greeting
redis-cli -p 6390 rpush list a b c d
redis-cli -p 6390 lrange list 0 -1
redis-cli -p 6390 incrby counter 41
redis-cli -p 6390 incr counter
redis-cli -p 6390 eval "return redis.call('get', KEYS[1]) .. '!'" 1 greeting
redis-benchmark -p 6390 -c 10 -n 2000 -t set,get -q --csv | cut -d, -f1
redis-cli -p 6390 dbsize
redis-cli -p 6390 shutdown nosave
wait
echo "server exit $?"
