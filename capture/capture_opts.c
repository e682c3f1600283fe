/*
 * capture_opts.c -- option parsing and checking of `mtrace capture` (see
 * capture_opts.h): the proxy group, its TLS options, the pcap / live
 * group, and the options of both.
 */
#include "capture_opts.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "core/addr.h"
#include "core/cli.h"
#include "core/err.h"
#include "core/loop.h"
#include "core/pmqos.h"
#include "core/sched.h"
#include "core/trace.h"
#include "core/wire.h"
#include "capture_usage.h"

#define CAPTURE_DELAY_MS_MAX 3600000.0 /* one hour */
#define CAPTURE_CONNS_MAX 1000000u

/* "HOST:PORT" or "[V6]:PORT" into ss (core/addr.c); desc gets the
 * canonical "ip:port". */
static bool
capture_parse_addr(const char *arg, struct sockaddr_storage *ss, socklen_t *len,
                   char *desc, size_t desc_len)
{
    if (mt_addr_resolve(arg, ss, len) < 0)
        return false;
    mt_addr_format((const struct sockaddr *)ss, desc, desc_len);
    return true;
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

void
capture_opts_init(struct capture_args *a)
{
    memset(a, 0, sizeof(*a));
    a->dma_latency_us = -1;
    a->listen = "127.0.0.1:28017";
    a->target = "127.0.0.1:27017";
    a->px.max_conns = 10000;
    a->px.spin_ns = 100000;
    a->px.msg_timeout_ns = PROXY_MSG_TIMEOUT_DEFAULT_NS;
}

static int
capture_parse_proxy_opt(int c, const char *arg, struct capture_args *a)
{
    uint64_t v;

    a->proxy_only = true;
    switch (c) {
    case OPT_LISTEN:
        a->listen = arg;
        return 0;
    case OPT_TARGET:
        a->target = arg;
        return 0;
    case OPT_DELAY:
        if (!cli_parse_duration_ns(arg, 0, CAPTURE_DELAY_MS_MAX, 1e6,
                                   &a->px.delay_ns))
            return cli_usage_error(
                "capture",
                "--delay-ms wants milliseconds between 0 and "
                "3600000 (fractions allowed), not '%s'",
                arg);
        return 0;
    case OPT_MAXCONNS:
        if (!cli_parse_u64(arg, 1, CAPTURE_CONNS_MAX, &v))
            return cli_usage_error(
                "capture",
                "--max-conns wants a number from 1 to 1000000, "
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
            return cli_usage_error(
                "capture",
                "--spin-us wants auto or microseconds from 0 "
                "to 10000, not '%s'",
                arg);
        a->px.spin_auto = false;
        a->px.spin_ns = v * 1000;
        return 0;
    case OPT_IDLE:
    case OPT_MSGTO:
        if (!cli_parse_duration_ns(arg, 0, 31536000.0, 1e9,
                                   c == OPT_IDLE ? &a->px.idle_ns
                                                 : &a->px.msg_timeout_ns))
            return cli_usage_error(
                "capture",
                "%s wants seconds (>= 0, fractions allowed), "
                "not '%s'",
                c == OPT_IDLE ? "--idle-timeout-s" : "--msg-timeout-s", arg);
        return 0;
    case OPT_MSGMAX:
        if (!cli_parse_u64(arg, WIRE_HEADER_LEN, WIRE_MSG_LEN_MAX, &v))
            return cli_usage_error("capture",
                                   "--max-msg-bytes wants bytes from 16 to "
                                   "48000000, not '%s'",
                                   arg);
        a->px.msg_max = (uint32_t)v;
        return 0;
    case OPT_QUEUE_MB:
        if (!cli_parse_u64(arg, 1, 4096, &v))
            return cli_usage_error(
                "capture", "--queue-mb wants MiB from 1 to 4096, not '%s'",
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
            return cli_usage_error(
                "capture",
                "--rt-prio wants a SCHED_FIFO priority from 1 "
                "to %d (0: off), not '%s'",
                SCHED_RT_PRIO_MAX, arg);
        a->px.rt_prio = (int)v;
        return 0;
    default: /* OPT_THREADS */
        if (!cli_parse_u64(arg, 1, PROXY_THREADS_MAX, &v))
            return cli_usage_error("capture",
                                   "--threads wants a number from 1 to 64, not "
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
        return cli_usage_error("capture",
                               "--tls-key and --tls-ca need --tls-cert (the "
                               "proxy's certificate for TLS clients)");
    if ((a->px.target_tls_ca != NULL || a->px.target_tls_insecure ||
         a->px.target_tls_cert != NULL) &&
        !a->px.target_tls)
        return cli_usage_error("capture",
                               "--target-tls-ca, --target-tls-insecure and "
                               "--target-tls-cert need --target-tls");
    if (a->px.target_tls_ca != NULL && a->px.target_tls_insecure)
        return cli_usage_error("capture",
                               "--target-tls-ca and --target-tls-insecure "
                               "exclude each other");
    /* the host of HOST:PORT or [V6]:PORT, for SNI and the name check */
    if (h[0] == '[' && (end = strchr(h, ']')) != NULL)
        h++;
    else
        end = strrchr(h, ':');
    n = end != NULL ? (size_t)(end - h) : strlen(h);
    if (n >= sizeof(a->px.target_host))
        return cli_usage_error(
            "capture", "--target host is too long for TLS (%zu bytes)", n);
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
        return cli_usage_error("capture", "%s", err.msg);
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
            return cli_usage_error(
                "capture",
                "--port wants a TCP port from 1 to 65535, not "
                "'%s'",
                arg);
        if (a->sn.nports == SNIFF_PORTS_MAX)
            return cli_usage_error("capture",
                                   "at most 16 --port options (%s is one too "
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
            return cli_usage_error("capture",
                                   "--duration wants seconds (> 0, fractions "
                                   "allowed), not '%s'",
                                   arg);
        a->sn.duration_s = s;
        return 0;
    case OPT_ZSTD_LEVEL: /* both modes */
        if (!cli_parse_int(arg, trace_zstd_level_min(), trace_zstd_level_max(),
                           &l) ||
            l == 0)
            return cli_usage_error("capture",
                                   "--zstd-level wants a zstd level from %d to "
                                   "%d other than 0, not '%s'",
                                   trace_zstd_level_min(),
                                   trace_zstd_level_max(), arg);
        a->sn.zstd_level = a->px.zstd_level = l;
        return 0;
    case OPT_BUFFER_MB:
        a->sniff_only = true;
        if (!cli_parse_u64(arg, 1, SNIFF_BUFFER_MB_MAX, &v))
            return cli_usage_error(
                "capture", "--buffer-mb wants MiB from 1 to %d, not '%s'",
                SNIFF_BUFFER_MB_MAX, arg);
        a->sn.buffer_mb = (uint32_t)v;
        return 0;
    default: /* OPT_COUNT */
        a->sniff_only = true;
        if (!cli_parse_u64(arg, 1, UINT64_MAX, &v))
            return cli_usage_error(
                "capture", "--count wants a packet count >= 1, not '%s'", arg);
        a->sn.count = v;
        return 0;
    }
}

bool
capture_opts_parse(int argc, char **argv, struct capture_args *a,
                   const char **out, int *status)
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
            capture_usage_print(stdout);
            *status = CLI_EXIT_OK;
            return false;
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
            if ((rc = capture_parse_proxy_opt(c, optarg, a)) != 0) {
                *status = rc;
                return false;
            }
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
            if ((rc = capture_parse_sniff_opt(c, optarg, a)) != 0) {
                *status = rc;
                return false;
            }
            break;
        case OPT_DMA_LATENCY: /* proxy and live */
            if (!cli_parse_int(optarg, 0, PMQOS_US_MAX, &a->dma_latency_us)) {
                *status = cli_usage_error(
                    "capture",
                    "--cpu-dma-latency wants microseconds from 0 "
                    "to %d, not '%s'",
                    PMQOS_US_MAX, optarg);
                return false;
            }
            break;
        case OPT_RECORDING:
            a->recording = optarg;
            break;
        case OPT_REDACT:
            /* --redact FIELD, --redact=FIELD, or --redact alone */
            if (optarg == NULL && optind < argc && argv[optind][0] != '-')
                optarg = argv[optind++];
            if ((rc = capture_parse_redact(optarg, a)) != 0) {
                *status = rc;
                return false;
            }
            break;
        case ':':
            *status = cli_usage_error("capture", "option '%s' needs a value",
                                      argv[optind - 1]);
            return false;
        default:
            *status = cli_usage_error("capture", "unknown option '%s'",
                                      argv[optind - 1]);
            return false;
        }
    }
    if (optind < argc) {
        *status = cli_usage_error("capture", "unexpected argument '%s'",
                                  argv[optind]);
        return false;
    }
    *status = CLI_EXIT_OK;
    return true;
}

int
capture_opts_check(struct capture_args *a, const char *out)
{
    if (out == NULL)
        return cli_usage_error("capture",
                               "the output trace is required: -o OUT.zst");
    if (a->sn.pcap_path != NULL && a->sn.iface != NULL)
        return cli_usage_error("capture",
                               "--pcap and --iface exclude each other");
    if (a->recording != NULL &&
        (a->sn.pcap_path != NULL || a->sn.iface != NULL || a->proxy_only ||
         a->sniff_only || a->dma_latency_us >= 0))
        return cli_usage_error("capture",
                               "--recording takes only -o, --zstd-level, "
                               "--redact, --quiet and --force");
    if (a->recording != NULL)
        return 0;
    if (a->sn.pcap_path != NULL || a->sn.iface != NULL) {
        if (a->proxy_only)
            return cli_usage_error(
                "capture", "--listen, --target, --delay-ms, --max-conns, "
                           "--threads, --spin-us, --rt-prio, --pin-loops, "
                           "--batch-loops, the TLS options and the "
                           "timeouts are for proxy mode, not with "
                           "--pcap/--iface");
        if (a->sn.pcap_path != NULL &&
            (a->sn.duration_s > 0 || a->sn.count || a->sn.buffer_mb))
            return cli_usage_error(
                "capture", "--duration, --count and --buffer-mb are for "
                           "--iface");
        if (a->sn.pcap_path != NULL && a->dma_latency_us >= 0)
            return cli_usage_error("capture",
                                   "--cpu-dma-latency is for the proxy and "
                                   "--iface, not --pcap");
        a->sn.redact = a->redacting ? &a->redact : NULL;
        a->sn.out_path = out;
        return 0;
    }
    if (a->px.batch_loops && a->px.rt_prio > 0)
        return cli_usage_error(
            "capture", "--batch-loops and --rt-prio exclude each other");
    if (a->sniff_only)
        return cli_usage_error("capture",
                               "--port, --filter, --duration, --count and "
                               "--buffer-mb need --pcap or --iface");
    if (!capture_parse_addr(a->listen, &a->px.listen, &a->px.listen_len,
                            (char[64]){0}, 64))
        return cli_usage_error("capture", "--listen wants HOST:PORT, not '%s'",
                               a->listen);
    if (!capture_parse_addr(a->target, &a->px.target, &a->px.target_len,
                            a->px.target_desc, sizeof(a->px.target_desc)))
        return cli_usage_error("capture",
                               "--target wants HOST:PORT (a resolvable host), "
                               "not '%s'",
                               a->target);
    a->px.out_path = out;
    a->px.redact = a->redacting ? &a->redact : NULL;
    return capture_check_tls(a);
}
