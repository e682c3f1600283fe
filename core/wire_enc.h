/*
 * wire_enc.h -- the encoding half of the wire layer: wire_encode_msg,
 * wire_encode_query, wire_encode_reply, wire_encode_compressed and
 * wire_decompress, all declared in wire.h (include that).  This header
 * only exists so that wire_enc.c follows the one-.h-per-.c rule.
 */
#ifndef MT_WIRE_ENC_H
#define MT_WIRE_ENC_H

#include "wire.h"

#endif
