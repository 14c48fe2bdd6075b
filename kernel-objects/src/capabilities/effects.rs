//! Undoing what a removed capability did: a memory capability mapped into
//! an address space is unmapped there, with the TLB shot down on every CPU
//! that ran the space, before the revoke that removed it can return; the
//! frames of a memory object go back when its last capability goes; a
//! file or pipe's open file description is released with its last
//! descriptor; an endpoint closes with its last capability (its waiting
//! threads fail).
//!
//! Runs with no spinlock held (shootdowns wait for other CPUs). Must never
//! free a memory object's frames before its mappings are gone: the
//! database hands over removals children first, so the last reference
//! comes after every mapping of it.

use caps::{LastReference, ObjectKind, Removed, SpaceId, UseSite};

use machine::set_once::SetOnce;

use super::{endpoints, memory_objects, processes};
use crate::address_spaces::carry_out;

/// What releases a file or pipe's open file description: the personality
/// that owns open files registers it when it starts.
static RELEASE_OPEN_FILE: SetOnce<fn(u64)> = SetOnce::new();

/// Registers `release` as what undoing the last capability of a file or
/// pipe calls with the object's handle. Only the first registration counts.
pub fn on_last_file_reference(release: &'static fn(u64)) {
    let _ = RELEASE_OPEN_FILE.set(release);
}

/// Undoes the effects of `removed` (called for every removal, with the
/// capability lock released).
pub fn undo(removed: &Removed) {
    if matches!(removed.object.kind(), ObjectKind::File | ObjectKind::Pipe) {
        if removed.last_reference == LastReference::Yes {
            if let Some(release) = RELEASE_OPEN_FILE.get() {
                release(removed.object.handle);
            }
        }
        return;
    }
    if removed.object.kind() == ObjectKind::Endpoint {
        if removed.last_reference == LastReference::Yes {
            endpoints::release(removed.object.handle);
        }
        return;
    }
    if removed.object.kind() != ObjectKind::Memory {
        return;
    }
    if let Some(site) = removed.use_site {
        unmap(removed, site);
    }
    if removed.last_reference == LastReference::Yes {
        memory_objects::release(removed.object.handle);
    }
}

/// Removes the mapping `site` records: `place` is the capability space of
/// the process whose address space holds it, `detail` its first address.
fn unmap(removed: &Removed, site: UseSite) {
    let Some(process) = processes::find(SpaceId::from_bits(site.place)) else {
        return; // the process is gone, and its address space with it
    };
    let length = removed.view.length.next_multiple_of(vmem::PAGE_SIZE);
    match process.with_memory(|memory| memory.unmap(site.detail, length)) {
        Ok(Ok(flush)) => carry_out(flush),
        Ok(Err(error)) => machine::println!("lamina: warning: unmapping a revoked capability: {error:?}"),
        Err(_) => {} // destroyed meanwhile: nothing left mapped
    }
}
