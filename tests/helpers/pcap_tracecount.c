/*
 * pcap_tracecount.c -- print a trace as canonical lines for the pcap tests
 * (independent of `mtrace dump`, so the tests of the pcap path do not
 * depend on another module's output format).
 *
 *   pcap_tracecount TRACE              one line per record:
 *     header <source> prec=<ns> start=<ns>
 *     open <id> <client> <server> t=<ns>
 *     msg <id> <c2s|s2c> <op>[/<orig op>] <name> flags=<f> len=<n>
 *         crc=<CRC-32C of the wire bytes> t=<ns>
 *     close <id> <reason> <partial c2s> <partial s2c>
 *     stat <name> <value>
 *   pcap_tracecount --capture PCAP OUT [PORT...]
 *     runs sniff_run() directly (used only while `mtrace capture` does not
 *     dispatch to it).
 *
 * <name>: OP_MSG first key of the kind-0 body, OP_QUERY the namespace,
 * else "-".  For OP_COMPRESSED the decompressed message is described.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/sniff.h"
#include "core/trace.h"
#include "core/wire.h" /* brings <bson/bson.h> without its warnings */

static void
describe(const uint8_t *m, size_t n, char *op, size_t opcap, char *name,
         size_t namecap)
{
    struct wire_msg msg;
    struct mt_err err;
    size_t used;
    bson_iter_t it;

    snprintf(name, namecap, "-");
    if (wire_msg_parse(m, n, &msg, &used, &err) != MT_OK) {
        snprintf(op, opcap, "bad");
        return;
    }
    snprintf(op, opcap, "%d", msg.h.op_code);
    if (msg.h.op_code == WIRE_OP_QUERY && msg.full_collection != NULL)
        snprintf(name, namecap, "%s", msg.full_collection);
    if (msg.h.op_code == WIRE_OP_MSG && msg.body != NULL &&
        bson_iter_init_from_data(&it, msg.body, msg.body_len) &&
        bson_iter_next(&it))
        snprintf(name, namecap, "%s", bson_iter_key(&it));
}

static int
print_msg(const struct trace_msg *m)
{
    char op[80], name[256], iop[32];

    describe(m->wire, m->wire_len, op, sizeof(op), name, sizeof(name));
    if (m->plain != NULL) {
        describe(m->plain, m->plain_len, iop, sizeof(iop), name, sizeof(name));
        strncat(op, "/", sizeof(op) - strlen(op) - 1);
        strncat(op, iop, sizeof(op) - strlen(op) - 1);
    }
    printf("msg %" PRIu64 " %s %s %s flags=%u len=%u crc=%08x t=%" PRIu64 "\n",
           m->conn_id, trace_dir_name(m->dir), op, name, m->flags, m->wire_len,
           wire_crc32c(0, m->wire, m->wire_len), m->t_ns);
    return 0;
}

static int
list(const char *path)
{
    struct mt_err err = {0};
    struct trace_reader *r = trace_reader_open(path, &err);
    struct trace_rec rec;
    const struct trace_header *h;
    int rc;

    if (r == NULL) {
        fprintf(stderr, "%s: %s\n", path, err.msg);
        return 1;
    }
    h = trace_reader_header(r);
    printf("header %s prec=%u start=%" PRIu64 "\n",
           trace_source_name(h->source), h->ts_precision_ns, h->start_wall_ns);
    while ((rc = trace_reader_next(r, &rec, &err)) == MT_OK) {
        switch (rec.type) {
        case TRACE_REC_CONN_OPEN:
            printf("open %" PRIu64 " %s %s t=%" PRIu64 "\n", rec.u.open.conn_id,
                   rec.u.open.client, rec.u.open.server, rec.u.open.t_ns);
            break;
        case TRACE_REC_MSG:
            print_msg(&rec.u.msg);
            break;
        case TRACE_REC_CONN_CLOSE:
            printf("close %" PRIu64 " %s %u %u\n", rec.u.close.conn_id,
                   trace_close_reason_name(rec.u.close.reason),
                   rec.u.close.partial_c2s, rec.u.close.partial_s2c);
            break;
        case TRACE_REC_STATS:
            for (size_t i = 0; i < rec.u.stats.n; i++)
                printf("stat %s %" PRIu64 "\n", rec.u.stats.s[i].name,
                       rec.u.stats.s[i].value);
            break;
        default:
            break;
        }
    }
    trace_reader_free(r);
    if (rc < 0) {
        fprintf(stderr, "%s: %s\n", path, err.msg);
        return 1;
    }
    return 0;
}

int
main(int argc, char **argv)
{
    if (argc >= 4 && strcmp(argv[1], "--capture") == 0) {
        struct sniff_opts o;
        struct mt_err err = {0};
        memset(&o, 0, sizeof(o));
        o.pcap_path = argv[2];
        o.out_path = argv[3];
        o.trace_flags = TRACE_W_FORCE;
        for (int i = 4; i < argc && o.nports < SNIFF_PORTS_MAX; i++)
            o.ports[o.nports++] = (uint16_t)strtoul(argv[i], NULL, 10);
        if (sniff_run(&o, &err) < 0) {
            fprintf(stderr, "capture: %s\n", err.msg);
            return 1;
        }
        return 0;
    }
    if (argc != 2) {
        fprintf(stderr, "usage: pcap_tracecount TRACE | --capture PCAP OUT "
                        "[PORT...]\n");
        return 2;
    }
    return list(argv[1]);
}
