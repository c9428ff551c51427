/*
 * order_audit.h - the graders' ordering audit: what a TODO step's code
 * must say about memory ordering, checked on the student's source file.
 *
 * On x86 an ACQUIRE load, smp_rmb() and smp_wmb() compile to plain moves
 * (the hardware keeps loads in order, and stores in order), so a missing
 * or weakened one changes nothing a test can run into: the compiler may
 * still move code across the spot, but with the models' code it seldom
 * does. A grader can only read what the step says. So an ordering test
 * finds the file that defines one of the step's functions (the grader is
 * built with -g: addr2line names the source line of a function's
 * address), takes the text of one TODO region in it (between
 * "TODO k:" and "END TODO k", comments removed) and checks that
 * the primitive the step needs is there, on the right variable, in the
 * right place. Any spelling of the primitive counts: raw_read_seqcount(),
 * smp_load_acquire(), __atomic_load_n(..., __ATOMIC_ACQUIRE) or
 * atomic_load_explicit(..., memory_order_acquire) for an ACQUIRE load;
 * smp_rmb(), smp_mb() or an acquire (or stronger) fence for a read barrier.
 */
#ifndef ORDER_AUDIT_H
#define ORDER_AUDIT_H

#include <ctype.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define AUDIT_TEXT 16384

struct audit {
	char path[PATH_MAX];
	char code[AUDIT_TEXT];		/* the region, comments blanked */
	char why[PATH_MAX + 128];	/* why the region was not found */
};

/* The source file defining fn, from the grader's debug information. */
static inline bool audit_locate(void *fn, struct audit *a)
{
	Dl_info info;
	char exe[PATH_MAX], cmd[2 * PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	FILE *p;

	if (n <= 0 || !dladdr(fn, &info)) {
		snprintf(a->why, sizeof(a->why), "cannot find the grader's own binary");
		return false;
	}
	exe[n] = '\0';
	snprintf(cmd, sizeof(cmd), "addr2line -e '%s' 0x%lx 2>/dev/null", exe,
		 (unsigned long)((char *)fn - (char *)info.dli_fbase));
	p = popen(cmd, "r");
	if (!p || !fgets(a->path, sizeof(a->path), p)) {
		if (p)
			pclose(p);
		snprintf(a->why, sizeof(a->why), "addr2line (binutils) did not name the source file");
		return false;
	}
	pclose(p);
	char *colon = strrchr(a->path, ':');
	if (colon)
		*colon = '\0';
	if (access(a->path, R_OK) != 0) {
		snprintf(a->why, sizeof(a->why), "cannot read %s", a->path);
		return false;
	}
	return true;
}

/* Region `index` (0 = first) of TODO `step` in the file, comments blanked. */
static inline bool audit_region(struct audit *a, int step, int index)
{
	FILE *f = fopen(a->path, "r");
	char line[1024];
	int seen = 0, inside = 0;
	size_t len = 0;

	if (!f) {
		snprintf(a->why, sizeof(a->why), "cannot open %s", a->path);
		return false;
	}
	a->code[0] = '\0';
	while (fgets(line, sizeof(line), f)) {
		int k;
		char c;

		if (sscanf(line, " /* END TODO %d %c", &k, &c) == 2 && k == step && c == '*') {
			if (inside)
				break;
			continue;
		}
		if (sscanf(line, " /* TODO %d %c", &k, &c) == 2 && k == step && c == ':') {
			if (seen++ == index)
				inside = 1;
			continue;
		}
		if (inside && len + strlen(line) < sizeof(a->code)) {
			strcpy(a->code + len, line);
			len += strlen(line);
		}
	}
	fclose(f);
	if (!inside) {
		snprintf(a->why, sizeof(a->why), "%s has no TODO %d region number %d", a->path, step,
			 index + 1);
		return false;
	}
	/* Blank comments (and strings), so only code is audited. */
	for (char *s = a->code; *s; s++) {
		if (s[0] == '/' && s[1] == '*') {
			char *e = strstr(s + 2, "*/");
			char *stop = e ? e + 2 : s + strlen(s);

			for (; s < stop; s++)
				if (*s != '\n')
					*s = ' ';
			s--;
		} else if (s[0] == '/' && s[1] == '/') {
			for (; *s && *s != '\n'; s++)
				*s = ' ';
			s--;
		} else if (*s == '"') {
			for (s++; *s && *s != '"'; s++)
				*s = ' ';
			if (!*s)
				break;
		}
	}
	return true;
}

static inline bool audit_word_at(const char *code, const char *p, const char *w)
{
	size_t n = strlen(w);

	return (p == code || !(isalnum((unsigned char)p[-1]) || p[-1] == '_')) &&
	       !(isalnum((unsigned char)p[n]) || p[n] == '_');
}

/* Where identifier w first occurs at or after from, or NULL. */
static inline const char *audit_find(const char *code, const char *from, const char *w)
{
	for (const char *p = strstr(from, w); p; p = strstr(p + 1, w))
		if (audit_word_at(code, p, w))
			return p;
	return NULL;
}

static inline int audit_count(const char *code, const char *w)
{
	int n = 0;

	for (const char *p = audit_find(code, code, w); p; p = audit_find(code, p + 1, w))
		n++;
	return n;
}

/* The parenthesised text around p: from the '(' that encloses it to its ')'. */
static inline void audit_enclosing(const char *code, const char *p, const char **b, const char **e)
{
	int depth = 0;
	const char *s;

	for (s = p; s > code; s--) {
		if (*s == ')')
			depth++;
		else if (*s == '(' && depth-- == 0)
			break;
	}
	*b = s;
	for (depth = 0, s = *b; *s; s++) {
		if (*s == '(')
			depth++;
		else if (*s == ')' && --depth == 0)
			break;
	}
	*e = s;
}

/* The call's argument text after name at p: from its '(' to its ')'. */
static inline void audit_args(const char *p, const char **b, const char **e)
{
	int depth = 0;
	const char *s = strchr(p, '(');

	*b = s ? s : p;
	for (; s && *s; s++) {
		if (*s == '(')
			depth++;
		else if (*s == ')' && --depth == 0)
			break;
	}
	*e = s ? s : p;
}

static inline bool audit_span_has(const char *b, const char *e, const char *w)
{
	size_t n = strlen(w);

	for (const char *s = b; s + n <= e; s++)
		if (!strncmp(s, w, n))
			return true;
	return false;
}

/*
 * The first ACQUIRE (or stronger) load whose argument names var, or NULL:
 * raw_read_seqcount(x), smp_load_acquire(x), or a load call with
 * __ATOMIC_ACQUIRE/__ATOMIC_SEQ_CST/memory_order_acquire/memory_order_seq_cst.
 */
static inline const char *audit_acquire_load(const char *code, const char *var)
{
	static const char *const calls[] = { "raw_read_seqcount", "smp_load_acquire",
					     "read_seqcount_begin", "raw_read_seqcount_begin" };
	static const char *const orders[] = { "__ATOMIC_ACQUIRE", "__ATOMIC_SEQ_CST",
					      "memory_order_acquire", "memory_order_seq_cst" };
	const char *best = NULL, *b, *e;

	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++)
		for (const char *p = audit_find(code, code, calls[i]); p;
		     p = audit_find(code, p + 1, calls[i])) {
			audit_args(p, &b, &e);
			if (audit_span_has(b, e, var) && (!best || p < best))
				best = p;
		}
	for (size_t i = 0; i < sizeof(orders) / sizeof(orders[0]); i++)
		for (const char *p = audit_find(code, code, orders[i]); p;
		     p = audit_find(code, p + 1, orders[i])) {
			audit_enclosing(code, p, &b, &e);
			if (audit_span_has(b, e, var) && (!best || b < best))
				best = b;
		}
	return best;
}

/* The first read barrier (smp_rmb, smp_mb, an acquire or stronger fence), or NULL. */
static inline const char *audit_read_barrier(const char *code)
{
	static const char *const bars[] = { "smp_rmb", "smp_mb" };
	static const char *const fences[] = { "atomic_thread_fence", "__atomic_thread_fence" };
	const char *best = NULL, *b, *e;

	for (size_t i = 0; i < 2; i++) {
		const char *p = audit_find(code, code, bars[i]);

		if (p && (!best || p < best))
			best = p;
	}
	for (size_t i = 0; i < 2; i++)
		for (const char *p = audit_find(code, code, fences[i]); p;
		     p = audit_find(code, p + 1, fences[i])) {
			audit_args(p, &b, &e);
			if ((audit_span_has(b, e, "ACQUIRE") || audit_span_has(b, e, "acquire") ||
			     audit_span_has(b, e, "ACQ_REL") || audit_span_has(b, e, "acq_rel") ||
			     audit_span_has(b, e, "SEQ_CST") || audit_span_has(b, e, "seq_cst")) &&
			    (!best || p < best))
				best = p;
		}
	return best;
}

#endif
