/*
 * Shared helpers for the in-guest experiment programs (see mmlocks_guest.h):
 * what a program prints. One JSON record per line on stdout, messages on
 * stderr. mmlocks_guest.c talks to the kernel (files, knobs and their
 * restoration, processes, time, CPUs); mg_measure.c has options, statistics,
 * the mmap writer and layouts.
 */
#define _GNU_SOURCE
#include "mmlocks_guest.h"

#include <errno.h>
#include <math.h> /* isfinite, NAN: macros, no libm needed */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- JSON ------------------------------------------------------------- */

static void mgj_raw(struct mg_json *j, const char *s)
{
	size_t n = strlen(s);

	/* Leave room for the closing "}\n"; a record never gets this long. */
	if (j->len + n + 3 > sizeof(j->buf))
		n = sizeof(j->buf) - j->len - 3;
	memcpy(j->buf + j->len, s, n);
	j->len += n;
	j->buf[j->len] = '\0';
}

static void mgj_quoted(struct mg_json *j, const char *s)
{
	char esc[8];

	mgj_raw(j, "\"");
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)c;
			esc[2] = '\0';
		} else if (c < 0x20) {
			snprintf(esc, sizeof(esc), "\\u%04x", c);
		} else {
			esc[0] = (char)c;
			esc[1] = '\0';
		}
		mgj_raw(j, esc);
	}
	mgj_raw(j, "\"");
}

static void mgj_key(struct mg_json *j, const char *key)
{
	if (!j->first)
		mgj_raw(j, ",");
	j->first = false;
	mgj_quoted(j, key);
	mgj_raw(j, ":");
}

void mgj_start(struct mg_json *j, const char *type, const char *experiment)
{
	j->len = 0;
	j->buf[0] = '\0';
	j->first = true;
	mgj_raw(j, "{");
	mgj_str(j, "type", type);
	if (experiment)
		mgj_str(j, "experiment", experiment);
}

void mgj_str(struct mg_json *j, const char *key, const char *val)
{
	mgj_key(j, key);
	if (val)
		mgj_quoted(j, val);
	else
		mgj_raw(j, "null");
}

void mgj_int(struct mg_json *j, const char *key, long long val)
{
	char num[32];

	snprintf(num, sizeof(num), "%lld", val);
	mgj_key(j, key);
	mgj_raw(j, num);
}

void mgj_num(struct mg_json *j, const char *key, double val)
{
	char num[48];

	mgj_key(j, key);
	if (!isfinite(val)) {
		mgj_raw(j, "null");
		return;
	}
	/* Counts stay exact; measurements keep six significant digits. */
	if (val > -1e15 && val < 1e15 && (double)(long long)val == val)
		snprintf(num, sizeof(num), "%.0f", val);
	else
		snprintf(num, sizeof(num), "%.6g", val);
	mgj_raw(j, num);
}

void mgj_bool(struct mg_json *j, const char *key, bool val)
{
	mgj_key(j, key);
	mgj_raw(j, val ? "true" : "false");
}

void mgj_null(struct mg_json *j, const char *key)
{
	mgj_key(j, key);
	mgj_raw(j, "null");
}

void mgj_num_array(struct mg_json *j, const char *key, const uint64_t *v, size_t n, double div)
{
	char num[48];

	mgj_key(j, key);
	mgj_raw(j, "[");
	for (size_t i = 0; i < n; i++) {
		snprintf(num, sizeof(num), "%s%.6g", i ? "," : "", (double)v[i] / div);
		mgj_raw(j, num);
	}
	mgj_raw(j, "]");
}

void mgj_emit(struct mg_json *j)
{
	size_t off = 0;

	memcpy(j->buf + j->len, "}\n", 3);
	j->len += 2;
	fflush(stdout);
	while (off < j->len) {
		ssize_t w = write(STDOUT_FILENO, j->buf + off, j->len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		off += (size_t)w;
	}
}

void mg_error(const char *experiment, const char *fmt, ...)
{
	struct mg_json j;
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s: error: %s\n", program_invocation_short_name, msg);
	mgj_start(&j, "error", experiment);
	mgj_str(&j, "msg", msg);
	mgj_emit(&j);
}

void mg_test_record(const char *experiment, const char *name, bool pass,
		    const char *fmt, ...)
{
	struct mg_json j;
	char reason[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	mgj_start(&j, "test", experiment);
	mgj_str(&j, "name", name);
	mgj_bool(&j, "pass", pass);
	mgj_str(&j, "reason", reason);
	mgj_emit(&j);
}

void mg_log(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", program_invocation_short_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
