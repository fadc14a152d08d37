/*
 * device_int.h - conversions from verbs port attributes and the listing
 * the process keeps, private to engine/transport/ and exposed here so unit
 * tests can pin them without a device.
 */
#ifndef RAILCP_ENGINE_DEVICE_INT_H
#define RAILCP_ENGINE_DEVICE_INT_H

#if !defined(ENG_LAYER_TRANSPORT) && !defined(RAILCP_TESTS)
#error "engine/transport/device_int.h is private to engine/transport/ and the tests"
#endif

#include <stdint.h>

/* Lanes for an ibv_port_attr.active_width code; 0 if the code is unknown. */
unsigned eng__width_lanes(uint8_t active_width);

/*
 * Data rate of one lane in Gb/s for an ibv_port_attr.active_speed code
 * (SDR 2.5 ... XDR 200); 0 if the code is unknown.
 */
double eng__lane_gbps(uint8_t active_speed);

/* Bytes for an enum ibv_mtu value; 0 if unknown. */
unsigned eng__mtu_bytes(int mtu);

struct eng_device_list;

/*
 * A copy of this process's last listing of /sys (eng_device_list_create), or
 * a new listing when there is none: the listing the plan was made from, so
 * a session reads its rails' addresses without opening every device again.
 * Thread-safe. Free it with eng_device_list_destroy.
 */
int eng__device_list_kept(struct eng_device_list **list_out);

#endif
