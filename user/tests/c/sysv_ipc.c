/*
 * System V IPC: shared-memory segments (shared with a child, kept across
 * fork, counted in shm_nattch, removed at the last detach), semaphore sets
 * (all-or-nothing semop, IPC_NOWAIT, a wait another process ends, a timed
 * wait, SEM_UNDO applied at exit, the values and counts semctl reads) and
 * message queues (types, MSG_EXCEPT, the lowest type first, E2BIG and
 * MSG_NOERROR, ENOMSG); keys, IPC_EXCL, removal and the argument errors.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

#define KEY 0x4c414d31

union semun {
    int val;
    struct semid_ds *buf;
    unsigned short *array;
};

static void segments(void) {
    shmctl(shmget(KEY, 1, 0), IPC_RMID, NULL);
    int id = shmget(KEY, 10000, IPC_CREAT | IPC_EXCL | 0600);
    EXPECT("shmget IPC_CREAT|IPC_EXCL", id >= 0);
    CHECK("shmget again with IPC_EXCL", shmget(KEY, 10000, IPC_CREAT | IPC_EXCL | 0600));
    EXPECT("shmget of the key finds it", shmget(KEY, 100, 0) == id);
    CHECK("shmget asking for more than it has", shmget(KEY, 20000, 0));
    CHECK("shmget of a key nobody made", shmget(KEY + 1, 100, 0));
    CHECK("shmget of size 0", shmget(IPC_PRIVATE, 0, 0600));
    char *memory = shmat(id, NULL, 0);
    EXPECT("shmat", memory != (void *)-1);
    EXPECT("  a new segment is zeroed", memory[0] == 0 && memory[9999] == 0);
    struct shmid_ds status;
    shmctl(id, IPC_STAT, &status);
    printf("  size %lu, attaches %lu, mode %o\n", (unsigned long)status.shm_segsz, (unsigned long)status.shm_nattch, status.shm_perm.mode & 0777);
    pid_t child = fork();
    if (child == 0) {
        strcpy(memory, "inherited");
        char *again = shmat(id, NULL, 0);
        strcpy(again + 5000, "attached by the child");
        shmdt(again);
        _exit(0);
    }
    waitpid(child, NULL, 0);
    printf("  the child's stores: %s, %s\n", memory, memory + 5000);
    shmctl(id, IPC_STAT, &status);
    printf("  attaches after the child left: %lu\n", (unsigned long)status.shm_nattch);
    char *readonly = shmat(id, NULL, SHM_RDONLY);
    printf("  a read-only attach reads: %s\n", readonly);
    CHECK("  shmdt of it", shmdt(readonly));
    CHECK("  shmdt of an address with nothing attached", shmdt(memory + 4096));
    CHECK("IPC_RMID while attached", shmctl(id, IPC_RMID, NULL));
    CHECK("  the key no longer finds it", shmget(KEY, 100, 0));
    shmctl(id, IPC_STAT, &status);
    printf("  still attached once, marked for removal: %lu %s\n", (unsigned long)status.shm_nattch, (status.shm_perm.mode & 01000) ? "yes" : "no");
    printf("  still usable: %s\n", memory);
    CHECK("  the last shmdt", shmdt(memory));
    CHECK("  now the identifier is gone", shmctl(id, IPC_STAT, &status));
    CHECK("shmat of a bad identifier", (long)shmat(-1, NULL, 0));
}

static void semaphores(void) {
    int id = semget(IPC_PRIVATE, 2, IPC_CREAT | 0600);
    EXPECT("semget of 2", id >= 0);
    CHECK("semget of 0 (new)", semget(IPC_PRIVATE, 0, 0600));
    CHECK("GETVAL of a new semaphore", semctl(id, 0, GETVAL));
    CHECK("SETVAL 1", semctl(id, 0, SETVAL, (union semun){.val = 1}));
    CHECK("SETVAL past SEMVMX", semctl(id, 0, SETVAL, (union semun){.val = 40000}));
    struct sembuf both[2] = {{0, -1, IPC_NOWAIT}, {1, -1, IPC_NOWAIT}};
    CHECK("semop taking both with IPC_NOWAIT (the second is 0)", semop(id, both, 2));
    CHECK("  the first was not taken", semctl(id, 0, GETVAL));
    struct sembuf take = {0, -1, 0}, give_second = {1, 1, 0};
    CHECK("semop taking the first", semop(id, &take, 1));
    struct timespec short_limit = {0, 50000000};
    CHECK("semtimedop with a 50 ms limit", semtimedop(id, &take, 1, &short_limit));

    pid_t child = fork();
    if (child == 0) {
        usleep(100000);
        struct sembuf give = {0, 1, 0};
        semop(id, &give, 1);
        _exit(0);
    }
    usleep(20000);
    CHECK("semop waits until another process gives", semop(id, &take, 1));
    waitpid(child, NULL, 0);
    EXPECT("  GETPID names the last to operate (this process)", semctl(id, 0, GETPID) == getpid());

    child = fork();
    if (child == 0) {
        struct sembuf undone = {1, 5, SEM_UNDO};
        semop(id, &undone, 1);
        semop(id, &give_second, 1);
        _exit(0);
    }
    waitpid(child, NULL, 0);
    CHECK("SEM_UNDO: after the child's exit only its plain +1 stays", semctl(id, 1, GETVAL));
    unsigned short values[2] = {3, 4};
    CHECK("SETALL", semctl(id, 0, SETALL, (union semun){.array = values}));
    values[0] = values[1] = 0;
    CHECK("GETALL", semctl(id, 0, GETALL, (union semun){.array = values}));
    printf("  values %u %u\n", values[0], values[1]);
    struct semid_ds status;
    semctl(id, 0, IPC_STAT, (union semun){.buf = &status});
    printf("  IPC_STAT: %lu semaphores, mode %o\n", (unsigned long)status.sem_nsems, status.sem_perm.mode & 0777);
    CHECK("semop on a semaphore past the set", semop(id, &(struct sembuf){2, 1, 0}, 1));
    CHECK("semop with no operations", semop(id, &take, 0));
    CHECK("GETVAL past the set", semctl(id, 5, GETVAL));

    /* A waiter sees the set removed. */
    child = fork();
    if (child == 0) {
        struct sembuf wait_zero = {0, 0, 0};
        _exit(semop(id, &wait_zero, 1) == -1 && errno == EIDRM ? 0 : 1);
    }
    for (int tries = 0; tries < 1000 && semctl(id, 0, GETZCNT) < 1; tries++) {
        usleep(5000);
    }
    CHECK("GETZCNT sees the waiter", semctl(id, 0, GETZCNT));
    CHECK("IPC_RMID", semctl(id, 0, IPC_RMID));
    int status_word;
    waitpid(child, &status_word, 0);
    EXPECT("  the waiter got EIDRM", WIFEXITED(status_word) && WEXITSTATUS(status_word) == 0);
    CHECK("  GETVAL of the removed set", semctl(id, 0, GETVAL));
}

struct message {
    long type;
    char text[32];
};

static void queues(void) {
    int id = msgget(IPC_PRIVATE, IPC_CREAT | 0600);
    EXPECT("msgget", id >= 0);
    struct message out = {3, "three"};
    msgsnd(id, &out, 6, 0);
    out = (struct message){1, "one"};
    msgsnd(id, &out, 4, 0);
    out = (struct message){2, "two"};
    msgsnd(id, &out, 4, 0);
    struct msqid_ds status;
    msgctl(id, IPC_STAT, &status);
    printf("msgsnd three messages: %lu queued, %lu bytes\n", (unsigned long)status.msg_qnum, (unsigned long)status.__msg_cbytes);
    struct message in;
    CHECK("msgrcv of type 2", msgrcv(id, &in, sizeof in.text, 2, 0));
    printf("  %ld %s\n", in.type, in.text);
    CHECK("msgrcv of type -3 (lowest first)", msgrcv(id, &in, sizeof in.text, -3, 0));
    printf("  %ld %s\n", in.type, in.text);
    CHECK("msgrcv into 2 bytes", msgrcv(id, &in, 2, 0, 0));
    CHECK("msgrcv into 2 bytes with MSG_NOERROR", msgrcv(id, &in, 2, 0, MSG_NOERROR));
    printf("  %ld %.2s\n", in.type, in.text);
    CHECK("msgrcv of an empty queue with IPC_NOWAIT", msgrcv(id, &in, sizeof in.text, 0, IPC_NOWAIT));
    out = (struct message){5, "five"};
    msgsnd(id, &out, 5, 0);
    CHECK("msgrcv MSG_EXCEPT 5 finds none", msgrcv(id, &in, sizeof in.text, 5, IPC_NOWAIT | MSG_EXCEPT));
    CHECK("msgsnd with type 0", msgsnd(id, &(struct message){0, "x"}, 2, 0));

    pid_t child = fork();
    if (child == 0) {
        usleep(50000);
        struct message late = {9, "late"};
        msgsnd(id, &late, 5, 0);
        _exit(0);
    }
    CHECK("msgrcv waits for another process's message", msgrcv(id, &in, sizeof in.text, 9, 0));
    printf("  %ld %s\n", in.type, in.text);
    waitpid(child, NULL, 0);
    CHECK("IPC_RMID", msgctl(id, IPC_RMID, NULL));
    CHECK("msgsnd to the removed queue", msgsnd(id, &out, 5, 0));
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    segments();
    semaphores();
    queues();
    return 0;
}
