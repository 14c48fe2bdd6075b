// SemperOS's "LevelDB inserting and querying 8 entries", as a program:
//
//   leveldb_entries [DIRECTORY]        (default: /tmp/leveldb-entries)
//
// Creates a database in DIRECTORY (it must not exist yet), puts 8 keys,
// gets each back, walks them once with an iterator and closes the
// database. Prints what it read; exits 1 on any difference or error.
// Linked with Debian's LevelDB 1.23 by the `leveldb` recipe of
// xtask/src/outside/programs.rs; traced by `cargo xtask traces leveldb`.
#include <cstdio>
#include <memory>
#include <string>

#include "leveldb/db.h"

namespace {

constexpr int kEntries = 8;

std::string key_of(int index) { return "key" + std::to_string(index); }

std::string value_of(int index) { return "value of entry " + std::to_string(index); }

bool fail(const char *what, const leveldb::Status &status) {
    std::fprintf(stderr, "leveldb_entries: %s: %s\n", what, status.ToString().c_str());
    return false;
}

bool run(const std::string &directory) {
    leveldb::Options options;
    options.create_if_missing = true;
    options.error_if_exists = true;
    leveldb::DB *opened = nullptr;
    leveldb::Status status = leveldb::DB::Open(options, directory, &opened);
    if (!status.ok()) return fail("open", status);
    std::unique_ptr<leveldb::DB> db(opened);

    for (int index = 0; index < kEntries; index++) {
        status = db->Put(leveldb::WriteOptions(), key_of(index), value_of(index));
        if (!status.ok()) return fail("put", status);
    }
    for (int index = 0; index < kEntries; index++) {
        std::string value;
        status = db->Get(leveldb::ReadOptions(), key_of(index), &value);
        if (!status.ok()) return fail("get", status);
        if (value != value_of(index)) {
            std::fprintf(stderr, "leveldb_entries: %s holds \"%s\"\n", key_of(index).c_str(), value.c_str());
            return false;
        }
        std::printf("get %s = %s\n", key_of(index).c_str(), value.c_str());
    }
    int seen = 0;
    std::unique_ptr<leveldb::Iterator> entries(db->NewIterator(leveldb::ReadOptions()));
    for (entries->SeekToFirst(); entries->Valid(); entries->Next()) {
        std::printf("next %s = %s\n", entries->key().ToString().c_str(), entries->value().ToString().c_str());
        seen++;
    }
    if (!entries->status().ok()) return fail("iterate", entries->status());
    entries.reset();  // before the database it reads
    if (seen != kEntries) {
        std::fprintf(stderr, "leveldb_entries: the iterator saw %d entries, not %d\n", seen, kEntries);
        return false;
    }
    std::printf("%d entries\n", seen);
    return true;
}

}  // namespace

int main(int argc, char **argv) {
    return run(argc > 1 ? argv[1] : "/tmp/leveldb-entries") ? 0 : 1;
}
