/*
 * Lamina's native calls from C: capabilities and seL4-style IPC
 * (`kernel-objects/src/capabilities/native_calls.rs`, `docs/capabilities.md`).
 * Each returns what `rax` held: a value, or -errno. On Linux the numbers
 * are not system calls and every call returns -ENOSYS.
 */
#ifndef LAMINA_NATIVE_H
#define LAMINA_NATIVE_H

#include <stdint.h>

enum lamina_call {
    LAMINA_CREATE_MEMORY = 0x4c00,
    LAMINA_DERIVE = 0x4c01,
    LAMINA_DELEGATE = 0x4c02,
    LAMINA_REVOKE = 0x4c05,
    LAMINA_DROP = 0x4c06,
    LAMINA_INFO = 0x4c07,
    LAMINA_MAP = 0x4c08,
    LAMINA_UNMAP = 0x4c09,
    LAMINA_CREATE_ENDPOINT = 0x4c10,
    LAMINA_SEND = 0x4c11,
    LAMINA_CALL = 0x4c12,
    LAMINA_RECV = 0x4c13,
    LAMINA_REPLY = 0x4c14,
    LAMINA_REPLY_RECV = 0x4c15,
    LAMINA_IPC_BUFFER = 0x4c16,
};

/* Rights (caps::Rights). */
#define LAMINA_READ 1u
#define LAMINA_WRITE 2u
#define LAMINA_GRANT 8u
#define LAMINA_ALL 31u

/* A message's info word: bytes in the IPC buffer, flags, a capability slot. */
#define LAMINA_LENGTH_MASK 0x1fffull
#define LAMINA_CAPABILITY (1ull << 16)
#define LAMINA_CAPABILITY_FAILED (1ull << 17)
#define LAMINA_TRUNCATED (1ull << 18)
#define LAMINA_CALL_MESSAGE (1ull << 19)
#define LAMINA_SLOT(info) ((uint64_t)(info) >> 32)
#define LAMINA_WITH_SLOT(slot) (LAMINA_CAPABILITY | ((uint64_t)(slot) << 32))

/* The process's capability to itself (processes.rs: SELF_SLOT). */
#define LAMINA_SELF_SLOT 4095

/* A message: four words and its info word. */
struct lamina_message {
    uint64_t words[4];
    uint64_t info;
};

static inline int64_t lamina_call3(uint64_t number, uint64_t first, uint64_t second, uint64_t third) {
    int64_t result;
    __asm__ volatile("syscall" : "=a"(result) : "a"(number), "D"(first), "S"(second), "d"(third) : "rcx", "r11", "memory");
    return result;
}

static inline int64_t lamina_call4(uint64_t number, uint64_t first, uint64_t second, uint64_t third, uint64_t fourth) {
    register uint64_t r10 __asm__("r10") = fourth;
    int64_t result;
    __asm__ volatile("syscall" : "=a"(result) : "a"(number), "D"(first), "S"(second), "d"(third), "r"(r10) : "rcx", "r11", "memory");
    return result;
}

/* An IPC call: `slot` in rdi, the message in rsi, rdx, r10, r8, r9; what
 * comes back replaces `message` (words and, in `info`, rax when it is not
 * an error). Returns rax. */
static inline int64_t lamina_ipc(uint64_t number, uint64_t slot, struct lamina_message *message) {
    register uint64_t r10 __asm__("r10") = message->words[2];
    register uint64_t r8 __asm__("r8") = message->words[3];
    register uint64_t r9 __asm__("r9") = message->info;
    uint64_t rsi = message->words[0], rdx = message->words[1];
    int64_t rax;
    __asm__ volatile("syscall"
                     : "=a"(rax), "+S"(rsi), "+d"(rdx), "+r"(r10), "+r"(r8), "+r"(r9)
                     : "a"(number), "D"(slot)
                     : "rcx", "r11", "memory");
    if (rax >= 0 && number != LAMINA_SEND && number != LAMINA_REPLY) {
        message->words[0] = rsi;
        message->words[1] = rdx;
        message->words[2] = r10;
        message->words[3] = r8;
        message->info = (uint64_t)rax;
    }
    return rax;
}

static inline int64_t lamina_create_endpoint(uint64_t rights) { return lamina_call3(LAMINA_CREATE_ENDPOINT, rights, 0, 0); }
/* A copy of the capability in `slot` with fewer rights (the whole view). */
static inline int64_t lamina_derive(uint64_t slot, uint64_t rights) { return lamina_call4(LAMINA_DERIVE, slot, rights, 0, 0); }
/* Removes the capability in `slot` (scope 0) or only its copies (1); how many went. */
static inline int64_t lamina_revoke(uint64_t slot, uint64_t scope) { return lamina_call3(LAMINA_REVOKE, slot, scope, 0); }
static inline int64_t lamina_delegate(uint64_t slot, uint64_t process_slot, uint64_t rights) { return lamina_call3(LAMINA_DELEGATE, slot, process_slot, rights); }
static inline int64_t lamina_drop(uint64_t slot) { return lamina_call3(LAMINA_DROP, slot, 0, 0); }
static inline int64_t lamina_info(uint64_t slot, void *record) { return lamina_call3(LAMINA_INFO, slot, (uint64_t)record, 0); }
/* `pages` zeroed pages (1 … 4096) with `rights`: the new capability's slot. */
static inline int64_t lamina_create_memory(uint64_t pages, uint64_t rights) { return lamina_call3(LAMINA_CREATE_MEMORY, pages, rights, 0); }
/* Maps the memory capability in `slot` at page-aligned `address` with `rights` (read required). */
static inline int64_t lamina_map(uint64_t slot, void *address, uint64_t rights) { return lamina_call3(LAMINA_MAP, slot, (uint64_t)address, rights); }
static inline int64_t lamina_unmap(uint64_t slot) { return lamina_call3(LAMINA_UNMAP, slot, 0, 0); }

/* cap_info's 56-byte record (docs/capabilities.md). */
struct lamina_cap_info {
    uint32_t kind, rights;
    uint16_t group, flags;
    uint32_t creator;
    uint64_t object, view_offset, view_length, object_size;
    uint32_t children, reserved;
};

static inline int64_t lamina_ipc_buffer(void *buffer, uint64_t length) { return lamina_call3(LAMINA_IPC_BUFFER, (uint64_t)buffer, length, 0); }

#endif
