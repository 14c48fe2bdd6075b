//! The plan for real executables (the host's static busybox, a musl C
//! program if one can be built) and for damaged ones; the initial stack
//! read back as a program would.

use alloc::vec::Vec;

use crate::{auxv, interpreter_plan, load_plan, ElfError, InitialStack, INTERPRETER_BASE};

fn word(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
}

fn busybox() -> Option<Vec<u8>> {
    std::fs::read("/bin/busybox").ok()
}

#[test]
fn the_static_busybox_has_a_plan_with_its_entry_in_code() {
    let Some(file) = busybox() else { return };
    let plan = load_plan(&file).expect("busybox-static loads");
    assert!(plan.segments.iter().any(|segment| segment.execute));
    assert!(plan.segments.iter().all(|segment| !(segment.write && segment.execute)), "no W+X segment");
    assert!(plan.program_headers != 0 && plan.program_header_count > 0);
    assert!(plan.end > plan.entry);
}

#[test]
fn a_dynamic_program_names_its_interpreter_which_loads_at_its_base() {
    let Ok(file) = std::fs::read("/bin/ls") else { return };
    let plan = load_plan(&file).expect("a dynamic program has a plan");
    assert_eq!(plan.interpreter.as_deref(), Some(&b"/lib64/ld-linux-x86-64.so.2"[..]));
    let Ok(loader) = std::fs::read("/lib64/ld-linux-x86-64.so.2") else { return };
    let loader_plan = interpreter_plan(&loader).expect("glibc's ld.so loads as an interpreter");
    assert_eq!((loader_plan.base, loader_plan.interpreter.as_ref()), (INTERPRETER_BASE, None));
    assert!(loader_plan.entry > INTERPRETER_BASE);
    // A program with an interpreter is no interpreter itself.
    assert_eq!(interpreter_plan(&file), Err(ElfError::Dynamic));
    // A damaged path: no NUL at its end.
    let table = u64::from_le_bytes(file[32..40].try_into().unwrap()) as usize;
    let entries = usize::from(u16::from_le_bytes(file[56..58].try_into().unwrap()));
    let interp = (0..entries).map(|index| table + index * 56).find(|at| file[*at..*at + 4] == [3, 0, 0, 0]).expect("PT_INTERP");
    let offset = u64::from_le_bytes(file[interp + 8..interp + 16].try_into().unwrap()) as usize;
    let length = u64::from_le_bytes(file[interp + 32..interp + 40].try_into().unwrap()) as usize;
    let mut damaged = file.clone();
    damaged[offset + length - 1] = b'x';
    assert_eq!(load_plan(&damaged), Err(ElfError::Malformed));
}

#[test]
fn damaged_executables_are_errors_never_panics() {
    assert_eq!(load_plan(b""), Err(ElfError::Malformed));
    assert_eq!(load_plan(b"#!/bin/sh\n"), Err(ElfError::Malformed));
    let Some(file) = busybox() else { return };
    for length in [16, 64, 100, 500, 4096] {
        assert!(load_plan(&file[..length]).is_err(), "a cut at {length} loaded");
    }
    // Flip bytes all over the headers: never a panic.
    for at in 0..1024.min(file.len()) {
        let mut damaged = file[..8192.min(file.len())].to_vec();
        damaged[at] ^= 0xFF;
        let _ = load_plan(&damaged);
    }
    let mut wrong_machine = file.clone();
    wrong_machine[18] = 0x28; // EM_ARM
    assert_eq!(load_plan(&wrong_machine), Err(ElfError::WrongMachine));
}

#[test]
fn the_initial_stack_reads_back_as_argc_argv_envp_auxv() {
    let top = 0x7fff_0000_0000u64;
    let random = [7u8; 16];
    let stack = InitialStack::build(top, &[b"/bin/sh", b"-c", b"echo hi"], &[b"PATH=/bin"], &[(auxv::AT_PAGESZ, 4096)], random).unwrap();
    assert_eq!(stack.pointer % 16, 0);
    assert_eq!(stack.pointer + stack.bytes.len() as u64, top);
    let read = |address: u64| word(&stack.bytes, (address - stack.pointer) as usize);
    let string = |address: u64| {
        let start = (address - stack.pointer) as usize;
        let end = start + stack.bytes[start..].iter().position(|byte| *byte == 0).unwrap();
        std::string::String::from_utf8(stack.bytes[start..end].to_vec()).unwrap()
    };
    assert_eq!(read(stack.pointer), 3);
    let argv: Vec<_> = (0..3).map(|index| string(read(stack.pointer + 8 + index * 8))).collect();
    assert_eq!(argv, ["/bin/sh", "-c", "echo hi"]);
    assert_eq!(read(stack.pointer + 32), 0);
    assert_eq!(string(read(stack.pointer + 40)), "PATH=/bin");
    assert_eq!(read(stack.pointer + 48), 0);
    let mut auxiliary = std::collections::BTreeMap::new();
    let mut at = stack.pointer + 56;
    loop {
        let (kind, value) = (read(at), read(at + 8));
        at += 16;
        if kind == auxv::AT_NULL {
            break;
        }
        auxiliary.insert(kind, value);
    }
    assert_eq!(auxiliary[&auxv::AT_PAGESZ], 4096);
    let random_at = (auxiliary[&auxv::AT_RANDOM] - stack.pointer) as usize;
    assert_eq!(stack.bytes[random_at..random_at + 16], random);
    assert_eq!(string(auxiliary[&auxv::AT_EXECFN]), "/bin/sh");
    assert_eq!(string(auxiliary[&auxv::AT_PLATFORM]), "x86_64");
}

#[test]
fn an_oversized_environment_is_too_big() {
    let huge = alloc::vec![b'x'; 300 * 1024];
    assert_eq!(InitialStack::build(0x7fff_0000_0000, &[b"a"], &[&huge], &[], [0; 16]), Err(crate::StackError::TooBig));
}
