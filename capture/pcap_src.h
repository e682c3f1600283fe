/*
 * pcap_src.h -- what libpcap does not tell: the native timestamp precision
 * of a capture file (pcap magic, or the pcapng interface's if_tsresol).
 */
#ifndef MT_PCAP_SRC_H
#define MT_PCAP_SRC_H

#include <stddef.h>
#include <stdint.h>

/*
 * Native timestamp resolution in nanoseconds of the capture file whose
 * first bytes are p[0..n): 1 for nanosecond pcap or pcapng if_tsresol 9,
 * 1000 for microsecond files (and the pcapng default).  Bounded parse of the
 * magic and the first interface description block; unknown -> 1000.
 */
uint32_t pcap_src_precision_ns(const uint8_t *p, size_t n);

#endif
