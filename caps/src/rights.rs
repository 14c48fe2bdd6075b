//! Rights: what a capability lets its holder do with the object. A set of
//! five bits; derivation only ever intersects them, so rights never grow
//! along the derivation tree (spec: `CapsSpec` checks the same).

/// A set of rights.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Rights(u8);

impl Rights {
    /// No right at all: the holder may only inspect and drop the capability.
    pub const NONE: Self = Self(0);
    /// Read the object (memory: map readable; endpoint: receive).
    pub const READ: Self = Self(1 << 0);
    /// Write the object (memory: map writable; endpoint: send; process:
    /// delegate into its capability space).
    pub const WRITE: Self = Self(1 << 1);
    /// Execute (memory: map executable).
    pub const EXECUTE: Self = Self(1 << 2);
    /// Pass the capability on: delegate it, or let another process obtain it.
    pub const GRANT: Self = Self(1 << 3);
    /// Revoke what was derived from it.
    pub const REVOKE: Self = Self(1 << 4);
    /// Every right.
    pub const ALL: Self = Self(0b1_1111);

    /// The set with bits `bits`, or `None` if a bit names no right.
    pub const fn from_bits(bits: u64) -> Option<Self> {
        if bits & !(Self::ALL.0 as u64) != 0 {
            return None;
        }
        Some(Self(bits as u8))
    }

    /// The bits of the set.
    pub const fn bits(self) -> u8 {
        self.0
    }

    /// Whether every right of `other` is in `self`.
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// The rights in both sets.
    pub const fn intersect(self, other: Self) -> Self {
        Self(self.0 & other.0)
    }

    /// The rights in either set.
    pub const fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    /// The rights of `self` missing from `held`.
    pub const fn missing_from(self, held: Self) -> Self {
        Self(self.0 & !held.0)
    }
}

impl core::fmt::Debug for Rights {
    fn fmt(&self, formatter: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        const NAMES: [&str; 5] = ["R", "W", "X", "G", "V"];
        formatter.write_str("Rights(")?;
        for (bit, name) in NAMES.iter().enumerate() {
            let shown = if self.0 & (1 << bit) != 0 { *name } else { "-" };
            formatter.write_str(shown)?;
        }
        formatter.write_str(")")
    }
}
