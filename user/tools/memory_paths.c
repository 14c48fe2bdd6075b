/*
 * The memory hot paths in one run: fork + exit + wait (300), fork + exec
 * of /bin/true + wait (100), demand-zero faults (20 x 4 MiB, one write a
 * page) and 4 KiB pipe write + read (2,000), each as time per operation.
 * For `cargo xtask exec --icount --smp 1 [--linux] -- memory_paths`
 * (deterministic guest time) and `cargo xtask profile`; see
 * docs/benchmarks.md "The frame record's cost".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec/1e9;}
int main(void){
  double a=now();
  for(int i=0;i<300;i++){pid_t p=fork(); if(p==0){_exit(0);} waitpid(p,0,0);}
  double b=now();
  for(int i=0;i<100;i++){pid_t p=fork(); if(p==0){execl("/bin/true","true",(char*)0);_exit(1);} waitpid(p,0,0);}
  double c=now();
  for(int r=0;r<20;r++){char *m=mmap(0,4<<20,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS,-1,0); for(int i=0;i<(4<<20);i+=4096)m[i]=1; munmap(m,4<<20);}
  double d=now();
  char buf[65536]; int fd[2]; pipe(fd); memset(buf,1,sizeof buf);
  for(int i=0;i<2000;i++){write(fd[1],buf,4096);read(fd[0],buf,4096);}
  double e=now();
  printf("fork+exit %.1f us, fork+exec %.1f us, fault %.2f us/page, pipe 4k %.2f us\n",(b-a)/300*1e6,(c-b)/100*1e6,(d-c)/(20*1024)*1e6,(e-d)/2000*1e6);
  return 0;}
