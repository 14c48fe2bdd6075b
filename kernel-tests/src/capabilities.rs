//! Capabilities through the native system calls, from ring 3: a process
//! reaches only what its capability space holds and only with the rights
//! it carries; delegate, offer/obtain and revoke work between processes;
//! after a revoke returns no descendant works anywhere — its pages are
//! unmapped on every CPU, including one running the process right then;
//! long chains and wide trees revoke in the kernel without deep stacks or
//! quadratic work; a revoke racing delegations from other CPUs leaves no
//! survivor. Everything comes back at the end.

use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use caps::{ObjectKind, Placement, RevokeScope, Rights};
use machine::user::{run_user, vectors, UserContext, UserExit};
use machine::{paging, percpu};
use sched::Pinning;

use super::runner::{check, Outcome};
use super::waiting::wait_until;
use kernel_objects::capabilities::{caps, memory_object_count, numbers, undo, NativeProcess, INFO_BYTES, SELF_SLOT};
use linux_abi::Errno;
use kernel_objects::kernel_containers::containers;
use native_harness::{build_delegation_shape, errno_of, load_stubs, native, user_read, user_write, StubEnd, DATA, READ_LOOP_AT};
use kernel_objects::physical_memory::free_frames;
use kernel_objects::SystemFacts;

const RW: u64 = 0b011;
const ALL: u64 = 0b1_1111;
/// Where the tests map memory capabilities.
const SHARED_AT: u64 = 0x80_0000;

/// Two processes in a fresh container, each with its stubs, each holding a
/// capability to the other: `a` may delegate into `b` (write) and read it
/// (obtain from it); `b` may only read `a`.
struct Pair {
    a: Arc<NativeProcess>,
    b: Arc<NativeProcess>,
    /// In `a`: its capability to `b`.
    b_in_a: u64,
    /// In `b`: its capability to `a`.
    a_in_b: u64,
    container: containers::ContainerId,
}

impl Pair {
    fn new(quota: u64) -> Result<Self, String> {
        let tree = containers().ok_or("no container tree")?;
        let container = tree.create_child(sched::current().container(), quota).map_err(|error| format!("{error:?}"))?;
        let a = NativeProcess::create(container).map_err(|error| format!("process a: {error:?}"))?;
        let b = NativeProcess::create(container).map_err(|error| format!("process b: {error:?}"))?;
        load_stubs(&a)?;
        load_stubs(&b)?;
        let b_in_a = b.introduce_to(&a, Rights::READ.union(Rights::WRITE)).map_err(|error| format!("{error:?}"))?;
        let a_in_b = a.introduce_to(&b, Rights::READ).map_err(|error| format!("{error:?}"))?;
        Ok(Self { a, b, b_in_a: u64::from(b_in_a), a_in_b: u64::from(a_in_b), container })
    }

    fn finish(self) -> Outcome {
        self.a.destroy();
        self.b.destroy();
        drop((self.a, self.b));
        let tree = containers().ok_or("no container tree")?;
        let charged = tree.charged(self.container).map_err(|error| format!("{error:?}"))?;
        check(charged == 0, || format!("{charged} pages still charged after both processes went"))?;
        tree.destroy(self.container).map(|_| ()).map_err(|error| format!("{error:?}"))
    }
}

fn expect_errno(what: &str, result: u64, errno: Errno) -> Outcome {
    check(errno_of(result) == Some(errno), || format!("{what}: got {:#x} ({:?}), want {errno:?}", result, errno_of(result)))
}

fn expect_ok(what: &str, result: u64) -> Result<u64, String> {
    match errno_of(result) {
        None => Ok(result),
        Some(errno) => Err(format!("{what} failed with {errno:?}")),
    }
}

/// What `cap_info` says about `slot` in `process` (read back from its data page).
fn info(process: &NativeProcess, slot: u64) -> Result<[u8; INFO_BYTES], String> {
    expect_ok("cap_info", native(process, numbers::INFO, &[slot, DATA]))?;
    let mut record = [0u8; INFO_BYTES];
    process.user_memory().read(DATA, &mut record).map_err(|errno| format!("reading the info back: {errno:?}"))?;
    Ok(record)
}

fn word(record: &[u8], at: usize, bytes: usize) -> u64 {
    let mut value = [0u8; 8];
    value[..bytes].copy_from_slice(&record[at..at + bytes]);
    u64::from_le_bytes(value)
}

pub fn a_process_reaches_only_what_its_capabilities_allow(_facts: &SystemFacts) -> Outcome {
    sched::release_spare_stacks();
    let (free_before, objects_before) = (free_frames(), memory_object_count());
    let pair = Pair::new(64)?;
    let (a, b) = (&*pair.a, &*pair.b);

    let memory = expect_ok("create memory", native(a, numbers::CREATE_MEMORY, &[2, ALL]))?;
    // b holds nothing in that slot: no call reaches the object.
    for (what, number, arguments) in [
        ("map", numbers::MAP, [memory, SHARED_AT, 1]),
        ("derive", numbers::DERIVE, [memory, ALL, 0]),
        ("delegate", numbers::DELEGATE, [memory, pair.a_in_b, ALL]),
        ("revoke", numbers::REVOKE, [memory, 0, 0]),
        ("drop", numbers::DROP, [memory, 0, 0]),
        ("info", numbers::INFO, [memory, DATA, 0]),
    ] {
        expect_errno(&format!("b's {what} of a slot it does not hold"), native(b, number, &arguments), Errno::EBADF)?;
    }
    expect_errno("a slot beyond 32 bits", native(a, numbers::INFO, &[1 << 40, DATA]), Errno::EBADF)?;
    expect_errno("b obtaining what a never offered", native(b, numbers::OBTAIN, &[pair.a_in_b, memory, ALL]), Errno::EPERM)?;

    // Rights guard what they name.
    let read_only = expect_ok("derive read-only", native(a, numbers::DERIVE, &[memory, 0b001, 0, 0]))?;
    expect_errno("mapping read-only writable", native(a, numbers::MAP, &[read_only, SHARED_AT, RW]), Errno::EACCES)?;
    expect_errno("delegating without grant", native(a, numbers::DELEGATE, &[read_only, pair.b_in_a, ALL]), Errno::EACCES)?;
    expect_errno("revoking without revoke", native(a, numbers::REVOKE, &[read_only, 1]), Errno::EACCES)?;
    expect_errno("b delegating into a with a read-only process capability", native(b, numbers::DELEGATE, &[SELF_SLOT as u64, pair.a_in_b, ALL]), Errno::EACCES)?;
    expect_errno("rights bits that name nothing", native(a, numbers::DERIVE, &[memory, 1 << 7, 0, 0]), Errno::EINVAL)?;
    expect_errno("a revoke scope that does not exist", native(a, numbers::REVOKE, &[memory, 2]), Errno::EINVAL)?;
    expect_errno("a view beyond the object", native(a, numbers::DERIVE, &[memory, ALL, 4096, 8192]), Errno::EINVAL)?;
    expect_errno("an unknown native call", native(a, numbers::END - 1, &[]), Errno::ENOSYS)?;
    expect_errno("info into unmapped memory", native(a, numbers::INFO, &[memory, 0x10]), Errno::EFAULT)?;
    expect_errno("info into the kernel half", native(a, numbers::INFO, &[memory, 0xFFFF_8000_0000_0000]), Errno::EFAULT)?;

    // a maps the object and writes; b gets a read-write copy, maps it, sees the write.
    expect_ok("a maps", native(a, numbers::MAP, &[memory, SHARED_AT, RW]))?;
    expect_errno("mapping one capability twice", native(a, numbers::MAP, &[memory, SHARED_AT + 0x10_0000, RW]), Errno::EBUSY)?;
    check(user_write(a, SHARED_AT + 8, 0x5eed) == StubEnd::Done(0), || "a's write to its mapping failed".into())?;
    let in_b = expect_ok("delegate to b", native(a, numbers::DELEGATE, &[memory, pair.b_in_a, RW | 0b1_0000]))?;
    expect_errno("b mapping it executable", native(b, numbers::MAP, &[in_b, SHARED_AT, 0b101]), Errno::EACCES)?;
    expect_ok("b maps", native(b, numbers::MAP, &[in_b, SHARED_AT, RW]))?;
    let seen = user_read(b, SHARED_AT + 8);
    check(seen == StubEnd::Done(0x5eed), || format!("b read {seen:?} where a wrote 0x5eed"))?;
    let record = info(b, in_b)?;
    let described = (word(&record, 0, 4), word(&record, 4, 4), word(&record, 10, 2), word(&record, 32, 8), word(&record, 40, 8));
    check(described == (ObjectKind::Memory as u64, RW | 0b1_0000, 0b11, 8192, 8192), || format!("b's info: kind, rights, flags, length, size = {described:?}"))?;
    let parent = info(a, memory)?;
    check(word(&parent, 48, 4) == 2 && word(&parent, 16, 8) == word(&record, 16, 8), || "a's info: two children, the same object key".into())?;
    // b may revoke below its copy (it has the revoke right) but not grant.
    expect_errno("b passing its copy on without grant", native(b, numbers::DELEGATE, &[in_b, pair.a_in_b, ALL]), Errno::EACCES)?;

    // Offer and obtain: one copy, once.
    expect_ok("a offers", native(a, numbers::OFFER, &[memory, pair.b_in_a]))?;
    let obtained = expect_ok("b obtains", native(b, numbers::OBTAIN, &[pair.a_in_b, memory, 0b001]))?;
    expect_errno("b obtaining twice", native(b, numbers::OBTAIN, &[pair.a_in_b, memory, 0b001]), Errno::EPERM)?;

    // a revokes what it gave: b's copies stop working, b's mapping is gone, a's stays.
    let removed = expect_ok("revoke descendants", native(a, numbers::REVOKE, &[memory, 1]))?;
    check(removed == 3, || format!("the revoke removed {removed}, want 3 (read-only copy, b's two)"))?;
    for slot in [in_b, obtained] {
        expect_errno("b's info of a revoked copy", native(b, numbers::INFO, &[slot, DATA]), Errno::EBADF)?;
    }
    let after = user_read(b, SHARED_AT + 8);
    check(after == StubEnd::PageFault(SHARED_AT + 8), || format!("b's mapping after the revoke: {after:?}"))?;
    check(user_read(a, SHARED_AT + 8) == StubEnd::Done(0x5eed), || "a lost its own mapping".into())?;
    expect_ok("a unmaps", native(a, numbers::UNMAP, &[memory]))?;
    check(user_read(a, SHARED_AT) == StubEnd::PageFault(SHARED_AT), || "a's unmap left the page".into())?;
    expect_ok("a drops", native(a, numbers::DROP, &[memory]))?;
    check(memory_object_count() == objects_before, || "the object outlived its last capability".into())?;

    pair.finish()?;
    sched::release_spare_stacks();
    check(free_frames() == free_before, || format!("free frames {free_before} before, {} after", free_frames()))
}

pub fn after_a_revoke_no_cpu_reaches_the_pages(_facts: &SystemFacts) -> Outcome {
    let cpus = percpu::online_count();
    if cpus < 2 {
        machine::println!("ktest: (no other CPU to check with one CPU online)");
        return Ok(());
    }
    let pair = Pair::new(64)?;
    let memory = expect_ok("create memory", native(&pair.a, numbers::CREATE_MEMORY, &[1, ALL]))?;
    let in_b = expect_ok("delegate", native(&pair.a, numbers::DELEGATE, &[memory, pair.b_in_a, 0b001]))?;
    expect_ok("b maps", native(&pair.b, numbers::MAP, &[in_b, SHARED_AT, 0b001]))?;

    // On the last CPU, b reads its mapping in a loop, in ring 3, without
    // ever leaving its address space, until the read faults.
    let revoked = Arc::new(AtomicBool::new(false));
    let reading = Arc::new(AtomicBool::new(false));
    let reads_after_revoke = Arc::new(AtomicU64::new(u64::MAX));
    let (b, flag, late, started) = (pair.b.clone(), revoked.clone(), reads_after_revoke.clone(), reading.clone());
    let reader = sched::spawn_on(cpus - 1, Pinning::Pinned, "cap-reader", move || {
        let Ok(tables) = b.prepare_to_enter() else { return };
        let mut context = UserContext::new(READ_LOOP_AT, DATA + vmem::PAGE_SIZE);
        context.registers.rdi = SHARED_AT;
        kernel_objects::address_spaces::switch_to(tables);
        let mut interrupts_after = 0;
        loop {
            let revoked_before_entry = flag.load(Ordering::Acquire);
            match run_user(&mut context) {
                UserExit::Exception { vector: vectors::PAGE_FAULT, address: SHARED_AT, .. } => break,
                UserExit::Interrupt { .. } if revoked_before_entry => {
                    interrupts_after += 1;
                    if interrupts_after >= 3 {
                        break; // still reading three ticks after the revoke
                    }
                }
                UserExit::Interrupt { .. } => started.store(true, Ordering::Release),
                _ => {
                    interrupts_after = u64::MAX - 1;
                    break;
                }
            }
        }
        paging::switch_to_kernel_tables();
        late.store(interrupts_after, Ordering::Release);
    })
    .map_err(|error| format!("spawn: {error:?}"))?;
    // Revoke once the reader has been reading (with the translation cached) for a tick.
    check(wait_until(10_000, || reading.load(Ordering::Acquire)), || "the reader never ran".into())?;
    let removed = expect_ok("revoke", native(&pair.a, numbers::REVOKE, &[memory, 1]))?;
    revoked.store(true, Ordering::Release);
    check(removed == 1, || format!("revoke removed {removed}"))?;
    check(wait_until(10_000, || reader.has_exited()), || "the reader on the other CPU never stopped reading".into())?;
    let late = reads_after_revoke.load(Ordering::Acquire);
    check(late == 0, || format!("the other CPU still read the page after the revoke returned ({late} ticks)"))?;
    drop(reader);
    pair.finish()
}

/// Builds a chain (each copy derived from the last) or a tree (every copy
/// from the root) of `count` copies in two spaces, revokes it from the
/// root, and checks that everything went, in linear work.
fn revoke_shape(count: u32, chain: bool) -> Outcome {
    let counts_before = caps().with(|database| (database.capability_count(), database.object_count()));
    let spaces = caps().with(|database| Ok::<_, caps::CapError>((database.create_space(count + 2)?, database.create_space(count + 2)?)));
    let (first, second) = spaces.map_err(|error| format!("spaces: {error:?}"))?;
    let revoked = build_and_revoke(first, second, count, chain);
    for space in [first, second] {
        caps().destroy_space(space, undo).map_err(|error| format!("destroying a space it made: {error:?}"))?;
    }
    revoked?;
    let after = caps().with(|database| database.audit().map(|()| (database.capability_count(), database.object_count())));
    check(after == Ok(counts_before), || format!("database {counts_before:?} before, {after:?} after"))
}

fn build_and_revoke(first: caps::SpaceId, second: caps::SpaceId, count: u32, chain: bool) -> Outcome {
    let built = build_delegation_shape(first, second, count, chain);
    let shape = if chain { "chain" } else { "tree" };
    let root = built.map_err(|error| {
        // Out of heap with memory free means fragmentation: say how much.
        let ((free, total), largest) = (machine::heap::usage(), machine::heap::largest_free_block());
        format!("building a {shape} of {count}: {error:?} (heap: {free} of {total} bytes free, largest block {largest})")
    })?;
    let work_before = caps().with(|database| database.work());
    let report = caps().revoke(first, root, RevokeScope::Descendants, undo).map_err(|error| format!("revoking the {shape}'s root: {error:?}"))?;
    let work = caps().with(|database| database.work()) - work_before;
    check(report.removed == u64::from(count), || format!("revoking a {shape} removed {}, want {count}", report.removed))?;
    check(work <= 4 * u64::from(count) + 8, || format!("revoking a {shape} of {count} took {work} node visits"))
}

pub fn long_chains_and_wide_trees_revoke_in_linear_work(_facts: &SystemFacts) -> Outcome {
    for count in [1, 100, 100_000] {
        revoke_shape(count, true)?;
        revoke_shape(count, false)?;
    }
    Ok(())
}

pub fn a_revoke_racing_delegations_on_other_cpus_leaves_no_survivor(_facts: &SystemFacts) -> Outcome {
    let cpus = percpu::online_count();
    let pair = Pair::new(64)?;
    for round in 0..20u64 {
        let root = expect_ok("create", native(&pair.a, numbers::CREATE_MEMORY, &[1, ALL]))?;
        let child = expect_ok("delegate", native(&pair.a, numbers::DELEGATE, &[root, pair.b_in_a, ALL]))?;
        let go = Arc::new(AtomicBool::new(false));
        let mut delegators = Vec::new();
        for cpu in 1..cpus {
            let (a, b, go) = (pair.a.clone(), pair.b.clone(), go.clone());
            let (space_a, space_b) = (a.space(), b.space());
            let thread = sched::spawn_on(cpu, Pinning::Pinned, "cap-delegator", move || {
                while !go.load(Ordering::Acquire) {
                    core::hint::spin_loop();
                }
                // Copies of copies, back and forth, from b's child on.
                let mut from = (space_b, child as u32);
                for _ in 0..40 {
                    let target = if from.0 == space_a { space_b } else { space_a };
                    let given = caps().with(|database| database.grant(from.0, from.1, target, Rights::ALL, Placement::LowestFrom(1)));
                    match given {
                        Ok(slot) => from = (target, slot),
                        Err(_) => break,
                    }
                }
            })
            .map_err(|error| format!("spawn: {error:?}"))?;
            delegators.push(thread);
        }
        go.store(true, Ordering::Release);
        for _ in 0..round % 5 {
            core::hint::spin_loop();
        }
        expect_ok("revoke", native(&pair.a, numbers::REVOKE, &[root, 1]))?;
        let survivors = caps().with(|database| {
            let key = database.capability(pair.a.space(), root as u32).map(|cap| cap.object.key);
            [pair.a.space(), pair.b.space()]
                .into_iter()
                .flat_map(|space| database.contents(space).map(|(_, cap)| cap.object.key).collect::<Vec<_>>())
                .filter(|other| Ok(*other) == key)
                .count()
        });
        check(survivors == 1, || format!("round {round}: {} copies survived the revoke", survivors - 1))?;
        check(wait_until(10_000, || delegators.iter().all(|thread| thread.has_exited())), || "delegators stuck".into())?;
        let after = caps().with(|database| database.contents(pair.b.space()).filter(|(slot, _)| *slot == child as u32).count());
        check(after == 0, || format!("round {round}: b's child survived"))?;
        expect_ok("drop root", native(&pair.a, numbers::DROP, &[root]))?;
        caps().with(|database| database.audit()).map_err(|error| format!("round {round}: {error}"))?;
    }
    pair.finish()
}

crate::kernel_tests! {
    "caps" => [
        a_process_reaches_only_what_its_capabilities_allow,
        after_a_revoke_no_cpu_reaches_the_pages,
        long_chains_and_wide_trees_revoke_in_linear_work,
        a_revoke_racing_delegations_on_other_cpus_leaves_no_survivor,
    ],
}
