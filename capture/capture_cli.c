/*
 * capture_cli.c -- `mtrace capture`: option parsing for both capture modes.
 *
 *   proxy:  mtrace capture [--listen H:P] [--target H:P] -o OUT [--delay-ms X]
 *                          [--max-conns N] [--threads N] [--rt-prio N]
 *                          [--cpu-dma-latency US] [--quiet] [--force]
 *   pcap:   mtrace capture --pcap FILE [--port N]... [--filter BPF] -o OUT
 *   live:   mtrace capture --iface IF [--port N]... [--filter BPF]
 *                          [--duration S] [--count N]
 *                          [--cpu-dma-latency US] -o OUT
 *
 * The proxy runs in capture/proxy.c, pcap and live capture in
 * capture/sniff.c.  SIGINT/SIGTERM end either cleanly.  Exit status: 0
 * success, 1 runtime failure, 2 bad usage (each with a one-line message).
 */
#include "capture_cli.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <netdb.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <pcap/pcap.h>

#include "core/addr.h"
#include "core/err.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/pmqos.h"
#include "core/sched.h"
#include "core/trace.h"
#include "core/wire.h"
#include "proxy.h"
#include "recdir.h"
#include "sniff.h"

#define CLI_DELAY_MS_MAX 3600000.0 /* one hour */
#define CLI_CONNS_MAX 1000000u

static void
capture_usage(FILE *out)
{
    fprintf(
        out,
        "usage: mtrace capture [--listen HOST:PORT] [--target HOST:PORT] -o "
        "OUT.zst\n"
        "                      [--delay-ms X] [--max-conns N] [--threads N] "
        "[--quiet] [--force]\n"
        "                      [--spin-us N|auto] [--rt-prio N] "
        "[--idle-timeout-s S]\n"
        "                      [--msg-timeout-s S] [--max-msg-bytes N] "
        "[--queue-mb M] [--pin-loops]\n"
        "                      [--batch-loops]\n"
        "                      [--tls-cert FILE [--tls-key FILE] [--tls-ca "
        "FILE]]\n"
        "                      [--target-tls [--target-tls-ca FILE | "
        "--target-tls-insecure]\n"
        "                      [--target-tls-cert FILE]]\n"
        "                      [--zstd-level L] [--cpu-dma-latency US] "
        "[--redact [FIELD]]...\n"
        "       mtrace capture --pcap FILE [--port N]... [--filter BPF] -o "
        "OUT.zst\n"
        "                      [--zstd-level L] [--redact [FIELD]]... "
        "[--quiet] [--force]\n"
        "       mtrace capture --iface IF [--port N]... [--filter BPF] "
        "[--duration S]\n"
        "                      [--count N] [--buffer-mb M] -o OUT.zst\n"
        "                      [--zstd-level L] [--cpu-dma-latency US] "
        "[--redact [FIELD]]...\n"
        "                      [--quiet] [--force]\n"
        "       mtrace capture --recording DIR|FILE -o OUT.zst [--zstd-level "
        "L]\n"
        "                      [--redact [FIELD]]... [--quiet] [--force]\n"
        "\n"
        "Records MongoDB wire traffic into a zstd trace (read it with mtrace "
        "dump).\n"
        "\n"
        "Proxy mode (default): clients connect to --listen, mtrace connects "
        "each one to\n"
        "--target and forwards bytes both ways unchanged as they arrive, "
        "recording every\n"
        "complete message with the nanosecond time its last byte arrived.\n"
        "  --listen HOST:PORT  address to accept clients on (default "
        "127.0.0.1:28017;\n"
        "                      port 0 picks a free port, logged at start)\n"
        "  --target HOST:PORT  the MongoDB server (default 127.0.0.1:27017)\n"
        "  --delay-ms X        hold each server reply until X ms (fractional "
        "allowed,\n"
        "                      0..3600000) after it arrived; replies are "
        "independent\n"
        "  --max-conns N       refuse clients beyond N open connections "
        "(default 10000)\n"
        "  --threads N         event loops, one per thread (default: one per "
        "CPU, max %d)\n"
        "  --spin-us N|auto    with --delay-ms: busy-poll the last N us before "
        "each\n"
        "                      release, because timer wake-ups run late "
        "(default 100;\n"
        "                      0 saves CPU, costs ~50 us of precision; auto: "
        "the p99\n"
        "                      of recent wake-ups, at most 200 us, as in "
        "replay)\n"
        "  --rt-prio N         run the event loops under SCHED_FIFO priority "
        "N (1..%d;\n"
        "                      default 0: normal scheduling); the trace writer "
        "stays\n"
        "                      normal.  Cuts wake-up lateness on a busy host; "
        "needs root\n"
        "                      or CAP_SYS_NICE (exit 1 when refused)\n"
        "  --pin-loops         pin event loop i to the i-th CPU the process "
        "may use\n"
        "                      (as HAProxy's cpu-map); the trace writer is "
        "not pinned\n"
        "  --batch-loops       run the event loops under SCHED_BATCH: their "
        "wake-ups\n"
        "                      do not preempt the client or the server; "
        "more\n"
        "                      throughput on a host that runs nothing else, "
        "ms of\n"
        "                      added latency behind any other busy task "
        "(not with\n"
        "                      --rt-prio)\n"
        "  --idle-timeout-s S  close a connection after S s with no traffic "
        "and no\n"
        "                      request waiting for its reply (default 0: "
        "never)\n"
        "  --msg-timeout-s S   close a client whose message stays incomplete "
        "S s\n"
        "                      (slow-loris; default 60; 0: never)\n"
        "  --max-msg-bytes N   close a client that announces a message over "
        "N bytes\n"
        "                      (default 48000000, maxMessageSizeBytes)\n"
        "  --queue-mb M        bound of the queue of records waiting for the "
        "trace\n"
        "                      writer, in MiB (default 64, up to 4096); when "
        "it is full\n"
        "                      the proxy stops reading (back-pressure) and "
        "drops nothing\n"
        "  --redact [FIELD]    remove SASL payloads (saslStart/saslContinue "
        "and their\n"
        "                      replies, speculativeAuthenticate) from the "
        "trace; with\n"
        "                      FIELD (a name, or a dotted path like "
        "documents.ssn) also\n"
        "                      replace that field's values with "
        "\"<redacted>\"; repeatable\n"
        "\n"
        "Proxy mode, TLS (OpenSSL; the trace holds the plaintext; see "
        "docs/capture.md):\n"
        "  --tls-cert FILE     clients must connect with TLS: the proxy's "
        "certificate\n"
        "                      chain (PEM), with its private key too unless "
        "--tls-key\n"
        "                      is given (as mongod's "
        "tlsCertificateKeyFile)\n"
        "  --tls-key FILE      the private key (PEM, not encrypted) of "
        "--tls-cert\n"
        "  --tls-ca FILE       also require a client certificate signed by a "
        "CA of FILE\n"
        "  --target-tls        connect to the target with TLS (SNI and the "
        "certificate's\n"
        "                      name checked against --target's host)\n"
        "  --target-tls-ca FILE  verify the target against the CAs of FILE "
        "(PEM;\n"
        "                      default: the system's CAs)\n"
        "  --target-tls-insecure  DO NOT verify the target's certificate "
        "(anyone on the\n"
        "                      path can read and change the traffic); for "
        "tests only\n"
        "  --target-tls-cert FILE  present this certificate (PEM, with its "
        "key) when\n"
        "                      the target asks for one (client certificates "
        "required)\n"
        "\n"
        "Pcap / live mode (see docs/capture-pcap.md):\n"
        "  --pcap FILE         read a pcap or pcapng file\n"
        "  --iface IF          sniff a live interface (needs root or "
        "CAP_NET_RAW)\n"
        "  --port N            MongoDB server port to follow (repeatable, up "
        "to %d;\n"
        "                      default 27017)\n"
        "  --filter BPF        capture filter (replaces the port filter)\n"
        "  --duration S        live: stop after S seconds\n"
        "  --count N           live: stop after N packets\n"
        "  --buffer-mb M       live: kernel capture ring in MiB (default %d, "
        "up to %d;\n"
        "                      on lo each packet takes its room twice)\n"
        "  --zstd-level L      trace compression level (zstd, %d..%d, not "
        "0; default -3\n"
        "                      for --pcap, which is bound by compression, 3 "
        "for --iface,\n"
        "                      -1 for the proxy)\n"
        "\n"
        "Recording mode (see docs/recording.md):\n"
        "  --recording DIR|FILE  import mongod's own traffic recording "
        "(the .bin files\n"
        "                      startTrafficRecording writes, in name order, "
        "their\n"
        "                      checksum.txt checked; or one such file): "
        "each session a\n"
        "                      connection, each recorded message a message; "
        "exit 1 when\n"
        "                      part of the recording could not be read "
        "(each problem\n"
        "                      on a line; the trace keeps every complete "
        "record)\n"
        "\n"
        "Proxy and live mode:\n"
        "  --cpu-dma-latency US  hold a PM QoS request on "
        "/dev/cpu_dma_latency from\n"
        "                      start to exit: idle CPUs use only idle states "
        "that wake\n"
        "                      within US microseconds (0..%d;\n"
        "                      0: they poll).  Cuts the wake-up delay of an "
        "idle CPU\n"
        "                      (tens of us in a VM) from forwarding and "
        "--delay-ms; costs\n"
        "                      power and, in a VM, host CPU, and applies to "
        "every process\n"
        "                      on the host.  Default: off.  Needs root (exit "
        "1 when\n"
        "                      refused)\n"
        "\n"
        "Common:\n"
        "  -o, --output OUT    trace file to create (mode 0600: it may hold "
        "credentials)\n"
        "  --force             overwrite OUT if it exists\n"
        "  --quiet             no summary on stderr\n"
        "  -h, --help          this help\n"
        "\n"
        "SIGINT or SIGTERM stops the capture: in-flight exchanges get up to a "
        "second,\n"
        "the trace is closed and a summary printed.  Exit status: 0 success, 1 "
        "runtime\n"
        "failure, 2 bad usage.  See docs/capture.md.\n",
        PROXY_THREADS_MAX, SCHED_RT_PRIO_MAX, SNIFF_PORTS_MAX,
        SNIFF_BUFFER_MB_DEFAULT, SNIFF_BUFFER_MB_MAX, trace_zstd_level_min(),
        trace_zstd_level_max(), PMQOS_US_MAX);
}

static int capture_bad(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

/* Prints one usage-error line; returns exit status 2. */
static int
capture_bad(const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "mtrace capture: %s; run 'mtrace capture --help'\n", msg);
    return 2;
}

/* Unsigned decimal in [lo, hi]; false on junk, overflow or range. */
static bool
cli_parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *v)
{
    char *end;
    unsigned long long x;

    if (s[0] < '0' || s[0] > '9')
        return false;
    errno = 0;
    x = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0' || x < lo || x > hi)
        return false;
    *v = x;
    return true;
}

/* Signed decimal int in [lo, hi]; false on junk, overflow or range. */
static bool
cli_parse_int(const char *s, int lo, int hi, int *v)
{
    char *end;
    long x;

    if (s[0] != '-' && (s[0] < '0' || s[0] > '9'))
        return false;
    errno = 0;
    x = strtol(s, &end, 10);
    if (errno != 0 || *end != '\0' || x < lo || x > hi)
        return false;
    *v = (int)x;
    return true;
}

/* A finite decimal in [lo, hi]. */
static bool
cli_parse_double(const char *s, double lo, double hi, double *v)
{
    char *end;
    double x;

    if (s[0] == '\0' || s[0] == '-' || s[0] == '+' || s[0] == ' ')
        return false;
    errno = 0;
    x = strtod(s, &end);
    if (errno != 0 || *end != '\0' || !isfinite(x) || x < lo || x > hi)
        return false;
    *v = x;
    return true;
}

/* "HOST:PORT" or "[V6]:PORT" into ss (core/addr.c); desc gets the
 * canonical "ip:port". */
static bool
cli_parse_addr(const char *arg, struct sockaddr_storage *ss, socklen_t *len,
               char *desc, size_t desc_len)
{
    if (mt_addr_resolve(arg, ss, len) < 0)
        return false;
    mt_addr_format((const struct sockaddr *)ss, desc, desc_len);
    return true;
}

static void
capture_on_signal(int sig)
{
    (void)sig;
    proxy_stop();
    sniff_stop();
    recdir_stop();
}

static void
capture_signals(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = capture_on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

/* Raises the descriptor limit to the hard limit (two per connection). */
static void
capture_raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max > (1u << 20) ? (1u << 20) : rl.rlim_max;
        (void)setrlimit(RLIMIT_NOFILE, &rl);
    }
}

enum {
    OPT_LISTEN = 256,
    OPT_TARGET,
    OPT_DELAY,
    OPT_MAXCONNS,
    OPT_THREADS,
    OPT_QUIET,
    OPT_FORCE,
    OPT_PCAP,
    OPT_IFACE,
    OPT_PORT,
    OPT_FILTER,
    OPT_DURATION,
    OPT_COUNT,
    OPT_BUFFER_MB,
    OPT_ZSTD_LEVEL,
    OPT_SPIN,
    OPT_IDLE,
    OPT_MSGTO,
    OPT_MSGMAX,
    OPT_REDACT,
    OPT_RTPRIO,
    OPT_DMA_LATENCY,
    OPT_QUEUE_MB,
    OPT_PIN,
    OPT_BATCH,
    OPT_TLS_CERT,
    OPT_TLS_KEY,
    OPT_TLS_CA,
    OPT_TARGET_TLS,
    OPT_TARGET_TLS_CA,
    OPT_TARGET_TLS_INSECURE,
    OPT_TARGET_TLS_CERT,
    OPT_RECORDING,
};

struct capture_args {
    struct proxy_opts px;
    struct sniff_opts sn;
    struct redact_cfg redact;
    bool redacting;        /* --redact given */
    const char *recording; /* --recording DIR|FILE */
    const char *listen, *target;
    bool proxy_only;    /* a proxy-only option was given */
    bool sniff_only;    /* a pcap/live-only option was given */
    int dma_latency_us; /* --cpu-dma-latency; -1: not given */
};

static int
capture_parse_proxy_opt(int c, const char *arg, struct capture_args *a)
{
    uint64_t v;
    double ms;

    a->proxy_only = true;
    switch (c) {
    case OPT_LISTEN:
        a->listen = arg;
        return 0;
    case OPT_TARGET:
        a->target = arg;
        return 0;
    case OPT_DELAY:
        if (!cli_parse_double(arg, 0, CLI_DELAY_MS_MAX, &ms))
            return capture_bad("--delay-ms wants milliseconds between 0 and "
                               "3600000 (fractions allowed), not '%s'",
                               arg);
        a->px.delay_ns = (uint64_t)llround(ms * 1e6);
        return 0;
    case OPT_MAXCONNS:
        if (!cli_parse_u64(arg, 1, CLI_CONNS_MAX, &v))
            return capture_bad("--max-conns wants a number from 1 to 1000000, "
                               "not '%s'",
                               arg);
        a->px.max_conns = (unsigned)v;
        return 0;
    case OPT_SPIN:
        if (strcmp(arg, "auto") == 0) {
            a->px.spin_auto = true;
            a->px.spin_ns = LOOP_SPIN_AUTO_MAX_NS;
            return 0;
        }
        if (!cli_parse_u64(arg, 0, 10000, &v))
            return capture_bad("--spin-us wants auto or microseconds from 0 "
                               "to 10000, not '%s'",
                               arg);
        a->px.spin_auto = false;
        a->px.spin_ns = v * 1000;
        return 0;
    case OPT_IDLE:
    case OPT_MSGTO:
        if (!cli_parse_double(arg, 0, 31536000.0, &ms))
            return capture_bad(
                "%s wants seconds (>= 0, fractions allowed), "
                "not '%s'",
                c == OPT_IDLE ? "--idle-timeout-s" : "--msg-timeout-s", arg);
        *(c == OPT_IDLE ? &a->px.idle_ns : &a->px.msg_timeout_ns) =
            (uint64_t)llround(ms * 1e9);
        return 0;
    case OPT_MSGMAX:
        if (!cli_parse_u64(arg, WIRE_HEADER_LEN, WIRE_MSG_LEN_MAX, &v))
            return capture_bad("--max-msg-bytes wants bytes from 16 to "
                               "48000000, not '%s'",
                               arg);
        a->px.msg_max = (uint32_t)v;
        return 0;
    case OPT_QUEUE_MB:
        if (!cli_parse_u64(arg, 1, 4096, &v))
            return capture_bad("--queue-mb wants MiB from 1 to 4096, not '%s'",
                               arg);
        a->px.queue_bytes = (size_t)v << 20;
        return 0;
    case OPT_PIN:
        a->px.pin_loops = true;
        return 0;
    case OPT_BATCH:
        a->px.batch_loops = true;
        return 0;
    case OPT_RTPRIO:
        if (!cli_parse_u64(arg, 0, SCHED_RT_PRIO_MAX, &v))
            return capture_bad("--rt-prio wants a SCHED_FIFO priority from 1 "
                               "to %d (0: off), not '%s'",
                               SCHED_RT_PRIO_MAX, arg);
        a->px.rt_prio = (int)v;
        return 0;
    default: /* OPT_THREADS */
        if (!cli_parse_u64(arg, 1, PROXY_THREADS_MAX, &v))
            return capture_bad("--threads wants a number from 1 to 64, not "
                               "'%s'",
                               arg);
        a->px.threads = (unsigned)v;
        return 0;
    }
}

/* The TLS options (proxy mode); checked together in capture_check_tls. */
static int
capture_parse_tls_opt(int c, const char *arg, struct capture_args *a)
{
    a->proxy_only = true;
    switch (c) {
    case OPT_TLS_CERT:
        a->px.tls_cert = arg;
        break;
    case OPT_TLS_KEY:
        a->px.tls_key = arg;
        break;
    case OPT_TLS_CA:
        a->px.tls_ca = arg;
        break;
    case OPT_TARGET_TLS:
        a->px.target_tls = true;
        break;
    case OPT_TARGET_TLS_CA:
        a->px.target_tls_ca = arg;
        break;
    case OPT_TARGET_TLS_CERT:
        a->px.target_tls_cert = arg;
        break;
    default: /* OPT_TARGET_TLS_INSECURE */
        a->px.target_tls_insecure = true;
        break;
    }
    return 0;
}

static int
capture_check_tls(struct capture_args *a)
{
    const char *h = a->target, *end;
    size_t n;

    if ((a->px.tls_key != NULL || a->px.tls_ca != NULL) &&
        a->px.tls_cert == NULL)
        return capture_bad("--tls-key and --tls-ca need --tls-cert (the "
                           "proxy's certificate for TLS clients)");
    if ((a->px.target_tls_ca != NULL || a->px.target_tls_insecure ||
         a->px.target_tls_cert != NULL) &&
        !a->px.target_tls)
        return capture_bad("--target-tls-ca, --target-tls-insecure and "
                           "--target-tls-cert need --target-tls");
    if (a->px.target_tls_ca != NULL && a->px.target_tls_insecure)
        return capture_bad("--target-tls-ca and --target-tls-insecure "
                           "exclude each other");
    /* the host of HOST:PORT or [V6]:PORT, for SNI and the name check */
    if (h[0] == '[' && (end = strchr(h, ']')) != NULL)
        h++;
    else
        end = strrchr(h, ':');
    n = end != NULL ? (size_t)(end - h) : strlen(h);
    if (n >= sizeof(a->px.target_host))
        return capture_bad("--target host is too long for TLS (%zu bytes)", n);
    memcpy(a->px.target_host, h, n);
    a->px.target_host[n] = '\0';
    return 0;
}

static int
capture_parse_redact(const char *field, struct capture_args *a)
{
    struct mt_err err = {0};

    a->redacting = true;
    if (field != NULL && redact_cfg_add(&a->redact, field, &err) < 0)
        return capture_bad("%s", err.msg);
    return 0;
}

static int
capture_parse_sniff_opt(int c, const char *arg, struct capture_args *a)
{
    uint64_t v;
    double s;
    int l;

    switch (c) {
    case OPT_PCAP:
        a->sn.pcap_path = arg;
        return 0;
    case OPT_IFACE:
        a->sn.iface = arg;
        return 0;
    case OPT_PORT:
        a->sniff_only = true;
        if (!cli_parse_u64(arg, 1, 65535, &v))
            return capture_bad("--port wants a TCP port from 1 to 65535, not "
                               "'%s'",
                               arg);
        if (a->sn.nports == SNIFF_PORTS_MAX)
            return capture_bad("at most 16 --port options (%s is one too "
                               "many)",
                               arg);
        a->sn.ports[a->sn.nports++] = (uint16_t)v;
        return 0;
    case OPT_FILTER:
        a->sniff_only = true;
        a->sn.filter = arg;
        return 0;
    case OPT_DURATION:
        a->sniff_only = true;
        if (!cli_parse_double(arg, 0, 31536000.0, &s) || s <= 0)
            return capture_bad("--duration wants seconds (> 0, fractions "
                               "allowed), not '%s'",
                               arg);
        a->sn.duration_s = s;
        return 0;
    case OPT_ZSTD_LEVEL: /* both modes */
        if (!cli_parse_int(arg, trace_zstd_level_min(), trace_zstd_level_max(),
                           &l) ||
            l == 0)
            return capture_bad("--zstd-level wants a zstd level from %d to "
                               "%d other than 0, not '%s'",
                               trace_zstd_level_min(), trace_zstd_level_max(),
                               arg);
        a->sn.zstd_level = a->px.zstd_level = l;
        return 0;
    case OPT_BUFFER_MB:
        a->sniff_only = true;
        if (!cli_parse_u64(arg, 1, SNIFF_BUFFER_MB_MAX, &v))
            return capture_bad("--buffer-mb wants MiB from 1 to %d, not '%s'",
                               SNIFF_BUFFER_MB_MAX, arg);
        a->sn.buffer_mb = (uint32_t)v;
        return 0;
    default: /* OPT_COUNT */
        a->sniff_only = true;
        if (!cli_parse_u64(arg, 1, UINT64_MAX, &v))
            return capture_bad("--count wants a packet count >= 1, not '%s'",
                               arg);
        a->sn.count = v;
        return 0;
    }
}

static int
capture_parse(int argc, char **argv, struct capture_args *a, const char **out)
{
    static const struct option longopts[] = {
        {"listen", required_argument, NULL, OPT_LISTEN},
        {"target", required_argument, NULL, OPT_TARGET},
        {"delay-ms", required_argument, NULL, OPT_DELAY},
        {"max-conns", required_argument, NULL, OPT_MAXCONNS},
        {"threads", required_argument, NULL, OPT_THREADS},
        {"spin-us", required_argument, NULL, OPT_SPIN},
        {"rt-prio", required_argument, NULL, OPT_RTPRIO},
        {"idle-timeout-s", required_argument, NULL, OPT_IDLE},
        {"msg-timeout-s", required_argument, NULL, OPT_MSGTO},
        {"max-msg-bytes", required_argument, NULL, OPT_MSGMAX},
        {"queue-mb", required_argument, NULL, OPT_QUEUE_MB},
        {"pin-loops", no_argument, NULL, OPT_PIN},
        {"batch-loops", no_argument, NULL, OPT_BATCH},
        {"tls-cert", required_argument, NULL, OPT_TLS_CERT},
        {"tls-key", required_argument, NULL, OPT_TLS_KEY},
        {"tls-ca", required_argument, NULL, OPT_TLS_CA},
        {"target-tls", no_argument, NULL, OPT_TARGET_TLS},
        {"target-tls-ca", required_argument, NULL, OPT_TARGET_TLS_CA},
        {"target-tls-insecure", no_argument, NULL, OPT_TARGET_TLS_INSECURE},
        {"target-tls-cert", required_argument, NULL, OPT_TARGET_TLS_CERT},
        {"redact", optional_argument, NULL, OPT_REDACT},
        {"quiet", no_argument, NULL, OPT_QUIET},
        {"force", no_argument, NULL, OPT_FORCE},
        {"pcap", required_argument, NULL, OPT_PCAP},
        {"iface", required_argument, NULL, OPT_IFACE},
        {"port", required_argument, NULL, OPT_PORT},
        {"filter", required_argument, NULL, OPT_FILTER},
        {"duration", required_argument, NULL, OPT_DURATION},
        {"count", required_argument, NULL, OPT_COUNT},
        {"buffer-mb", required_argument, NULL, OPT_BUFFER_MB},
        {"zstd-level", required_argument, NULL, OPT_ZSTD_LEVEL},
        {"cpu-dma-latency", required_argument, NULL, OPT_DMA_LATENCY},
        {"recording", required_argument, NULL, OPT_RECORDING},
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c, rc;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'o':
            *out = optarg;
            break;
        case 'h':
            capture_usage(stdout);
            return 1; /* done: exit 0 */
        case OPT_QUIET:
            a->px.quiet = a->sn.quiet = true;
            break;
        case OPT_FORCE:
            a->px.trace_flags = a->sn.trace_flags = TRACE_W_FORCE;
            break;
        case OPT_LISTEN:
        case OPT_TARGET:
        case OPT_DELAY:
        case OPT_MAXCONNS:
        case OPT_THREADS:
        case OPT_SPIN:
        case OPT_RTPRIO:
        case OPT_IDLE:
        case OPT_MSGTO:
        case OPT_MSGMAX:
        case OPT_QUEUE_MB:
        case OPT_PIN:
        case OPT_BATCH:
            if ((rc = capture_parse_proxy_opt(c, optarg, a)) != 0)
                return -rc;
            break;
        case OPT_TLS_CERT:
        case OPT_TLS_KEY:
        case OPT_TLS_CA:
        case OPT_TARGET_TLS:
        case OPT_TARGET_TLS_CA:
        case OPT_TARGET_TLS_INSECURE:
        case OPT_TARGET_TLS_CERT:
            (void)capture_parse_tls_opt(c, optarg, a);
            break;
        case OPT_PCAP:
        case OPT_IFACE:
        case OPT_PORT:
        case OPT_FILTER:
        case OPT_DURATION:
        case OPT_COUNT:
        case OPT_BUFFER_MB:
        case OPT_ZSTD_LEVEL:
            if ((rc = capture_parse_sniff_opt(c, optarg, a)) != 0)
                return -rc;
            break;
        case OPT_DMA_LATENCY: /* proxy and live */
            if (!cli_parse_int(optarg, 0, PMQOS_US_MAX, &a->dma_latency_us))
                return -capture_bad("--cpu-dma-latency wants microseconds "
                                    "from 0 to %d, not '%s'",
                                    PMQOS_US_MAX, optarg);
            break;
        case OPT_RECORDING:
            a->recording = optarg;
            break;
        case OPT_REDACT:
            /* --redact FIELD, --redact=FIELD, or --redact alone */
            if (optarg == NULL && optind < argc && argv[optind][0] != '-')
                optarg = argv[optind++];
            if ((rc = capture_parse_redact(optarg, a)) != 0)
                return -rc;
            break;
        case ':':
            return -capture_bad("option '%s' needs a value", argv[optind - 1]);
        default:
            return -capture_bad("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return -capture_bad("unexpected argument '%s'", argv[optind]);
    return 0;
}

/* Whether libpcap lists a capture device of that name ("any" and "lo"
 * included): 1, 0, or -1 when the list cannot be read. */
static int
capture_iface_known(const char *name)
{
    char eb[PCAP_ERRBUF_SIZE] = "";
    pcap_if_t *devs = NULL;
    int found = 0;

    if (pcap_findalldevs(&devs, eb) != 0)
        return -1;
    for (pcap_if_t *d = devs; d != NULL && !found; d = d->next)
        found = strcmp(d->name, name) == 0;
    pcap_freealldevs(devs);
    return found;
}

static int
capture_check(struct capture_args *a, const char *out)
{
    if (out == NULL)
        return capture_bad("the output trace is required: -o OUT.zst");
    if (a->sn.pcap_path != NULL && a->sn.iface != NULL)
        return capture_bad("--pcap and --iface exclude each other");
    if (a->recording != NULL &&
        (a->sn.pcap_path != NULL || a->sn.iface != NULL || a->proxy_only ||
         a->sniff_only || a->dma_latency_us >= 0))
        return capture_bad("--recording takes only -o, --zstd-level, "
                           "--redact, --quiet and --force");
    if (a->recording != NULL)
        return 0;
    if (a->sn.pcap_path != NULL || a->sn.iface != NULL) {
        if (a->proxy_only)
            return capture_bad("--listen, --target, --delay-ms, --max-conns, "
                               "--threads, --spin-us, --rt-prio, --pin-loops, "
                               "--batch-loops, the TLS options and the "
                               "timeouts are for proxy mode, not with "
                               "--pcap/--iface");
        if (a->sn.pcap_path != NULL &&
            (a->sn.duration_s > 0 || a->sn.count || a->sn.buffer_mb))
            return capture_bad("--duration, --count and --buffer-mb are for "
                               "--iface");
        if (a->sn.pcap_path != NULL && a->dma_latency_us >= 0)
            return capture_bad("--cpu-dma-latency is for the proxy and "
                               "--iface, not --pcap");
        a->sn.redact = a->redacting ? &a->redact : NULL;
        a->sn.out_path = out;
        return 0;
    }
    if (a->px.batch_loops && a->px.rt_prio > 0)
        return capture_bad("--batch-loops and --rt-prio exclude each other");
    if (a->sniff_only)
        return capture_bad("--port, --filter, --duration, --count and "
                           "--buffer-mb need --pcap or --iface");
    if (!cli_parse_addr(a->listen, &a->px.listen, &a->px.listen_len,
                        (char[64]){0}, 64))
        return capture_bad("--listen wants HOST:PORT, not '%s'", a->listen);
    if (!cli_parse_addr(a->target, &a->px.target, &a->px.target_len,
                        a->px.target_desc, sizeof(a->px.target_desc)))
        return capture_bad("--target wants HOST:PORT (a resolvable host), "
                           "not '%s'",
                           a->target);
    a->px.out_path = out;
    a->px.redact = a->redacting ? &a->redact : NULL;
    return capture_check_tls(a);
}

/*
 * --cpu-dma-latency: takes the PM QoS request before anything else is
 * created (a refusal leaves no trace file).  Returns 0 or exit status 1.
 */
static int
capture_hold_latency(struct pmqos *q, int us)
{
    struct mt_err err = {0};

    if (us < 0)
        return 0;
    if (pmqos_hold(q, us, &err) < 0) {
        fprintf(stderr, "mtrace capture: --cpu-dma-latency %d: %s; %s\n", us,
                err.msg,
                err.code == -ENOENT ? "this kernel has no PM QoS device, "
                                      "leave the option out"
                                    : "run as root or leave the option out");
        return 1;
    }
    mt_info("capture: holding CPU wake-up latency <= %d us (%s) until exit", us,
            PMQOS_DEV);
    return 0;
}

/* After the summary: what was held, and the bound the kernel applied at
 * the end (other holders may ask for less); then drops the request. */
static void
capture_release_latency(struct pmqos *q, bool quiet)
{
    int now = -1;

    if (q->fd < 0)
        return;
    if (!quiet) {
        if (pmqos_current(&now) < 0)
            now = -1;
        fprintf(stderr,
                "  cpu wake-up latency: held <= %d us on %s from start to "
                "exit (host bound at exit: %d us)\n",
                q->us, PMQOS_DEV, now);
    }
    pmqos_release(q);
}

/* See capture_cli.h. */
int
capture_cli_main(int argc, char **argv)
{
    struct capture_args a;
    struct mt_err err = {0};
    struct pmqos q;
    const char *out = NULL;
    int rc;

    memset(&a, 0, sizeof(a));
    a.dma_latency_us = -1;
    a.listen = "127.0.0.1:28017";
    a.target = "127.0.0.1:27017";
    a.px.max_conns = 10000;
    a.px.spin_ns = 100000;
    a.px.msg_timeout_ns = PROXY_MSG_TIMEOUT_DEFAULT_NS;
    rc = capture_parse(argc, argv, &a, &out);
    if (rc == 1)
        return 0;
    if (rc < 0)
        return -rc;
    if ((rc = capture_check(&a, out)) != 0)
        return rc;
    if (a.sn.iface != NULL && capture_iface_known(a.sn.iface) == 0) {
        /* A runtime condition, like a missing --pcap file: exit 1. */
        fprintf(stderr,
                "mtrace capture: --iface %s: no such capture device "
                "(see 'ip link')\n",
                a.sn.iface);
        return 1;
    }
    pmqos_init(&q);
    if (capture_hold_latency(&q, a.dma_latency_us) != 0)
        return 1;
    capture_signals();
    if (a.recording != NULL) {
        rc = recdir_import(
            &(struct recdir_opts){a.recording, out, a.sn.trace_flags,
                                  a.sn.zstd_level, a.sn.quiet,
                                  a.redacting ? &a.redact : NULL},
            &err);
    } else if (a.sn.out_path != NULL) {
        rc = sniff_run(&a.sn, &err);
    } else {
        capture_raise_nofile();
        rc = proxy_run(&a.px, &err);
    }
    capture_release_latency(&q, a.px.quiet || rc < 0);
    if (rc < 0) {
        if (rc == -EEXIST)
            fprintf(stderr,
                    "mtrace capture: %s exists; pass --force to "
                    "overwrite it\n",
                    out);
        else
            fprintf(stderr, "mtrace capture: %s\n",
                    err.msg[0] ? err.msg : mt_strerror(rc));
        return rc == MT_EUSAGE ? 2 : 1; /* e.g. a bad --filter */
    }
    return 0;
}
