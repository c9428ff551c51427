/* remote_stress's checks: is what an access returned allowed, do cmdline and environ read as ours, and the quiet-target comparison of both switch positions. */
#ifndef REMOTE_STRESS_CHECK_H
#define REMOTE_STRESS_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define EXP "remote-stress"
#define KNOB MG_KNOBS "/access_remote_vm_vma_lock"

/* Tallies kept by judge() (atomic adds), and the first failure, described. */
extern unsigned long long n_eio, n_short, n_bad;
extern char bad_msg[256];
/* Record a failure: counted, and described if it is the first. */
void bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

bool judge(const char *who, unsigned long addr, size_t len, bool whole, ssize_t n, int err,
	   const unsigned char *buf);

/* Our own cmdline and environ, which a forked target shares; read at start. */
#define ARGS_MAX 65536
int read_self_args(void);
/* The target's cmdline and environ read as ours, or as empty (it is gone); buf: ARGS_MAX bytes. */
bool read_args(pid_t pid, char *buf);

enum { C_VMA, C_MMAP, C_FALLBACK, C_NOVMA, C_SPAN, C_PFNMAP, C_PAGE, C_NR };
extern const char *const counters[C_NR];
int read_counters(long long *v);

/* Our [vvar] (VM_IO | VM_PFNMAP), the same in a fork; 0 if none. */
unsigned long find_vvar(void);
/* Spawn a quiet target, compare switch positions 0 and 1 on fixed probes; emits a check record. */
bool quiet_check(unsigned long vvar);

#endif
