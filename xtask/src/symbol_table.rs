//! Writes the kernel's symbol table into its `.ksyms` section after linking.
//!
//! The linker reserves `.ksyms` (zero-filled, loaded); here we collect the
//! image's defined function symbols, demangle them, encode them with
//! `machine::symbols::encode` and write the blob over the section's bytes in
//! the file, so the running kernel can name the functions in a backtrace.
//! If the image defines `__ksyms_end` inside the section (the kernel reads
//! the table up to it), the table must end there; alignment padding after
//! it is not used.

use crate::failure::{Context, Failure, Outcome};
use object::{Object, ObjectSection, ObjectSymbol, SymbolKind};
use std::ops::Range;
use std::path::Path;

/// The section the linker script reserves for the table.
pub const SECTION_NAME: &str = ".ksyms";
/// The linker-script symbol marking the end of the usable table space.
const END_SYMBOL: &str = "__ksyms_end";

/// Patches the ELF file at `path`; returns the number of symbols written.
pub fn write_symbol_table(path: &Path) -> Outcome<usize> {
    let original = std::fs::read(path).context(|| format!("cannot read {}", path.display()))?;
    let mut image = original.clone();
    let count = patch_image(&mut image).map_err(|failure| in_file(path, failure))?;
    if image != original {
        // Whole or not at all: a QEMU may be loading the image right now.
        let partial = path.with_extension("symbols-partial");
        std::fs::write(&partial, &image).context(|| format!("cannot write {}", partial.display()))?;
        std::fs::rename(&partial, path).context(|| format!("cannot replace {}", path.display()))?;
    }
    Ok(count)
}

fn in_file(path: &Path, failure: Failure) -> Failure {
    Failure::failed(format!("{}: {failure}", path.display()))
}

/// Writes the table into the `.ksyms` bytes of the ELF `image`; returns the symbol count.
pub fn patch_image(image: &mut [u8]) -> Outcome<usize> {
    let (range, symbols) = {
        let file = object::File::parse(&*image).context(|| "not an ELF file".to_string())?;
        (section_range(&file)?, function_symbols(&file))
    };
    let triples: Vec<(u64, u32, &str)> = symbols
        .iter()
        .map(|(address, size, name)| (*address, *size, name.as_str()))
        .collect();
    fill_section(image, range, &machine::symbols::encode(&triples))?;
    Ok(symbols.len())
}

/// Where the `.ksyms` bytes lie in the file.
fn section_range(file: &object::File) -> Outcome<Range<usize>> {
    let section = file.section_by_name(SECTION_NAME).ok_or_else(|| {
        Failure::failed(format!(
            "no {SECTION_NAME} section (the linker script must reserve it)"
        ))
    })?;
    let (offset, size) = section.file_range().ok_or_else(|| {
        Failure::failed(format!(
            "{SECTION_NAME} has no bytes in the file (it must be PROGBITS, not NOBITS)"
        ))
    })?;
    let usable = usable_length(file, section.address(), size);
    let start = usize::try_from(offset).map_err(|_| Failure::failed("section offset too large"))?;
    let length = usize::try_from(usable).map_err(|_| Failure::failed("section size too large"))?;
    Ok(start..start + length)
}

/// `size`, or less if `__ksyms_end` lies inside the section.
fn usable_length(file: &object::File, section_address: u64, size: u64) -> u64 {
    let end = file
        .symbols()
        .find(|symbol| symbol.name() == Ok(END_SYMBOL))
        .map(|symbol| symbol.address());
    match end.and_then(|end| end.checked_sub(section_address)) {
        Some(length) if length <= size => length,
        _ => size,
    }
}

/// The defined function symbols, demangled, without duplicates.
fn function_symbols(file: &object::File) -> Vec<(u64, u32, String)> {
    let mut symbols: Vec<(u64, u32, String)> = file
        .symbols()
        .filter(|symbol| symbol.kind() == SymbolKind::Text && symbol.is_definition())
        .filter_map(|symbol| {
            let name = symbol.name().ok().filter(|name| !name.is_empty())?;
            let size = u32::try_from(symbol.size()).unwrap_or(u32::MAX);
            Some((symbol.address(), size, demangle(name)))
        })
        .collect();
    symbols.sort();
    symbols.dedup();
    symbols
}

/// The readable name, without rustc's hash suffix.
fn demangle(name: &str) -> String {
    format!("{:#}", rustc_demangle::demangle(name))
}

/// Copies `blob` to the start of `range` in `image` and zeroes the rest of it.
fn fill_section(image: &mut [u8], range: Range<usize>, blob: &[u8]) -> Outcome {
    let file_length = image.len();
    let section = image.get_mut(range.clone()).ok_or_else(|| {
        Failure::failed(format!(
            "{SECTION_NAME} ({range:?}) lies outside the {file_length}-byte file"
        ))
    })?;
    if blob.len() > section.len() {
        return Err(Failure::failed(format!(
            "the symbol table needs {} bytes but the {SECTION_NAME} section holds only {} bytes; \
             enlarge {SECTION_NAME} in the kernel's linker script",
            blob.len(),
            section.len()
        )));
    }
    let (table, rest) = section.split_at_mut(blob.len());
    table.copy_from_slice(blob);
    rest.fill(0);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use machine::symbols::SymbolTable;
    use object::write::{Object as ElfWriter, Symbol, SymbolSection};
    use object::{Architecture, BinaryFormat, Endianness, SectionKind, SymbolFlags, SymbolScope};

    const MANGLED_MAIN: &[u8] = b"_ZN6kernel4main17h0123456789abcdefE";

    /// A relocatable ELF file with two functions, one data object, one
    /// undefined function and a `.ksyms` section of `ksyms_size` bytes (if any).
    fn fake_kernel(ksyms_size: Option<usize>) -> Vec<u8> {
        fake_kernel_with_end(ksyms_size, None)
    }

    /// As [`fake_kernel`], with `__ksyms_end` at `end` bytes into `.ksyms`.
    fn fake_kernel_with_end(ksyms_size: Option<usize>, end: Option<u64>) -> Vec<u8> {
        let mut elf = ElfWriter::new(BinaryFormat::Elf, Architecture::X86_64, Endianness::Little);
        let text = elf.add_section(vec![], b".text".to_vec(), SectionKind::Text);
        elf.append_section_data(text, &[0xc3; 0x40], 16);
        let data = elf.add_section(vec![], b".data".to_vec(), SectionKind::Data);
        elf.append_section_data(data, &[0; 8], 8);
        let text = SymbolSection::Section(text);
        add_symbol(&mut elf, MANGLED_MAIN, 0x20, SymbolKind::Text, text);
        add_symbol(&mut elf, b"start", 0, SymbolKind::Text, text);
        add_symbol(
            &mut elf,
            b"COUNTER",
            0,
            SymbolKind::Data,
            SymbolSection::Section(data),
        );
        add_symbol(
            &mut elf,
            b"memcpy",
            0,
            SymbolKind::Text,
            SymbolSection::Undefined,
        );
        if let Some(size) = ksyms_size {
            let ksyms =
                elf.add_section(vec![], SECTION_NAME.as_bytes().to_vec(), SectionKind::Data);
            elf.append_section_data(ksyms, &vec![0xaa; size], 8);
            if let Some(end) = end {
                let ksyms = SymbolSection::Section(ksyms);
                add_symbol(
                    &mut elf,
                    END_SYMBOL.as_bytes(),
                    end,
                    SymbolKind::Label,
                    ksyms,
                );
            }
        }
        elf.write().expect("fake ELF")
    }

    fn add_symbol(
        elf: &mut ElfWriter,
        name: &[u8],
        value: u64,
        kind: SymbolKind,
        section: SymbolSection,
    ) {
        let scope = SymbolScope::Linkage;
        let flags = SymbolFlags::None;
        let name = name.to_vec();
        elf.add_symbol(Symbol {
            name,
            value,
            size: 0x10,
            kind,
            scope,
            weak: false,
            section,
            flags,
        });
    }

    fn ksyms_bytes(image: &[u8]) -> &[u8] {
        let file = object::File::parse(image).unwrap();
        &image[section_range(&file).unwrap()]
    }

    #[test]
    fn defined_functions_are_written_demangled_in_address_order() {
        let mut image = fake_kernel(Some(256));
        assert_eq!(patch_image(&mut image), Ok(2));
        let section = ksyms_bytes(&image);
        let table = SymbolTable::parse(section).expect("a valid table");
        let names: Vec<&str> = (0..table.len())
            .map(|index| table.get(index).unwrap().name)
            .collect();
        assert_eq!(names, ["start", "kernel::main"]);
        assert_eq!(
            table
                .lookup(0x25)
                .map(|(symbol, offset)| (symbol.name, offset)),
            Some(("kernel::main", 5))
        );
        let used =
            machine::symbols::encode(&[(0, 0x10, "start"), (0x20, 0x10, "kernel::main")]).len();
        assert!(
            section[used..].iter().all(|byte| *byte == 0),
            "rest of the section zeroed"
        );
    }

    #[test]
    fn patching_twice_gives_the_same_image() {
        let mut once = fake_kernel(Some(256));
        patch_image(&mut once).unwrap();
        let mut twice = once.clone();
        patch_image(&mut twice).unwrap();
        assert_eq!(once, twice);
    }

    #[test]
    fn a_section_too_small_is_an_error_naming_both_sizes() {
        let mut image = fake_kernel(Some(32));
        let Err(Failure::Failed(message)) = patch_image(&mut image) else {
            panic!("accepted")
        };
        assert!(
            message.contains("needs 81 bytes") && message.contains("only 32 bytes"),
            "{message}"
        );
    }

    #[test]
    fn the_table_must_end_before_the_end_symbol() {
        let mut image = fake_kernel_with_end(Some(256), Some(64));
        let Err(Failure::Failed(message)) = patch_image(&mut image) else {
            panic!("accepted")
        };
        assert!(
            message.contains("needs 81 bytes") && message.contains("only 64 bytes"),
            "{message}"
        );
        let mut roomy = fake_kernel_with_end(Some(256), Some(128));
        assert_eq!(patch_image(&mut roomy), Ok(2));
        assert_eq!(ksyms_bytes(&roomy).len(), 128);
    }

    #[test]
    fn a_missing_section_is_an_error() {
        let Err(Failure::Failed(message)) = patch_image(&mut fake_kernel(None)) else {
            panic!("accepted")
        };
        assert!(message.contains("no .ksyms section"), "{message}");
    }

    #[test]
    fn garbage_is_not_an_elf_file() {
        assert!(patch_image(&mut [0u8; 64]).is_err());
    }
}
