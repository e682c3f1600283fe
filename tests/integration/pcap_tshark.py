#!/usr/bin/python3
"""pcap_tshark.py -- count the MongoDB messages in a capture two ways.

    pcap_tshark.py tshark PCAP PORT     what tshark's mongo dissector finds
    pcap_tshark.py listing LISTING      what mtrace wrote (pcap_tracecount output)

Both print sorted "KEY COUNT" lines, KEY = "<opcode>[/<original opcode>]
<name>": name is the first key of an OP_MSG kind-0 body (after
decompression), the namespace of an OP_QUERY, else "-".  The test diffs the
two.  tshark is run with -d tcp.port==PORT,mongo (its own port heuristics
would take some MongoDB traffic for TLS), out-of-order reassembly on, and
-T json; the JSON repeats keys,
so it is read as lists of pairs.
"""
import collections
import json
import subprocess
import sys


def pairs_hook(p):
    return p


def values(pairs, key):
    return [v for k, v in pairs if k == key] if isinstance(pairs, list) else []


def first(pairs, key):
    v = values(pairs, key)
    return v[0] if v else None


def msg_name(mongo):
    for sec in values(mongo, "mongo.msg.sections.section"):
        if first(sec, "mongo.msg.sections.section.kind") != "0":
            continue
        body = first(sec, "mongo.msg.sections.section.body")
        elems = first(body, "mongo.elements")
        name = first(elems, "mongo.element.name")
        return name if name is not None else "-"
    return "-"


def tshark_keys(pcap, port):
    out = subprocess.run(
        ["tshark", "-o", "tcp.reassemble_out_of_order:TRUE",
         "-r", pcap, "-d", "tcp.port==%s,mongo" % port,
         "-Y", "mongo", "-T", "json"],
        check=True, capture_output=True, text=True).stdout
    keys = []
    for pkt in json.loads(out or "[]", object_pairs_hook=pairs_hook):
        layers = first(first(pkt, "_source"), "layers")
        for mongo in values(layers, "mongo"):
            op = first(mongo, "mongo.opcode")
            inner = op
            comp = first(mongo, "mongo.compression")
            if comp is not None:
                inner = first(comp, "mongo.compression.original_opcode")
                op = "%s/%s" % (op, inner)
            name = "-"
            if inner == "2013":
                name = msg_name(mongo)
            elif inner == "2004":
                name = first(mongo, "mongo.full_collection_name") or "-"
            keys.append("%s %s" % (op, name))
    return keys


def listing_keys(path):
    keys = []
    with open(path) as f:
        for line in f:
            w = line.split()
            if w and w[0] == "msg":
                keys.append("%s %s" % (w[3], w[4]))
    return keys


def main():
    if sys.argv[1] == "tshark":
        keys = tshark_keys(sys.argv[2], sys.argv[3])
    else:
        keys = listing_keys(sys.argv[2])
    for k, n in sorted(collections.Counter(keys).items()):
        print(k, n)


if __name__ == "__main__":
    main()
