/*
 * test_device.c - conversions from verbs port attributes (speed, width,
 * MTU, GID type names), pinned without a device.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "engine/transport/device_int.h"
#include "engine/engine.h"

#include <infiniband/verbs.h>

static void test_width_codes_map_to_lanes(void **state)
{
	(void)state;
	assert_int_equal(eng__width_lanes(1), 1);
	assert_int_equal(eng__width_lanes(2), 4);
	assert_int_equal(eng__width_lanes(4), 8);
	assert_int_equal(eng__width_lanes(8), 12);
	assert_int_equal(eng__width_lanes(16), 2);
	assert_int_equal(eng__width_lanes(0), 0);
	assert_int_equal(eng__width_lanes(3), 0);
}

static void test_speed_codes_map_to_lane_rates(void **state)
{
	(void)state;
	assert_true(eng__lane_gbps(1) == 2.5);	   /* SDR */
	assert_true(eng__lane_gbps(2) == 5.0);	   /* DDR */
	assert_true(eng__lane_gbps(4) == 10.0);	   /* QDR */
	assert_true(eng__lane_gbps(8) == 10.0);	   /* FDR10 */
	assert_true(eng__lane_gbps(16) == 14.0);   /* FDR */
	assert_true(eng__lane_gbps(32) == 25.0);   /* EDR */
	assert_true(eng__lane_gbps(64) == 50.0);   /* HDR */
	assert_true(eng__lane_gbps(128) == 100.0); /* NDR */
	assert_true(eng__lane_gbps(0) == 0.0);
	assert_true(eng__lane_gbps(3) == 0.0);
}

static void test_hdr_4x_and_ndr_4x_are_200_and_400(void **state)
{
	(void)state;
	assert_true(eng__width_lanes(2) * eng__lane_gbps(64) == 200.0);
	assert_true(eng__width_lanes(2) * eng__lane_gbps(128) == 400.0);
}

static void test_mtu_enum_maps_to_bytes(void **state)
{
	(void)state;
	assert_int_equal(eng__mtu_bytes(IBV_MTU_256), 256);
	assert_int_equal(eng__mtu_bytes(IBV_MTU_1024), 1024);
	assert_int_equal(eng__mtu_bytes(IBV_MTU_4096), 4096);
	assert_int_equal(eng__mtu_bytes(0), 0);
	assert_int_equal(eng__mtu_bytes(6), 0);
}

static void test_gid_type_names(void **state)
{
	(void)state;
	assert_string_equal(eng_gid_type_str(ENG_GID_IB), "IB");
	assert_string_equal(eng_gid_type_str(ENG_GID_ROCE_V1), "RoCE v1");
	assert_string_equal(eng_gid_type_str(ENG_GID_ROCE_V2), "RoCE v2");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_width_codes_map_to_lanes),
		cmocka_unit_test(test_speed_codes_map_to_lane_rates),
		cmocka_unit_test(test_hdr_4x_and_ndr_4x_are_200_and_400),
		cmocka_unit_test(test_mtu_enum_maps_to_bytes),
		cmocka_unit_test(test_gid_type_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
