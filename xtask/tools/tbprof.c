/* The TCG plugin behind `cargo xtask profile`: counts the guest
 * instructions executed in each translation block and writes them, as
 * "vaddr instructions executions" lines, to the file `out=PATH` names —
 * every half second and at exit (xtask may end QEMU before its exit
 * handlers run). For QEMU's plugin interface version 1 (QEMU 7.2, the one
 * Debian 12 ships); the few declarations it needs are written here from
 * the documented interface. One virtual CPU is counted exactly; with more,
 * concurrent increments may be lost (a profile, not a meter). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
typedef struct qemu_info_t qemu_info_t;
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
typedef void (*tb_trans_cb)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*udata_cb)(qemu_plugin_id_t id, void *userdata);

extern void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, tb_trans_cb cb);
extern size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
extern uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
extern void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb, enum qemu_plugin_op op, void *ptr, uint64_t imm);
extern void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, udata_cb cb, void *userdata);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

struct block { uint64_t vaddr; uint64_t insns; uint64_t executions; };
#define MOST 400000
static struct block *blocks;
static size_t count;

static void translated(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
    (void)id;
    if (count >= MOST) return;
    struct block *b = &blocks[count++];
    b->vaddr = qemu_plugin_tb_vaddr(tb);
    b->insns = qemu_plugin_tb_n_insns(tb);
    b->executions = 0;
    qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &b->executions, 1);
}

static void at_exit(qemu_plugin_id_t id, void *userdata) {
    (void)id;
    const char *path = userdata ? userdata : "/tmp/tbprof.txt";
    /* Written aside and renamed over the old counts: QEMU is killed when
     * the program ends, and a kill in the middle of a write must leave the
     * previous complete counts, not a truncated file. */
    char temporary[4096];
    snprintf(temporary, sizeof temporary, "%s.part", path);
    FILE *out = fopen(temporary, "w");
    if (!out) return;
    for (size_t i = 0; i < count; i++)
        if (blocks[i].executions)
            fprintf(out, "%llx %llu %llu\n", (unsigned long long)blocks[i].vaddr, (unsigned long long)(blocks[i].insns * blocks[i].executions), (unsigned long long)blocks[i].executions);
    if (fclose(out) == 0)
        rename(temporary, path);
}

static void *dumper(void *path) {
    for (;;) {
        usleep(500000);
        at_exit(0, path);
    }
    return NULL;
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv) {
    (void)info;
    blocks = calloc(MOST, sizeof *blocks);
    char *path = NULL;
    for (int i = 0; i < argc; i++)
        if (strncmp(argv[i], "out=", 4) == 0) path = strdup(argv[i] + 4);
    qemu_plugin_register_vcpu_tb_trans_cb(id, translated);
    qemu_plugin_register_atexit_cb(id, at_exit, path);
    pthread_t thread;
    pthread_create(&thread, NULL, dumper, path);
    return 0;
}
