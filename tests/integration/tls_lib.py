"""tls_lib.py -- throwaway TLS material and TLS peers for the TLS tests
(test_capture_tls.py, test_replay_tls.sh).  Run under /usr/bin/python3.

    certs = make_certs(dirpath)   # CA, server and client certs (openssl CLI)
    port = start_socat_tls(env, certs["server_pem"], upstream_port)
    sock = late_finished_client(port, certs["ca"], payload, hold_s)

make_certs writes, with the openssl command-line tool:
  ca.pem / ca.key              the test CA
  server.pem                   server cert + key, signed by the CA,
                               SAN IP:127.0.0.1 and DNS:localhost
  server.crt / server.key      the same, in two files
  client.pem                   client cert + key, signed by the CA
  other_ca.pem, other_server.pem  another CA and a server cert it signed
                               (for "not trusted" cases)
Also runnable: `tls_lib.py DIR` prints the JSON of the paths.
"""
import json
import os
import socket
import ssl
import subprocess
import sys
import time


def _run(args, cwd):
    r = subprocess.run(["openssl"] + args, cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("openssl %s failed: %s" % (" ".join(args), r.stderr[-800:]))


def _ca(d, name, cn):
    _run(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", name + ".key",
          "-out", name + ".pem", "-days", "2", "-subj", "/CN=" + cn], d)


def _leaf(d, name, ca, cn, ext):
    with open(os.path.join(d, name + ".ext"), "w") as f:
        f.write(ext)
    _run(["req", "-newkey", "rsa:2048", "-nodes", "-keyout", name + ".key",
          "-out", name + ".csr", "-subj", "/CN=" + cn], d)
    _run(["x509", "-req", "-in", name + ".csr", "-CA", ca + ".pem", "-CAkey", ca + ".key",
          "-CAcreateserial", "-out", name + ".crt", "-days", "2", "-extfile", name + ".ext"], d)
    with open(os.path.join(d, name + ".pem"), "w") as out:
        for part in (".crt", ".key"):
            with open(os.path.join(d, name + part)) as f:
                out.write(f.read())


def make_certs(d):
    """Writes the CA and certificates into directory d; returns their paths."""
    _ca(d, "ca", "mtrace test CA")
    _ca(d, "other_ca", "mtrace other CA")
    server_ext = ("subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n"
                  "keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n")
    client_ext = ("basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n"
                  "extendedKeyUsage=clientAuth\n")
    _leaf(d, "server", "ca", "localhost", server_ext)
    _leaf(d, "client", "ca", "mtrace test client", client_ext)
    _leaf(d, "other_server", "other_ca", "localhost", server_ext)
    p = lambda n: os.path.join(d, n)  # noqa: E731
    return {"dir": d, "ca": p("ca.pem"), "server_pem": p("server.pem"),
            "server_crt": p("server.crt"), "server_key": p("server.key"),
            "client_pem": p("client.pem"), "other_ca": p("other_ca.pem"),
            "other_server_pem": p("other_server.pem")}


def wait_socat_listening(proc, errpath, limit=10):
    """Waits until socat (run with -d -d) logs its "listening on" line to
    errpath, the readiness every harness waits for: a probe connection
    would be a failed handshake of its own."""
    deadline = time.time() + limit
    while time.time() < deadline:
        with open(errpath) as f:
            if "listening on" in f.read():
                return
        if proc.poll() is not None:
            with open(errpath) as f:
                raise RuntimeError("socat exited before listening: %s" % f.read()[-800:])
        time.sleep(0.02)
    raise RuntimeError("socat did not say it listens after %d s" % limit)


def start_socat_tls(env, cert_pem, upstream_port, port=None, client_ca=None):
    """A TLS front (socat OPENSSL-LISTEN, certificate cert_pem; with
    client_ca, a client certificate of that CA is required) for the plain
    server on upstream_port, started through env.spawn (killed with env);
    returns its port."""
    from capture_lib import free_port
    port = port or free_port()
    verify = "verify=1,cafile=%s" % client_ca if client_ca else "verify=0"
    errpath = env.path("socat.%d.log" % port)
    with open(errpath, "w") as errf:
        p = env.spawn(["socat", "-d", "-d",
                       "OPENSSL-LISTEN:%d,bind=127.0.0.1,reuseaddr,fork,cert=%s,%s"
                       % (port, cert_pem, verify), "TCP:127.0.0.1:%d" % upstream_port],
                      stdout=subprocess.DEVNULL, stderr=errf)
    wait_socat_listening(p, errpath)
    return port


def late_finished_client(port, ca, payload, hold_s):
    """A TLS client of 127.0.0.1:port (trusting ca, SNI localhost) that
    runs its handshake up to its last flight, then holds that flight (its
    Finished) for hold_s seconds and sends it together with payload (bytes
    sent as application data).  A proxy finishing the client's handshake
    that late has long finished its own with the target, and reads the
    target's answer after the client's payload.  Returns the connected
    socket (the TLS session itself is not used further)."""
    ctx = ssl.create_default_context(cafile=ca)
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(inc, out, server_hostname="localhost")
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(10)
    while True:
        try:
            obj.do_handshake()
            break
        except ssl.SSLWantReadError:
            if out.pending:
                s.sendall(out.read())
            chunk = s.recv(65536)
            if not chunk:
                raise RuntimeError("the server closed during the handshake")
            inc.write(chunk)
    obj.write(payload)
    time.sleep(hold_s)
    s.sendall(out.read())
    return s


def client_hello():
    """The bytes of a real TLS ClientHello (Python's ssl, in memory)."""
    ctx = ssl.create_default_context()
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(inc, out, server_hostname="localhost")
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return out.read()


if __name__ == "__main__":
    print(json.dumps(make_certs(sys.argv[1])))
