/*
 * device_int.h - conversions from verbs port attributes, private to
 * engine/transport/ and exposed here so unit tests can pin them without a
 * device.
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

#endif
