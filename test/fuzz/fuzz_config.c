/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_config: what an operator types. The input is a config file, then
 * NUL, then up to 8 --set overrides separated by NUL:
 *
 *   FILE \0 section.key=value \0 section.key=value ...
 *
 * gw_config_load reads the file (from a memfd, as a path) with the
 * drivers' member checks, as gridwired does. Whatever the bytes:
 *  - the answer is 0 or a negative errno;
 *  - a refusal says why in one line (no newline, NUL-terminated, not empty);
 *  - an accepted config is within the ranges gridwired relies on
 *    (MTU, window, ring, members, lcores);
 *  - loading an accepted one again gives the same config, byte for byte
 *    (nothing read uninitialised, nothing carried over from the last load).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gw_config.h"
#include "gw_port.h"

#define FZ_SETS 8

#define CHECK(c)                                                                           \
	do {                                                                               \
		if (!(c)) {                                                                \
			fprintf(stderr, "fuzz_config: check failed at line %d: %s\n",      \
				__LINE__, #c);                                             \
			abort();                                                           \
		}                                                                          \
	} while (0)

static int fd = -1;
static char path[64];
static struct gw_config a, b;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fd = memfd_create("fuzz_config.ini", 0);
	if (fd < 0)
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	return 0;
}

static int load(struct gw_config *cfg, char *const *sets, unsigned nsets, char *err, size_t len)
{
	memset(cfg, 0xa5, sizeof(*cfg)); /* whatever the caller's memory held */
	return gw_config_load(cfg, path, sets, nsets, gw_port_check_member, err, len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char buf[1 << 16];
	if (size >= sizeof(buf))
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	size_t flen = strlen(buf); /* the file: up to the first NUL */
	char *sets[FZ_SETS];
	unsigned n = 0;
	for (size_t at = flen + 1; at <= size && n < FZ_SETS; at += strlen(buf + at) + 1)
		sets[n++] = buf + at;

	if (ftruncate(fd, 0) || pwrite(fd, buf, flen, 0) != (ssize_t)flen)
		abort();
	char err[256], err2[256];
	int rc = load(&a, sets, n, err, sizeof(err));
	CHECK(rc == 0 || (rc < 0 && rc > -4096));
	if (rc < 0) {
		if (!memchr(err, '\0', sizeof(err)) || !err[0] || strchr(err, '\n'))
			fprintf(stderr, "fuzz_config: refused (%d) with: \"%.*s\"\n", rc,
				(int)sizeof(err), err);
		CHECK(memchr(err, '\0', sizeof(err)) && err[0] && !strchr(err, '\n'));
	} else {
		CHECK(a.mtu >= 1500 && a.mtu <= 9000);
		CHECK(a.window && a.window <= 256 && !(a.window & (a.window - 1)));
		CHECK(a.ring_count && !(a.ring_count & (a.ring_count - 1)));
		CHECK(a.nmembers >= 1 && a.nmembers <= GW_CONFIG_MAX_MEMBERS);
		CHECK(a.workers <= GW_CONFIG_MAX_WORKERS);
		CHECK(gw_config_payload_max(&a) < a.mtu);
	}
	if (rc == 0) {
		CHECK(load(&b, sets, n, err2, sizeof(err2)) == 0);
		CHECK(memcmp(&a, &b, sizeof(a)) == 0);
	}
	return 0;
}
