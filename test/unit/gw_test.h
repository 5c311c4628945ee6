/* SPDX-License-Identifier: BSD-3-Clause */
/* gw_test: the one main() every CUnit suite shares. */
#ifndef GW_TEST_H
#define GW_TEST_H

#include <CUnit/Basic.h>
#include <stdlib.h>

struct gw_test_case {
	const char *name;
	void (*fn)(void);
};

/* Run one suite; exits non-zero if any assertion failed. */
static inline int gw_test_run(const char *suite, const struct gw_test_case *cases)
{
	if (CU_initialize_registry() != CUE_SUCCESS)
		return EXIT_FAILURE;
	CU_pSuite s = CU_add_suite(suite, NULL, NULL);
	for (const struct gw_test_case *c = cases; c->name; c++)
		CU_add_test(s, c->name, c->fn);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	unsigned failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
	CU_cleanup_registry();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
