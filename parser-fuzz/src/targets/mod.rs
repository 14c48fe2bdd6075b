//! The targets: one file per parser that takes outside bytes.

use crate::Target;

pub mod acpi;
pub mod boot_info;
pub mod caps_wire;
pub mod cpio;
pub mod elf;
pub mod ext4_image;
pub mod journal;
pub mod netlink;
pub mod packets;
pub mod socket_address;

/// Every target, in the order reports list them.
pub fn all() -> Vec<Box<dyn Target>> {
    vec![Box::new(elf::Elf), Box::new(ext4_image::Ext4Image), Box::new(journal::Jbd2Journal), Box::new(cpio::Cpio), Box::new(boot_info::BootInfo), Box::new(acpi::Acpi), Box::new(packets::Packets), Box::new(netlink::Netlink), Box::new(socket_address::SocketAddressTarget), Box::new(caps_wire::CapsWire)]
}
