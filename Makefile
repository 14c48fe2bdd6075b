# Lamina's one entry point. Every target goes through `cargo xtask`, which
# first checks the host packages it needs (`cargo xtask deps`) and installs
# the missing ones when run as root.
#
#   make run   [SMP=2] [GROUPS=1] [MEM=256] [ACCEL=tcg|kvm] [DISK=path|none] [PORTS=HOST:GUEST,...]
#                                                 boot on this terminal (Ctrl-A x quits), root on
#                                                 the ext4 image DISK (made on first use; none: in memory),
#                                                 a network card (DHCP), 127.0.0.1:HOST forwarded to GUEST
#   make test                                     every test tier (what .ci/run calls)
#   make iso                                      target/lamina.iso (GRUB, BIOS + UEFI)
#   make bench [BENCH=group,group]                benchmarks -> target/bench/results.json
#   make fuzz  [SMP=2] [SEED=n]                   the system-call fuzzer, seed after seed, until stopped
#   make fuzz-parsers [SEED=n]                    every parser of outside bytes, 10^6 inputs a seed, until stopped
#   make clean

SMP ?= 2
GROUPS ?= 1
MEM ?= 256
ACCEL ?= tcg
DISK ?= target/lamina-disk.img
PORTS ?=
BENCH ?=
SEED ?=

# rustup installs cargo here; a fresh shell may not have it on PATH yet.
export PATH := $(HOME)/.cargo/bin:$(PATH)
CARGO ?= cargo
XTASK = $(CARGO) xtask

.PHONY: all build run test iso bench fuzz stress fuzz-parsers deps clean cargo-present

all: build

build: cargo-present
	$(XTASK) build

run: cargo-present
	$(XTASK) run --smp $(SMP) --groups $(GROUPS) --mem $(MEM) --accel $(ACCEL) --disk $(DISK) --port '$(PORTS)'

test: cargo-present
	$(XTASK) test

iso: cargo-present
	$(XTASK) iso

bench: cargo-present
	$(XTASK) bench $(if $(BENCH),--groups $(BENCH))

fuzz: cargo-present
	$(XTASK) fuzz --smp $(SMP) $(if $(SEED),--seed $(SEED))

stress: cargo-present
	$(XTASK) stress $(if $(MINUTES),--minutes $(MINUTES))

# The dev profile, as in the test tier: integer overflow is checked.
fuzz-parsers: cargo-present
	$(XTASK) deps
	$(CARGO) run --package parser-fuzz -- --forever --inputs 1000000 --seed $(if $(SEED),$(SEED),$$(date +%s))

deps: cargo-present
	$(XTASK) deps

clean: cargo-present
	$(CARGO) clean

# The Rust toolchain itself comes from rustup; rust-toolchain.toml pins the
# version, targets and components. `rustup toolchain install` (no argument)
# installs exactly that, and adds the targets when a toolchain of the same
# version is already there without them (seen on these machines, where
# 1.95.0 is a link to a bare `stable`); it takes 50 ms when all is present.
cargo-present:
	@command -v $(CARGO) >/dev/null 2>&1 || { \
	    echo "cargo is not installed. Install Rust with rustup:"; \
	    echo "  curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal"; \
	    echo "then run make again."; \
	    exit 1; }
	@if command -v rustup >/dev/null 2>&1; then rustup toolchain install >/dev/null; fi
