#!/usr/bin/python3
"""trace_indep.py -- an independent reader of the mtrace trace format,
written from docs/trace-format.md alone (no mtrace code): the `zstd` CLI
decompresses the data frames (it skips skippable frames), this script walks
the records and the seek index at the end of the file.

Usage: trace_indep.py TRACE.zst
Prints one JSON object: record counts per type, messages per direction,
the header fields, the TLS handshake records, the end record, the index
summary.  Exit 0 if the file
is well formed per the document, 1 with a message otherwise.
"""
import json
import struct
import subprocess
import sys
import zlib

MAGIC = b"MTRC\r\n\x1a\n"
INDEX_MAGIC = 0x184D2A5E
CRC_MAGIC = 0x184D2A5C
CRC_LEN = 16
FOOTER_MAGIC = 0x5849544D
ZSTD_MAGIC = 0xFD2FB528


def fail(msg):
    print("trace_indep: " + msg, file=sys.stderr)
    sys.exit(1)


def string(b, o):
    (n,) = struct.unpack_from("<H", b, o)
    return b[o + 2:o + 2 + n].decode("utf-8"), o + 2 + n


def records(content):
    o = 0
    while o < len(content):
        typ, n = struct.unpack_from("<BI", content, o)
        yield typ, content[o + 5:o + 5 + n]
        o += 5 + n
    if o != len(content):
        fail("record overruns the content")


def index(raw):
    n, version, magic = struct.unpack_from("<III", raw, len(raw) - 12)
    if magic != FOOTER_MAGIC:
        fail("no footer magic")
    size = 20 * n + 12
    start = len(raw) - size - 8
    fmagic, fsize = struct.unpack_from("<II", raw, start)
    if fmagic != INDEX_MAGIC or fsize != size:
        fail("index frame header")
    off, frames = 0, []
    for i in range(n):
        c, d, t, k = struct.unpack_from("<IIQI", raw, start + 8 + 20 * i)
        if struct.unpack_from("<I", raw, off)[0] != ZSTD_MAGIC:
            fail("index entry %d does not point at a zstd frame" % i)
        if version >= 2:  # the data frame, then its checksum frame
            if c < CRC_LEN:
                fail("index entry %d shorter than a checksum frame" % i)
            z = c - CRC_LEN
            m, sz, crc, ln = struct.unpack_from("<IIII", raw, off + z)
            if m != CRC_MAGIC or sz != 8 or ln != z:
                fail("frame %d: no checksum frame after it" % i)
            if zlib.crc32(raw[off:off + z]) != crc:
                fail("frame %d: CRC-32 mismatch" % i)
        frames.append((off, c, d, t, k))
        off += c
    if off != start:
        fail("index sizes do not add up to the index offset")
    return version, frames


def main():
    path = sys.argv[1]
    raw = open(path, "rb").read()
    content = subprocess.run(["zstd", "-dcq", path], check=True,
                             stdout=subprocess.PIPE).stdout
    if content[5:13] != MAGIC or content[0] != 1:
        fail("no header record with the magic first")
    out = {"types": {}, "c2s": 0, "s2c": 0}
    for typ, p in records(content):
        out["types"][typ] = out["types"].get(typ, 0) + 1
        if typ == 1:
            ver, src, prec, wall, mono = struct.unpack_from("<HBIQQ", p, 8)
            tool, o = string(p, 31)
            desc, o = string(p, o)
            out["header"] = {"version": ver, "source": src, "prec": prec,
                             "start_mono_ns": mono, "tool": tool,
                             "desc": desc}
        elif typ == 3:
            conn, t, d, flags, wl = struct.unpack_from("<QQBII", p, 0)
            (pl,) = struct.unpack_from("<I", p, 25 + wl)
            if 29 + wl + pl > len(p):
                fail("message lengths overrun the record")
            (mlen,) = struct.unpack_from("<i", p, 25)
            if flags == 0 and mlen != wl:
                fail("messageLength %d != recorded %d" % (mlen, wl))
            out["c2s" if d == 0 else "s2c"] += 1
        elif typ == 6:
            t, n = struct.unpack_from("<QQ", p, 0)
            out["end"] = {"t_ns": t, "records": n}
        elif typ == 7:
            conn, t, leg, hs, flags = struct.unpack_from("<QQBQB", p, 0)
            tls = {"conn": conn, "t_ns": t, "leg": leg, "handshake_ns": hs,
                   "flags": flags}
            o = 26
            for name in ("version", "cipher", "group", "sni", "error"):
                tls[name], o = string(p, o)
            if o > len(p):
                fail("tls record strings overrun the record")
            out.setdefault("tls", []).append(tls)
    version, frames = index(raw)
    out["index"] = {"version": version, "frames": len(frames),
                    "records": sum(f[4] for f in frames),
                    "decompressed": sum(f[2] for f in frames)}
    if out["index"]["decompressed"] != len(content):
        fail("index decompressed sizes != content length")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
