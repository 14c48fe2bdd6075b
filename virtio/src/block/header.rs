//! The request header and status byte of virtio-blk (virtio 1.2 §5.2.6):
//! every request is header, data buffers, one status byte.

/// The unit of `sector`, whatever the device's block size.
pub const SECTOR_SIZE: u32 = 512;
/// `struct virtio_blk_req`'s header: type, reserved, sector.
pub const HEADER_BYTES: u32 = 16;
/// The length of the identifier `VIRTIO_BLK_T_GET_ID` writes.
pub const ID_BYTES: u32 = 20;

/// The request types this driver sends.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum RequestType {
    /// `VIRTIO_BLK_T_IN`: read sectors.
    In,
    /// `VIRTIO_BLK_T_OUT`: write sectors.
    Out,
    /// `VIRTIO_BLK_T_FLUSH`: make earlier writes durable.
    Flush,
    /// `VIRTIO_BLK_T_GET_ID`: the device's identifier string.
    GetId,
    /// `VIRTIO_BLK_T_DISCARD` (needs `VIRTIO_BLK_F_DISCARD`).
    Discard,
    /// `VIRTIO_BLK_T_WRITE_ZEROES` (needs `VIRTIO_BLK_F_WRITE_ZEROES`).
    WriteZeroes,
}

impl RequestType {
    /// The type's number on the wire.
    pub fn number(self) -> u32 {
        match self {
            RequestType::In => 0,
            RequestType::Out => 1,
            RequestType::Flush => 4,
            RequestType::GetId => 8,
            RequestType::Discard => 11,
            RequestType::WriteZeroes => 13,
        }
    }
}

/// A request header.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct RequestHeader {
    /// What to do.
    pub request_type: RequestType,
    /// The first 512-byte sector (0 for flush and get-id).
    pub sector: u64,
}

impl RequestHeader {
    /// The header's bytes as the device reads them (little-endian).
    pub fn to_bytes(&self) -> [u8; HEADER_BYTES as usize] {
        let mut bytes = [0u8; HEADER_BYTES as usize];
        bytes[0..4].copy_from_slice(&self.request_type.number().to_le_bytes());
        // Bytes 4..8 are reserved (the legacy `ioprio`): zero.
        bytes[8..16].copy_from_slice(&self.sector.to_le_bytes());
        bytes
    }
}

/// The status byte a device writes last.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Status {
    /// `VIRTIO_BLK_S_OK`.
    Ok,
    /// `VIRTIO_BLK_S_IOERR`.
    IoError,
    /// `VIRTIO_BLK_S_UNSUPP`.
    Unsupported,
    /// A value the specification does not define.
    Unknown(u8),
}

impl Status {
    /// The byte's meaning.
    pub fn from_byte(byte: u8) -> Self {
        match byte {
            0 => Status::Ok,
            1 => Status::IoError,
            2 => Status::Unsupported,
            other => Status::Unknown(other),
        }
    }
}
