#!/bin/sh
# sqlite3 smoke test: recursive CTE, aggregates, index, txn, db file reopened
DB=/tmp/smoke.db; rm -f "$DB" "$DB-journal"
sqlite3() { command sqlite3 -init /dev/null "$@"; }   # no ~/.sqliterc lookup
sqlite3 "$DB" <<'SQL'
CREATE TABLE t(id INTEGER PRIMARY KEY, n INT, sq INT, name TEXT);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<2000)
INSERT INTO t(n, sq, name) SELECT x, x*x, printf('item%05d', x) FROM c;
CREATE INDEX t_k ON t(n % 7, name);
BEGIN; UPDATE t SET name = upper(name) WHERE n % 500 = 0; DELETE FROM t WHERE n > 1990; COMMIT;
BEGIN; DELETE FROM t; ROLLBACK;
SELECT count(*), sum(n), sum(sq), min(name), max(name), total(n)/count(*) FROM t;
.mode column
.headers on
SELECT n % 7 AS k, count(*) AS c, avg(n) AS a, group_concat(n) FILTER (WHERE n < 30) AS small FROM t GROUP BY k ORDER BY k;
SQL
echo "file pages: $(sqlite3 "$DB" 'PRAGMA page_count;') size: $(wc -c < "$DB")"
sqlite3 -csv "$DB" "SELECT name, sq FROM t WHERE name GLOB 'ITEM*' ORDER BY n;"
echo "SELECT json_group_array(n) FROM (SELECT n FROM t WHERE n % 333 = 0);" | sqlite3 "$DB"
sqlite3 "$DB" '.shell echo from-shell' 'PRAGMA integrity_check; CREATE TABLE s AS SELECT n, name FROM t WHERE n < 4;' '.dump s'
sqlite3 "$DB" 'VACUUM; SELECT count(*) FROM t;' && rm -f "$DB"
