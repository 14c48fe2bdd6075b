//! The 256 interrupt entry stubs and the common save/restore path.
//!
//! Each stub pushes a dummy error code when the CPU pushes none, then its
//! vector number, and jumps to `trap_common`, which saves the general
//! registers into a [`TrapFrame`], calls the safe Rust dispatcher and
//! returns with `iretq`. A trap from ring 3 instead switches GS, records
//! the registers in the user context being run and returns from
//! `user::run_user`, whose caller handles it.

use super::trap::trap_dispatch;

/// Registers saved on trap entry, in stack order (lowest address first).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct TrapFrame {
    pub r15: u64,
    pub r14: u64,
    pub r13: u64,
    pub r12: u64,
    pub r11: u64,
    pub r10: u64,
    pub r9: u64,
    pub r8: u64,
    pub rbp: u64,
    pub rdi: u64,
    pub rsi: u64,
    pub rdx: u64,
    pub rcx: u64,
    pub rbx: u64,
    pub rax: u64,
    pub vector: u64,
    pub error_code: u64,
    pub rip: u64,
    pub cs: u64,
    pub rflags: u64,
    pub rsp: u64,
    pub ss: u64,
}

impl TrapFrame {
    /// True when the trap came from user mode.
    pub fn from_user(&self) -> bool {
        self.cs & 3 != 0
    }
}

macro_rules! trap_stubs {
    ($($vector:literal)*) => {
        core::arch::global_asm!(
            $(
                concat!(".balign 16\ntrap_stub_", stringify!($vector), ":"),
                concat!(
                    ".if (", stringify!($vector), " == 8) || (", stringify!($vector), " >= 10 && ",
                    stringify!($vector), " <= 14) || (", stringify!($vector), " == 17) || (",
                    stringify!($vector), " == 21) || (", stringify!($vector), " == 29) || (",
                    stringify!($vector), " == 30)"
                ),
                ".else",
                "push 0",
                ".endif",
                concat!("push ", stringify!($vector)),
                "jmp trap_common",
            )*
            ".section .rodata",
            ".balign 8",
            ".global trap_stub_table",
            "trap_stub_table:",
            $(concat!(".quad trap_stub_", stringify!($vector)),)*
            ".text",
        );
    };
}

/// Saves the general registers in [`TrapFrame`] order (both trap paths).
macro_rules! push_general_registers {
    () => {
        "push rax\npush rbx\npush rcx\npush rdx\npush rsi\npush rdi\npush rbp\npush r8\npush r9\npush r10\npush r11\npush r12\npush r13\npush r14\npush r15"
    };
}

core::arch::global_asm!(
    ".text",
    "trap_common:",
    "test qword ptr [rsp + 24], 3", // CS of the interrupted code
    "jnz 3f",
    push_general_registers!(),
    "cld",
    "mov rdi, rsp",
    "call {dispatch}",
    "pop r15",
    "pop r14",
    "pop r13",
    "pop r12",
    "pop r11",
    "pop r10",
    "pop r9",
    "pop r8",
    "pop rbp",
    "pop rdi",
    "pop rsi",
    "pop rdx",
    "pop rcx",
    "pop rbx",
    "pop rax",
    "add rsp, 16",
    "iretq",
    // From ring 3: record the trap in the user context being run and
    // return from `run_user` (user.rs); the handler runs there.
    "3:",
    "swapgs",
    push_general_registers!(),
    "cld",
    "mov rdi, rsp",
    "call {record}",
    "jmp {user_return}",
    dispatch = sym trap_dispatch,
    record = sym super::user::record_user_trap,
    user_return = sym super::user::user_trap_return,
);

trap_stubs!(
    0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
    32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63
    64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95
    96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 118 119 120
    121 122 123 124 125 126 127 128 129 130 131 132 133 134 135 136 137 138 139 140 141 142 143 144
    145 146 147 148 149 150 151 152 153 154 155 156 157 158 159 160 161 162 163 164 165 166 167 168
    169 170 171 172 173 174 175 176 177 178 179 180 181 182 183 184 185 186 187 188 189 190 191 192
    193 194 195 196 197 198 199 200 201 202 203 204 205 206 207 208 209 210 211 212 213 214 215 216
    217 218 219 220 221 222 223 224 225 226 227 228 229 230 231 232 233 234 235 236 237 238 239 240
    241 242 243 244 245 246 247 248 249 250 251 252 253 254 255
);

extern "C" {
    static trap_stub_table: [u64; 256];
}

/// Address of the entry stub for `vector`.
pub fn stub_address(vector: u8) -> u64 {
    // SAFETY: `trap_stub_table` is a read-only table of 256 addresses defined
    // in the assembly above.
    unsafe { trap_stub_table[usize::from(vector)] }
}
