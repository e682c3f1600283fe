"""hello_hold.py PORT N SECS AWAIT_MS -- N connections to a replay server,
each in awaitable hello (streaming SDAM without exhaust): the first hello
learns the server's topologyVersion, then each connection keeps one
`hello {topologyVersion, maxAwaitTimeMS}` in flight, which the server holds
for AWAIT_MS.  After SECS no new hello is sent and every outstanding one is
waited for.  Prints one line:

    hello_hold conns=N sent=S received=R errors=E held_checked=H

held_checked counts replies that came back no sooner than AWAIT_MS/2 (the
server really held them).  Exit 0 when sent == received and errors == 0.
"""
import selectors
import socket
import struct
import sys
import time

import bson


def msg(rid, doc):
    body = bson.encode(doc)
    return struct.pack("<iiiiIB", 16 + 5 + len(body), rid, 0, 2013, 0, 0) + body


def main():
    port, n, secs, await_ms = (int(sys.argv[1]), int(sys.argv[2]),
                               float(sys.argv[3]), int(sys.argv[4]))
    sel = selectors.DefaultSelector()
    conns = []
    for i in range(n):
        s = socket.create_connection(("127.0.0.1", port))
        s.setblocking(False)
        st = {"sock": s, "buf": b"", "tv": None, "rid": 0, "sent_at": 0.0,
              "busy": False}
        conns.append(st)
        sel.register(s, selectors.EVENT_READ, st)
    sent = received = errors = held = 0
    t_end = time.time() + secs

    def send(st, doc):
        nonlocal sent
        st["rid"] += 1
        st["sock"].sendall(msg(st["rid"], doc))  # small: fits the buffer
        st["sent_at"] = time.time()
        st["busy"] = True
        sent += 1

    for st in conns:
        send(st, {"hello": 1, "$db": "admin"})
    while True:
        if time.time() >= t_end and not any(c["busy"] for c in conns):
            break
        if time.time() > t_end + await_ms / 1000.0 + 10:
            break
        for key, _ in sel.select(timeout=0.5):
            st = key.data
            try:
                chunk = st["sock"].recv(65536)
            except BlockingIOError:
                continue
            if not chunk:
                errors += 1
                sel.unregister(st["sock"])
                st["busy"] = False
                continue
            st["buf"] += chunk
            while len(st["buf"]) >= 4:
                (ln,) = struct.unpack("<i", st["buf"][:4])
                if len(st["buf"]) < ln:
                    break
                m, st["buf"] = st["buf"][:ln], st["buf"][ln:]
                received += 1
                st["busy"] = False
                reply = bson.decode(m[21:])
                if st["tv"] is not None and \
                        time.time() - st["sent_at"] >= await_ms / 2000.0:
                    held += 1
                if "topologyVersion" not in reply:
                    errors += 1
                    continue
                st["tv"] = reply["topologyVersion"]
                if time.time() < t_end:
                    send(st, {"hello": 1, "topologyVersion": st["tv"],
                              "maxAwaitTimeMS": await_ms, "$db": "admin"})
    for st in conns:
        st["sock"].close()
    print("hello_hold conns=%d sent=%d received=%d errors=%d held_checked=%d"
          % (n, sent, received, errors, held), flush=True)
    return 0 if sent == received and errors == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
