//! Real programs from Debian's sources, built statically with musl so that
//! the same binary runs on Lamina and on Linux: Lua 5.4, the SQLite 3.40
//! shell, GNU make 4.3, GNU tar 1.34, Redis 7.0 (server, cli and
//! benchmark), NGINX 1.22 and PostMark 1.53, each pinned to a Debian 12
//! version, fetched with `apt-get source` (`debian_sources.rs`) and built
//! under `target/outside/` by the recipe below (a shell script run in the
//! unpacked tree, its log kept beside it). Never committed; built once.
//!
//! One is C++, which Debian's musl cannot link: LevelDB 1.23, its library
//! built by its own CMake build and linked with glibc's static libraries
//! (`g++ -static`) into `leveldb-entries`, a driver of ours
//! (`user/tools/leveldb_entries.cc`: SemperOS's "LevelDB inserting and
//! querying 8 entries"). A recipe finds the repository's files under
//! `$LAMINA_ROOT`; one that uses them names them in [`Program::ours`].
//!
//! Must not install anything (the host packages a recipe needs are
//! `dependencies.rs`'s) nor change files outside its own trees.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::debian_sources::{unpacked_source, SourcePackage};
use crate::failure::{Context, Failure, Outcome};

/// One program: where it comes from, how it is built, where the binary is.
pub struct Program {
    /// Its name in the guest (`/usr/local/bin/<name>`) and its script's
    /// (`user/programs/<name>.sh`).
    pub name: &'static str,
    source: SourcePackage,
    /// Run with `sh -e` in the unpacked tree.
    recipe: &'static str,
    /// The binary, relative to the tree.
    binary: &'static str,
    /// Other binaries of the same build that go beside it (relative to
    /// the tree; in the guest under their own names).
    pub companions: &'static [&'static str],
    /// Files of this repository the recipe compiles (relative to its
    /// root): one newer than the binary builds it again.
    pub ours: &'static [&'static str],
}

pub const PROGRAMS: &[Program] = &[
    Program {
        name: "lua",
        source: SourcePackage { name: "lua5.4", version: "5.4.4-3+deb12u1" },
        // Debian's first two patches turn the build into libtool's and add
        // a generated header; upstream's Makefile builds the static `lua`.
        recipe: "patch -R -p1 < debian/patches/0002-lua-modules-paths.patch\n\
                 patch -R -p1 < debian/patches/0001-build-system.patch\n\
                 make -C src -j2 posix CC=musl-gcc MYLDFLAGS=-static",
        binary: "src/lua",
        companions: &[],
        ours: &[],
    },
    Program {
        name: "sqlite3",
        source: SourcePackage { name: "sqlite3", version: "3.40.1-2+deb12u2" },
        // The amalgamation needs tclsh; the shell is linked by hand because
        // Debian's patch links `make sqlite3` against the shared library.
        recipe: "mkdir -p bld && cd bld\n\
                 ../configure CC=musl-gcc --disable-tcl --disable-readline --disable-editline\n\
                 make -j2 sqlite3.c shell.c\n\
                 musl-gcc -O2 -static -DSQLITE_THREADSAFE=0 -DSQLITE_OMIT_LOAD_EXTENSION -DSQLITE_ENABLE_MATH_FUNCTIONS \
                 -DHAVE_USLEEP -DHAVE_LOCALTIME_R -o sqlite3 shell.c sqlite3.c -lm",
        binary: "bld/sqlite3",
        companions: &[],
        ours: &[],
    },
    Program {
        name: "make",
        source: SourcePackage { name: "make-dfsg", version: "4.3-4.1" },
        // The dfsg tarball ships no configure script.
        recipe: "autoreconf -fi\n\
                 mkdir -p bld && cd bld\n\
                 ../configure CC=musl-gcc LDFLAGS=-static --without-guile --disable-nls\n\
                 make -j2",
        binary: "bld/make",
        companions: &[],
        ours: &[],
    },
    Program {
        name: "tar",
        source: SourcePackage { name: "tar", version: "1.34+dfsg-1.2+deb12u1" },
        recipe: "mkdir -p bld && cd bld\n\
                 FORCE_UNSAFE_CONFIGURE=1 ../configure CC=musl-gcc LDFLAGS=-static --disable-nls --without-posix-acls \
                 --without-selinux --without-xattrs\n\
                 make -j2",
        binary: "bld/src/tar",
        companions: &[],
        ours: &[],
    },
    Program {
        name: "redis-server",
        source: SourcePackage { name: "redis", version: "5:7.0.15-1~deb12u7" },
        // The bundled Lua and hiredis; libc's malloc (jemalloc's build
        // wants more than musl-gcc offers), no TLS, no systemd.
        recipe: "make -j2 MALLOC=libc CC=musl-gcc LDFLAGS=-static USE_SYSTEMD=no BUILD_TLS=no",
        binary: "src/redis-server",
        companions: &["src/redis-cli", "src/redis-benchmark"],
        ours: &[],
    },
    Program {
        name: "nginx",
        source: SourcePackage { name: "nginx", version: "1.22.1-9+deb12u9" },
        // No PCRE (so no rewrite module) and no zlib (no gzip). Debian's
        // musl has no crypt(): a stub for auth_basic, the one caller.
        // Run with `-p DIR`: every path below is relative to a prefix in
        // /tmp, so the binary needs nothing of the host's layout.
        recipe: "mkdir -p lamina-inc\n\
                 printf '#include <unistd.h>\\n' > lamina-inc/crypt.h\n\
                 printf 'char *crypt(const char *k, const char *s) { (void)k; (void)s; return 0; }\\n' > lamina-inc/crypt_stub.c\n\
                 musl-gcc -O2 -c -o lamina-inc/crypt_stub.o lamina-inc/crypt_stub.c\n\
                 ./configure --with-cc=musl-gcc --with-cc-opt=-I$PWD/lamina-inc \"--with-ld-opt=-static $PWD/lamina-inc/crypt_stub.o\" \
                 --without-http_rewrite_module --without-http_gzip_module --without-pcre --prefix=/tmp/nginx \
                 --conf-path=/tmp/nginx/nginx.conf --error-log-path=stderr --http-log-path=/tmp/nginx/access.log \
                 --pid-path=/tmp/nginx/nginx.pid --lock-path=/tmp/nginx/nginx.lock --http-client-body-temp-path=/tmp/nginx/body \
                 --http-proxy-temp-path=/tmp/nginx/proxy --http-fastcgi-temp-path=/tmp/nginx/fastcgi \
                 --http-uwsgi-temp-path=/tmp/nginx/uwsgi --http-scgi-temp-path=/tmp/nginx/scgi\n\
                 make -j2",
        binary: "objs/nginx",
        companions: &[],
        ours: &[],
    },
    Program {
        name: "postmark",
        source: SourcePackage { name: "postmark", version: "1.53-2" },
        // One file; musl has no getwd (gone from POSIX 2008): getcwd.
        recipe: "sed -i 's/#define GETWD(x) getwd(x)/#define GETWD(x) getcwd(x,MAX_LINE)/' postmark-1.53.c\n\
                 musl-gcc -O2 -static -o postmark postmark-1.53.c",
        binary: "postmark",
        companions: &[],
        ours: &[],
    },
    Program {
        name: "leveldb-entries",
        source: SourcePackage { name: "leveldb", version: "1.23-4" },
        // Debian's CMake build, static library only (as its out-static
        // half); snappy, crc32c and tcmalloc left out whatever the host
        // has, so the binary is the same everywhere. Our driver is linked
        // against it with glibc, statically.
        recipe: "cmake -S . -B lamina-build -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DLEVELDB_BUILD_TESTS=OFF \
                 -DLEVELDB_BUILD_BENCHMARKS=OFF -DLEVELDB_INSTALL=OFF -DHAVE_SNAPPY=OFF -DHAVE_CRC32C=OFF -DHAVE_TCMALLOC=OFF\n\
                 cmake --build lamina-build -j2 --target leveldb\n\
                 g++ -O2 -static -pthread -Iinclude -o lamina-build/leveldb-entries \
                 \"$LAMINA_ROOT/user/tools/leveldb_entries.cc\" lamina-build/libleveldb.a",
        binary: "lamina-build/leveldb-entries",
        companions: &[],
        ours: &["user/tools/leveldb_entries.cc"],
    },
];

/// The other binaries of `program`'s build (built with it), by guest name.
pub fn companions(program: &Program) -> Outcome<Vec<(String, PathBuf)>> {
    let binary = built(program)?;
    let tree = unpacked_source(program.source)?;
    let mut found = Vec::new();
    for companion in program.companions {
        let path = tree.join(companion);
        if !path.is_file() {
            return Err(Failure::failed(format!("{} built without {}", binary.display(), path.display())));
        }
        let name = path.file_name().map(|name| name.to_string_lossy().to_string()).unwrap_or_default();
        found.push((name, path));
    }
    Ok(found)
}

/// The program's static binary, built on first use. A failed build leaves
/// no tree behind, so the next try starts from a clean unpack.
pub fn built(program: &Program) -> Outcome<PathBuf> {
    let tree = unpacked_source(program.source)?;
    let binary = tree.join(program.binary);
    let stamp = tree.join(".lamina-built");
    let root = crate::workspace::root();
    if stamp.is_file() && binary.is_file() && program.ours.iter().all(|file| not_newer(&root.join(file), &binary)) {
        return Ok(binary);
    }
    let log = tree.with_file_name(format!("{}-build.log", program.name));
    let log_file = std::fs::File::create(&log).context(|| format!("creating {}", log.display()))?;
    let errors = log_file.try_clone().context(|| format!("opening {}", log.display()))?;
    eprintln!("xtask: building {} from Debian's {} {} (log: {})", program.name, program.source.name, program.source.version, log.display());
    let status = Command::new("sh")
        .current_dir(&tree)
        .env("LAMINA_ROOT", &root)
        .args(["-ec", program.recipe])
        .stdout(log_file)
        .stderr(errors)
        .status()
        .context(|| format!("running the recipe of {}", program.name))?;
    if !status.success() || !binary.is_file() {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(15).collect::<Vec<_>>().into_iter().rev().collect();
        let _ = std::fs::remove_dir_all(&tree);
        return Err(Failure::failed(format!("building {} failed ({status}); the end of {}:\n{}", program.name, log.display(), tail.join("\n"))));
    }
    std::fs::write(&stamp, program.source.version).context(|| format!("writing {}", stamp.display()))?;
    Ok(binary)
}

/// Whether `input` was last written no later than `output` (false when
/// either cannot be read).
fn not_newer(input: &Path, output: &Path) -> bool {
    let modified = |path: &Path| std::fs::metadata(path).and_then(|metadata| metadata.modified()).ok();
    matches!((modified(input), modified(output)), (Some(input), Some(output)) if input <= output)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_files_of_ours_a_recipe_names_exist() {
        let root = crate::workspace::root();
        for program in PROGRAMS {
            for file in program.ours {
                assert!(root.join(file).is_file(), "{}: no {file}", program.name);
            }
        }
    }
}
