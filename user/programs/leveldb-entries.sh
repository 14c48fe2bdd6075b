#!/bin/sh
# leveldb-entries smoke test: 8 entries put, got and iterated in a new
# database; the files LevelDB left; a second run refused (it exists)
DB=/tmp/leveldb-smoke; rm -rf "$DB"
leveldb-entries "$DB" || exit 1
ls "$DB" | sort
leveldb-entries "$DB" && exit 1
rm -rf "$DB"
