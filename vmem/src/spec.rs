//! The executable specification: an address space is a map from virtual
//! page to (contents, rights) plus demand-zero regions. Contents are one
//! word per page here (what the refinement tests write and read); fork
//! copies the map, so each side's later writes are its own — which is
//! what copy-on-write must look like from user code.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use crate::space::allows;
use crate::{Access, Fault, Rights, VmError, PAGE_SIZE};

/// The abstract address space.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AddressSpaceSpec {
    /// Page address → (first word of the page, rights).
    pub pages: BTreeMap<u64, (u64, Rights)>,
    /// Demand-zero regions: page address → rights, page by page.
    pub regions: BTreeMap<u64, Rights>,
}

fn pages(start: u64, length: u64) -> Result<Vec<u64>, VmError> {
    let range = crate::space::user_range(start, length)?;
    Ok(range.step_by(PAGE_SIZE as usize).collect())
}

impl AddressSpaceSpec {
    /// Maps a page holding `word` with `rights`.
    pub fn map(&mut self, address: u64, word: u64, rights: Rights) -> Result<(), VmError> {
        pages(address, PAGE_SIZE)?;
        if !rights.read() {
            return Err(VmError::UnsupportedRights);
        }
        if self.pages.contains_key(&address) {
            return Err(VmError::AlreadyMapped);
        }
        self.pages.insert(address, (word, rights));
        Ok(())
    }

    /// Declares a demand-zero region.
    pub fn add_demand_zero(&mut self, start: u64, length: u64, rights: Rights) -> Result<(), VmError> {
        let pages = pages(start, length)?;
        if pages.iter().any(|page| self.regions.contains_key(page)) {
            return Err(VmError::AlreadyMapped);
        }
        for page in pages {
            self.regions.insert(page, rights);
        }
        Ok(())
    }

    /// Removes pages and regions.
    pub fn unmap(&mut self, start: u64, length: u64) -> Result<(), VmError> {
        for page in pages(start, length)? {
            self.pages.remove(&page);
            self.regions.remove(&page);
        }
        Ok(())
    }

    /// Drops the contents of the range's pages inside demand-zero regions:
    /// they read as zero again at the next access (`MADV_DONTNEED` on
    /// private anonymous memory). Pages outside regions stay.
    pub fn discard(&mut self, start: u64, length: u64) -> Result<(), VmError> {
        for page in pages(start, length)? {
            if self.regions.contains_key(&page) {
                self.pages.remove(&page);
            }
        }
        Ok(())
    }

    /// Moves the pages and regions of `[from, from + length)` to `to`,
    /// which must be empty and apart from the source.
    pub fn move_range(&mut self, from: u64, to: u64, length: u64) -> Result<(), VmError> {
        let (source, target) = (pages(from, length)?, pages(to, length)?);
        if (from < to + length && to < from + length) || target.iter().any(|page| self.pages.contains_key(page) || self.regions.contains_key(page)) {
            return Err(VmError::AlreadyMapped);
        }
        for (old, new) in source.into_iter().zip(target) {
            if let Some(page) = self.pages.remove(&old) {
                self.pages.insert(new, page);
            }
            if let Some(rights) = self.regions.remove(&old) {
                self.regions.insert(new, rights);
            }
        }
        Ok(())
    }

    /// Changes rights of existing pages and regions.
    pub fn protect(&mut self, start: u64, length: u64, rights: Rights) -> Result<(), VmError> {
        let pages = pages(start, length)?;
        Rights::new(rights.read(), rights.write(), rights.execute())?;
        for page in pages {
            if let Some(entry) = self.pages.get_mut(&page) {
                entry.1 = rights;
            }
            if let Some(region) = self.regions.get_mut(&page) {
                *region = rights;
            }
        }
        Ok(())
    }

    /// The bytes the space covers: pages mapped or in a region, each once.
    pub fn size(&self) -> u64 {
        let in_regions = self.regions.len() as u64;
        let outside = self.pages.keys().filter(|page| !self.regions.contains_key(page)).count() as u64;
        (in_regions + outside) * PAGE_SIZE
    }

    /// The rights user code has at `address` (`None`: nothing there yet).
    pub fn rights(&self, address: u64) -> Option<Rights> {
        self.pages.get(&(address & !(PAGE_SIZE - 1))).map(|(_, rights)| *rights)
    }

    /// A user access of the first word of a page: the word read, or the
    /// word written (`Some(value)`); a demand-zero page appears first.
    pub fn access(&mut self, address: u64, access: Access, value: Option<u64>) -> Result<u64, Fault> {
        let page = address & !(PAGE_SIZE - 1);
        if !self.pages.contains_key(&page) {
            let rights = *self.regions.get(&page).ok_or(Fault::Segmentation)?;
            if !allows(rights, access) {
                return Err(Fault::Segmentation);
            }
            self.pages.insert(page, (0, rights));
        }
        let (word, rights) = self.pages.get_mut(&page).ok_or(Fault::Segmentation)?;
        if !allows(*rights, access) {
            return Err(Fault::Segmentation);
        }
        if let Some(value) = value {
            *word = value;
        }
        Ok(*word)
    }
}
