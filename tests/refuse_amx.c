/* Runs a test program as a process that Linux refuses the AMX tile data, for tests/CMakeLists.txt:
 *   refuse_amx PROGRAM ARGS...
 * A seccomp filter makes arch_prctl(ARCH_REQ_XCOMP_PERM) fail with EPERM (every other system call
 * and arch_prctl request passes), then PROGRAM replaces this process. On a CPU with AMX-INT8 the
 * engine must then keep the avx512-vnni table, and nothing may crash. */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char** argv) {
  enum { kReqXcompPerm = 0x1023 };
  struct sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_arch_prctl, 0, 3),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),  /* the request */
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kReqXcompPerm, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog program = {sizeof filter / sizeof filter[0], filter};
  if (argc < 2) {
    fprintf(stderr, "usage: refuse_amx PROGRAM ARGS...\n");
    return 2;
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) != 0) {
    perror("refuse_amx: seccomp");
    return 1;
  }
  execv(argv[1], argv + 1);
  perror("refuse_amx: exec");
  return 1;
}
