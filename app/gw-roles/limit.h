/* SPDX-License-Identifier: BSD-3-Clause */
/* gw-roles' limit role (limit.c): messages moved between two cores by
 * memcpy alone, the floor under any gateway pair on this machine. */
#ifndef GW_ROLES_LIMIT_H
#define GW_ROLES_LIMIT_H

#include <stdint.h>

/* Move messages of size bytes in frames of payload_max bytes from CPU 0 to
 * CPU 1: how many, in how many frames, in how long (the receiving core's
 * time). 0, or -1 when the threads could not start. */
int limit_run(unsigned size, unsigned payload_max, uint64_t *msgs, uint64_t *frames, uint64_t *ns);

#endif
