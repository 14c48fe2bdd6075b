#!/bin/sh
# NGINX over the loopback: static files of 4 KiB and 1 MiB to BusyBox wget,
# a HEAD, a 404, then a clean stop.
mkdir -p /tmp/nginx /tmp/www
grep -q '^root:' /etc/passwd 2>/dev/null || echo 'root:x:0:0:root:/root:/bin/sh' >> /etc/passwd
grep -q '^root:' /etc/group 2>/dev/null || echo 'root:x:0:' >> /etc/group
head -c 4096 /dev/zero | tr '\0' 'a' > /tmp/www/4k.txt
dd if=/dev/zero bs=1024 count=1024 2>/dev/null | tr '\0' 'z' > /tmp/www/1m.txt
cat > /tmp/nginx/nginx.conf <<'CONF'
daemon off;
master_process off;
user root root;
worker_processes 1;
error_log /tmp/nginx/error.log warn;
pid /tmp/nginx/nginx.pid;
events { worker_connections 64; }
http {
    access_log off;
    server {
        listen 127.0.0.1:8081;
        root /tmp/www;
        location / { }
    }
}
CONF
nginx -p /tmp/nginx/ -c /tmp/nginx/nginx.conf &
server=$!
for try in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
    wget -q -O /dev/null http://127.0.0.1:8081/4k.txt 2>/dev/null && break
    sleep 0.5
done
wget -q -O - http://127.0.0.1:8081/4k.txt | md5sum
wget -q -O - http://127.0.0.1:8081/1m.txt | md5sum
wget -S --spider http://127.0.0.1:8081/4k.txt 2>&1 | grep -E 'HTTP/|Content-Length'
wget -q -O - http://127.0.0.1:8081/missing 2>&1 | sed 's/^wget: //'
kill $server
wait $server
echo "nginx stopped"
