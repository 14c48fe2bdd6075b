//! Host tests: the numbers and layouts against `<linux/kvm.h>`'s values,
//! and the slot table against Linux's answers (as a Linux 6.1 guest gave
//! them) and against a plain model of the rules over random requests.

use std::collections::BTreeMap;
use std::vec::Vec;

use linux_abi::Errno;
use testkit::Rng;

use crate::ioctls::*;
use crate::layouts::*;
use crate::memory_slots::*;

#[test]
fn request_numbers_are_linuxs() {
    assert_eq!(KVM_GET_API_VERSION, 0xAE00);
    assert_eq!(KVM_CREATE_VM, 0xAE01);
    assert_eq!(KVM_CHECK_EXTENSION, 0xAE03);
    assert_eq!(KVM_GET_VCPU_MMAP_SIZE, 0xAE04);
    assert_eq!(KVM_CREATE_VCPU, 0xAE41);
    assert_eq!(KVM_SET_USER_MEMORY_REGION, 0x4020_AE46);
    assert_eq!(KVM_RUN, 0xAE80);
    assert_eq!(KVM_GET_REGS, 0x8090_AE81);
    assert_eq!(KVM_SET_REGS, 0x4090_AE82);
    assert_eq!(KVM_GET_SREGS, 0x8138_AE83);
    assert_eq!(KVM_SET_SREGS, 0x4138_AE84);
    assert_eq!(KVM_INTERRUPT, 0x4004_AE86);
    assert_eq!(KVM_GET_SUPPORTED_CPUID, 0xC008_AE05);
    assert_eq!(KVM_SET_CPUID2, 0x4008_AE90);
    assert_eq!(KVM_GET_MSRS, 0xC008_AE88);
    assert_eq!(KVM_SET_MSRS, 0x4008_AE89);
    assert_eq!(KVM_GET_FPU, 0x81A0_AE8C);
    assert_eq!(KVM_SET_FPU, 0x41A0_AE8D);
}

#[test]
fn kvm_fpu_and_fxsave_carry_the_same_fields() {
    use crate::fpu_msrs::*;
    let mut fxsave = [0u8; FXSAVE_BYTES];
    for (index, byte) in fxsave.iter_mut().enumerate() {
        *byte = index as u8 ^ 0x5A;
    }
    let fpu = fpu_from_fxsave(&fxsave);
    // <linux/kvm.h>: fcw at 128, last_ip at 136, xmm at 152, mxcsr at 408.
    assert_eq!(fpu[128..130], fxsave[0..2]);
    assert_eq!(fpu[136..144], fxsave[8..16]);
    assert_eq!(fpu[152..408], fxsave[160..416]);
    assert_eq!(fpu[408..412], fxsave[24..28]);
    assert_eq!(fpu[0..128], fxsave[32..160]);
    // Back again: every shared byte returns, the MXCSR mask and the
    // reserved tail are the current image's.
    let current = [0xEEu8; FXSAVE_BYTES];
    let back = fxsave_from_fpu(&fpu, &current);
    assert_eq!(fpu_from_fxsave(&back), fpu);
    assert_eq!(back[28..32], [0xEE; 4]);
    assert_eq!(back[416..], [0xEE; 96]);
}

#[test]
fn msr_entries_round_trip() {
    use crate::fpu_msrs::*;
    let bytes = encode_msr_entry(0xC000_0082, 0xFFFF_FFFF_8100_0000);
    assert_eq!(bytes[4..8], [0; 4]);
    assert_eq!(decode_msr_entry(&bytes), (0xC000_0082, 0xFFFF_FFFF_8100_0000));
}

#[test]
fn registers_round_trip_in_kvms_order() {
    let mut regs = Regs::default();
    for (index, word) in regs.0.iter_mut().enumerate() {
        *word = 0x1111 * (index as u64 + 1);
    }
    let bytes = regs.encode();
    assert_eq!(&bytes[Regs::RIP * 8..Regs::RIP * 8 + 8], &(0x1111u64 * 17).to_le_bytes());
    assert_eq!(Regs::decode(&bytes), regs);
}

#[test]
fn segment_attributes_convert_both_ways() {
    // Real mode's code segment, and a 64-bit code segment (L, G).
    for (attributes, long) in [(0x009B, false), (0x0A9B, true)] {
        let segment = Segment::from_vmcb(0x8, attributes, 0xFFFF, 0);
        assert_eq!((segment.kind, segment.s, segment.present, segment.l, segment.g), (0xB, true, true, long, long));
        assert!(!segment.unusable);
        assert_eq!(segment.vmcb_attributes(), attributes);
    }
    // Not present reads as unusable; an unusable segment has no attributes.
    let null = Segment::from_vmcb(0, 0x0093 & !0x80, 0, 0);
    assert!(null.unusable);
    assert_eq!(Segment { unusable: true, ..Segment::from_vmcb(0, 0x93, 0xFFFF, 0) }.vmcb_attributes(), 0);
}

#[test]
fn special_registers_sit_where_kvm_puts_them() {
    let mut sregs = Sregs::default();
    sregs.segments[Sregs::CS] = Segment::from_vmcb(0xF000, 0x9B, 0xFFFF, 0xFFFF_0000);
    sregs.gdt = DescriptorTable { base: 0x500, limit: 0x27 };
    sregs.cr0 = 0x6000_0010;
    sregs.efer = 0x500;
    sregs.interrupt_bitmap[3] = 1 << 63;
    let bytes = sregs.encode();
    assert_eq!(&bytes[0..8], &0xFFFF_0000u64.to_le_bytes());
    assert_eq!(&bytes[12..14], &0xF000u16.to_le_bytes());
    assert_eq!(&bytes[192..202], &[0x00, 0x05, 0, 0, 0, 0, 0, 0, 0x27, 0]);
    assert_eq!(&bytes[224..232], &0x6000_0010u64.to_le_bytes());
    assert_eq!(&bytes[264..272], &0x500u64.to_le_bytes());
    assert_eq!(bytes[311], 0x80);
    assert_eq!(Sregs::decode(&bytes), sregs);
}

#[test]
fn an_io_exit_is_written_where_kvm_run_has_it() {
    let mut run = [0xEEu8; 64];
    RunExit::Io { input: false, size: 1, port: 0x3F8, count: 1 }.encode(&mut run);
    assert_eq!(&run[8..12], &2u32.to_le_bytes());
    assert_eq!(&run[32..40], &[1, 1, 0xF8, 0x03, 1, 0, 0, 0]);
    assert_eq!(&run[40..48], &4096u64.to_le_bytes());
    // The header before the reason is the VMM's, untouched.
    assert_eq!(run[1], 0xEE);
    RunExit::Halt.encode(&mut run);
    assert_eq!(&run[8..12], &5u32.to_le_bytes());
    assert!(run[32..].iter().all(|&byte| byte == 0));
}

fn region(slot: u32, guest_physical: u64, size: u64, user_address: u64) -> MemoryRegion {
    MemoryRegion { slot, flags: 0, guest_physical, size, user_address }
}

const MIB2: u64 = 2 << 20;
const USER: u64 = 0x7F00_0000_0000;

/// The answers a Linux 6.1 guest gave to the same requests (kvm_basic).
#[test]
fn slots_answer_as_linux_did() {
    let mut slots = MemorySlots::new();
    assert_eq!(slots.set(region(0, 0, MIB2, USER)), Ok(SlotChange::Created));
    assert_eq!(slots.set(region(1, 0x40_0001, 0x1000, USER)), Err(Errno::EINVAL));
    assert_eq!(slots.set(region(1, 0x40_0000, 0x1800, USER)), Err(Errno::EINVAL));
    assert_eq!(slots.set(region(1, 0x40_0000, 0x1000, USER + 1)), Err(Errno::EINVAL));
    assert_eq!(slots.set(region(1, 0x1000, 0x1000, USER + MIB2)), Err(Errno::EEXIST));
    assert_eq!(slots.set(region(0x7FFF, 0x40_0000, 0x1000, USER)), Err(Errno::EINVAL));
    // And the rest of the rules.
    assert_eq!(slots.set(region(0, 0, MIB2, USER)), Ok(SlotChange::Unchanged));
    assert_eq!(slots.set(region(0, 0, 2 * MIB2, USER)), Err(Errno::EINVAL), "resizing");
    assert_eq!(slots.set(MemoryRegion { flags: 4, ..region(2, MIB2, 0x1000, USER) }), Err(Errno::EINVAL), "unknown flag");
    assert_eq!(slots.set(region(1 << 16, MIB2, 0x1000, USER)), Err(Errno::EINVAL), "address space 1");
    assert_eq!(slots.set(region(3, 0, 0, USER)), Err(Errno::EINVAL), "deleting a slot never made");
    assert_eq!(slots.set(region(2, u64::MAX & !0xFFF, 0x2000, USER)), Err(Errno::EINVAL), "wrapping");
    assert_eq!(slots.find(0x1234), Some((slots.slots()[0], USER + 0x1234)));
    assert_eq!(slots.find(MIB2), None);
    assert_eq!(slots.find(u64::MAX), None, "the top address");
    assert!(matches!(slots.set(region(0, 4 * MIB2, MIB2, USER)), Ok(SlotChange::Moved(old)) if old.guest_physical == 0));
    assert_eq!(slots.find(0x1234), None);
    assert!(matches!(slots.set(region(0, 0, 0, USER)), Ok(SlotChange::Deleted(_))));
    assert!(slots.slots().is_empty());
}

/// The rules as a model: each slot the set of guest pages it covers.
#[derive(Default)]
struct Model {
    slots: BTreeMap<u32, (u64, u64, u64, u32)>,
}

impl Model {
    fn set(&mut self, region: MemoryRegion) -> Result<(), Errno> {
        let aligned = |value: u64| value & 0xFFF == 0;
        let good = region.flags & !3 == 0
            && region.slot < USER_SLOTS
            && aligned(region.size)
            && aligned(region.guest_physical)
            && aligned(region.user_address)
            && (region.user_address as u128 + region.size as u128) <= 0x7FFF_FFFF_F000
            && (region.guest_physical as u128 + region.size as u128) <= u64::MAX as u128
            && region.size / 4096 < (1 << 31);
        if !good {
            return Err(Errno::EINVAL);
        }
        let old = self.slots.get(&region.slot).copied();
        if region.size == 0 {
            return self.slots.remove(&region.slot).map(drop).ok_or(Errno::EINVAL);
        }
        if let Some((gpa, size, user, flags)) = old {
            if user != region.user_address || size != region.size || (flags ^ region.flags) & 2 != 0 {
                return Err(Errno::EINVAL);
            }
            if gpa == region.guest_physical {
                self.slots.insert(region.slot, (gpa, size, user, region.flags));
                return Ok(());
            }
        }
        let pages = |gpa: u64, size: u64| (gpa / 4096..(gpa + size) / 4096).collect::<std::collections::BTreeSet<u64>>();
        let mine = pages(region.guest_physical, region.size);
        if self.slots.iter().any(|(&id, &(gpa, size, _, _))| id != region.slot && !pages(gpa, size).is_disjoint(&mine)) {
            return Err(Errno::EEXIST);
        }
        self.slots.insert(region.slot, (region.guest_physical, region.size, region.user_address, region.flags));
        Ok(())
    }
}

#[test]
fn slots_refine_the_model_over_random_requests() {
    let mut rng = Rng::new(24);
    for _ in 0..200 {
        let (mut slots, mut model) = (MemorySlots::new(), Model::default());
        for _ in 0..40 {
            let pick = |rng: &mut Rng, choices: &[u64]| choices[rng.below(choices.len())];
            let request = MemoryRegion {
                slot: pick(&mut rng, &[0, 1, 2, 3, 0x7FFF, 1 << 16]) as u32,
                flags: pick(&mut rng, &[0, 0, 0, 1, 2, 4]) as u32,
                guest_physical: pick(&mut rng, &[0, 0x1000, 0x8000, 0x1_0000, 0x1001, u64::MAX & !0xFFF]),
                size: pick(&mut rng, &[0, 0x1000, 0x8000, 0x1_0000, 0x1800]),
                user_address: pick(&mut rng, &[USER, USER + 0x1000, USER + 1, 0x7FFF_FFFF_F000]),
            };
            let got = slots.set(request).map(drop);
            assert_eq!(got, model.set(request), "{request:?}");
            let listed: Vec<(u32, u64, u64, u64, u32)> = {
                let mut listed: Vec<_> = slots.slots().iter().map(|slot| (slot.id, slot.guest_physical, slot.size, slot.user_address, slot.flags)).collect();
                listed.sort();
                listed
            };
            let modelled: Vec<(u32, u64, u64, u64, u32)> = model.slots.iter().map(|(&id, &(gpa, size, user, flags))| (id, gpa, size, user, flags)).collect();
            assert_eq!(listed, modelled);
        }
    }
}

mod mmio {
    use crate::guest_walk::{translate, Paging};
    use crate::layouts::RunExit;
    use crate::mmio_decode::{decode, merge_load, CodeMode, MmioAccess, Operand};
    use std::collections::BTreeMap;

    fn access(write: bool, size: u8, operand: Operand, destination_size: u8, length: u8) -> Option<MmioAccess> {
        Some(MmioAccess { write, size, operand, destination_size, length })
    }

    #[test]
    fn the_moves_compilers_emit_decode() {
        let long = CodeMode::Long;
        // kvm_basic's: mov [rbx], eax and mov ecx, [rbx+8].
        assert_eq!(decode(&[0x89, 0x03, 0xF4], long), access(true, 4, Operand::Register(0), 4, 2));
        assert_eq!(decode(&[0x8B, 0x4B, 0x08], long), access(false, 4, Operand::Register(1), 4, 3));
        assert_eq!(decode(&[0x48, 0x89, 0x03], long), access(true, 8, Operand::Register(0), 8, 3));
        assert_eq!(decode(&[0x66, 0x89, 0x03], long), access(true, 2, Operand::Register(0), 2, 3));
        assert_eq!(decode(&[0x88, 0x23], long), access(true, 1, Operand::HighByte(0), 1, 2), "mov [rbx], ah");
        assert_eq!(decode(&[0x40, 0x88, 0x23], long), access(true, 1, Operand::Register(4), 1, 3), "mov [rbx], spl");
        assert_eq!(decode(&[0x44, 0x88, 0x23], long), access(true, 1, Operand::Register(12), 1, 3), "mov [rbx], r12b");
        assert_eq!(decode(&[0xC7, 0x03, 0x78, 0x56, 0x34, 0x12], long), access(true, 4, Operand::Immediate(0x1234_5678), 4, 6));
        assert_eq!(decode(&[0x48, 0xC7, 0x03, 0xFF, 0xFF, 0xFF, 0xFF], long), access(true, 8, Operand::Immediate(u64::MAX), 8, 7));
        assert_eq!(decode(&[0xC6, 0x43, 0x10, 0x7F], long), access(true, 1, Operand::Immediate(0x7F), 1, 4));
        assert_eq!(decode(&[0x0F, 0xB6, 0x43, 0x08], long), access(false, 1, Operand::Register(0), 4, 4), "movzx eax, byte [rbx+8]");
        assert_eq!(decode(&[0x0F, 0xB7, 0x83, 0, 1, 0, 0], long), access(false, 2, Operand::Register(0), 4, 7), "movzx eax, word [rbx+0x100]");
        // SIB, RIP-relative, SIB without base.
        assert_eq!(decode(&[0x89, 0x04, 0x24], long).map(|a| a.length), Some(3));
        assert_eq!(decode(&[0x89, 0x05, 1, 2, 3, 4], long).map(|a| a.length), Some(6));
        assert_eq!(decode(&[0x89, 0x04, 0x25, 1, 2, 3, 4], long).map(|a| a.length), Some(7));
        assert_eq!(decode(&[0x89, 0x03], CodeMode::Protected32), access(true, 4, Operand::Register(0), 4, 2));
        assert_eq!(decode(&[0x48, 0x89, 0x03], CodeMode::Protected32), None, "0x48 is dec eax outside 64-bit code");
    }

    #[test]
    fn what_is_not_a_memory_move_is_refused() {
        let long = CodeMode::Long;
        assert_eq!(decode(&[0x89, 0xC3], long), None, "register to register");
        assert_eq!(decode(&[0x01, 0x03], long), None, "add");
        assert_eq!(decode(&[0x89, 0x03], CodeMode::Bits16), None, "16-bit addressing");
        assert_eq!(decode(&[0xC7, 0x03, 0x78], long), None, "immediate cut short");
        assert_eq!(decode(&[0x89], long), None);
        assert_eq!(decode(&[], long), None);
        assert_eq!(decode(&[0x66; 20], long), None, "prefixes only");
        // Every short input is answered, none panics.
        for first in 0..=255u8 {
            for second in [0x00, 0x03, 0x04, 0x05, 0x43, 0x84, 0xC3] {
                let _ = decode(&[first, second, 0x24], long);
                let _ = decode(&[0x0F, first, second], CodeMode::Protected32);
            }
        }
    }

    #[test]
    fn loads_merge_into_registers_as_the_cpu_would() {
        let old = 0x1111_2222_3333_4444;
        assert_eq!(merge_load(old, 0xAB, 1, false), 0x1111_2222_3333_44AB);
        assert_eq!(merge_load(old, 0xAB, 1, true), 0x1111_2222_3333_AB44);
        assert_eq!(merge_load(old, 0xABCD, 2, false), 0x1111_2222_3333_ABCD);
        assert_eq!(merge_load(old, 0xCAFE_F00D, 4, false), 0xCAFE_F00D);
        assert_eq!(merge_load(old, u64::MAX, 8, false), u64::MAX);
    }

    #[test]
    fn an_mmio_exit_is_written_where_kvm_run_has_it() {
        let mut run = [0u8; 64];
        RunExit::Mmio { address: 0x20_0000, data: [0x78, 0x56, 0x34, 0x12, 0, 0, 0, 0], length: 4, write: true }.encode(&mut run);
        assert_eq!(&run[8..12], &6u32.to_le_bytes());
        assert_eq!(&run[32..40], &0x20_0000u64.to_le_bytes());
        assert_eq!(&run[40..44], &[0x78, 0x56, 0x34, 0x12]);
        assert_eq!(&run[48..53], &[4, 0, 0, 0, 1]);
    }

    fn memory(entries: &[(u64, u64)]) -> BTreeMap<u64, u64> {
        entries.iter().copied().collect()
    }

    #[test]
    fn the_guests_tables_are_walked() {
        let long = Paging { cr0: 0x8000_0011, cr3: 0x2000, cr4: 0x20, efer: 0x500 };
        // PML4[0] -> 0x3000, PDPT[0] -> 0x4000, PD[0] = 2 MiB page at 0,
        // PD[1] -> a table at 0x5000 whose entry 3 maps 0x9000.
        let tables = memory(&[(0x2000, 0x3003), (0x3000, 0x4003), (0x4000, 0x83), (0x4008, 0x5003), (0x5018, 0x9003)]);
        let read = |address: u64| tables.get(&address).copied().or(Some(0));
        assert_eq!(translate(long, 0x1017, read), Some(0x1017));
        assert_eq!(translate(long, 0x20_3456, read), Some(0x9456));
        assert_eq!(translate(long, 0x40_0000, read), None, "PD[2] not present");
        assert_eq!(translate(long, 0x1000, |_| None), None, "unreadable table");
        let off = Paging { cr0: 0x10, ..long };
        assert_eq!(translate(off, 0xFFF0, |_| None), Some(0xFFF0));
        // 32-bit tables: directory at 0x2000, entry 1 -> table at 0x3000.
        let flat = Paging { cr0: 0x8000_0011, cr3: 0x2000, cr4: 0, efer: 0 };
        let tables = memory(&[(0x2004, 0x3003), (0x3008, 0x7003)]);
        assert_eq!(translate(flat, 0x40_2123, |address| tables.get(&address).copied().or(Some(0))), Some(0x7123));
    }
}

mod model_specific_registers {
    use crate::msrs::{efer_write, home, MsrHome, StateMsr};

    #[test]
    fn each_register_has_its_home() {
        assert_eq!(home(0xC000_0080), MsrHome::Efer);
        assert_eq!(home(0xC000_0101), MsrHome::GsBase);
        assert_eq!(home(0xC000_0082), MsrHome::State(StateMsr::Lstar));
        assert_eq!(home(0x277), MsrHome::State(StateMsr::Pat));
        assert_eq!(home(0x2FF), MsrHome::Zero, "MTRR default type");
        assert_eq!(home(0xC001_0015), MsrHome::Zero, "AMD HWCR");
        assert_eq!(home(0x48), MsrHome::Missing, "SPEC_CTRL is not offered");
        assert_eq!(home(0xDEAD_BEEF), MsrHome::Missing);
    }

    #[test]
    fn efer_keeps_its_architectural_bits_and_never_svme() {
        assert_eq!(efer_write(0x500), Some(0x500));
        assert_eq!(efer_write(0xD01), Some(0xD01));
        assert_eq!(efer_write(0x1500), Some(0x500), "SVME stays the hypervisor's");
        assert_eq!(efer_write(1 << 2), None, "reserved bit");
        assert_eq!(efer_write(1 << 63), None);
    }
}

mod cpuid_table {
    use crate::cpuid::{answer, CpuidEntry, SIGNIFICANT_INDEX};

    #[test]
    fn entries_round_trip_and_answer_by_leaf_and_subleaf() {
        let entry = CpuidEntry { function: 7, index: 0, flags: SIGNIFICANT_INDEX, registers: [1, 2, 3, 4] };
        assert_eq!(CpuidEntry::decode(&entry.encode()), entry);
        assert_eq!(&entry.encode()[12..16], &1u32.to_le_bytes());
        let table = [entry, CpuidEntry { function: 7, index: 1, flags: SIGNIFICANT_INDEX, registers: [5, 6, 7, 8] }, CpuidEntry { function: 1, index: 9, flags: 0, registers: [9, 9, 9, 9] }];
        assert_eq!(answer(&table, 7, 1), [5, 6, 7, 8]);
        assert_eq!(answer(&table, 7, 0), [1, 2, 3, 4]);
        assert_eq!(answer(&table, 1, 3), [9, 9, 9, 9], "index ignored where it does not matter");
        assert_eq!(answer(&table, 0x4000_0000, 0), [0; 4], "a leaf not listed");
    }
}
