/*
 * test_addr.c -- core/addr.c: HOST:PORT parsing for CLIs, servers and
 * helpers (numeric, bracketed IPv6, localhost), and the one formatter.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <string.h>

#include "core/addr.h"
#include "core/err.h"

static void
test_addr_split_v4_and_v6(void **state)
{
    char host[64];
    uint16_t port;

    assert_int_equal(
        mt_addr_split("127.0.0.1:28017", host, sizeof(host), &port), 0);
    assert_string_equal(host, "127.0.0.1");
    assert_int_equal(port, 28017);
    assert_int_equal(mt_addr_split("[::1]:0", host, sizeof(host), &port), 0);
    assert_string_equal(host, "::1");
    assert_int_equal(port, 0);
}

static void
test_addr_split_rejects(void **state)
{
    static const char *const bad[] = {
        "127.0.0.1",       /* no port */
        ":27017",          /* no host */
        "[]:27017",        /* empty brackets */
        "localhost:65536", /* port out of range */
        "localhost:-1",    /* negative */
        "localhost:27x",   /* trailing junk */
        "localhost:",      /* empty port */
        "localhost:mongo", /* service names are not ports here */
    };
    char host[64];
    uint16_t port;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(mt_addr_split(bad[i], host, sizeof(host), &port),
                         MT_EUSAGE);
    /* host longer than the caller's buffer */
    assert_int_equal(mt_addr_split("abcdefgh:1", host, 8, &port), MT_EUSAGE);
}

static void
test_addr_resolve_numeric(void **state)
{
    struct sockaddr_storage ss;
    socklen_t len;
    const struct sockaddr_in *in = (const struct sockaddr_in *)&ss;

    assert_int_equal(mt_addr_resolve("127.0.0.1:28017", &ss, &len), 0);
    assert_int_equal(ss.ss_family, AF_INET);
    assert_int_equal(len, sizeof(struct sockaddr_in));
    assert_int_equal(ntohs(in->sin_port), 28017);
    assert_int_equal(ntohl(in->sin_addr.s_addr), INADDR_LOOPBACK);
    assert_int_equal(mt_addr_resolve("[::1]:1", &ss, &len), 0);
    assert_int_equal(ss.ss_family, AF_INET6);
    assert_int_equal(mt_addr_resolve("127.0.0.1", &ss, &len), MT_EUSAGE);
}

/* localhost resolves (to 127.0.0.1 or ::1, as /etc/hosts says), and a
 * name that cannot resolve is a usage error. */
static void
test_addr_resolve_localhost(void **state)
{
    struct sockaddr_storage ss;
    socklen_t len;
    char txt[64];

    assert_int_equal(mt_addr_resolve("localhost:28017", &ss, &len), 0);
    assert_true(ss.ss_family == AF_INET || ss.ss_family == AF_INET6);
    mt_addr_format((const struct sockaddr *)&ss, txt, sizeof(txt));
    assert_true(strcmp(txt, "127.0.0.1:28017") == 0 ||
                strcmp(txt, "[::1]:28017") == 0);
    assert_int_equal(mt_addr_resolve("no-such-host.invalid:1", &ss, &len),
                     MT_EUSAGE);
}

/* The formatter: IPv4, bracketed IPv6, an unknown family, a short buffer
 * (truncated, NUL-terminated), and resolve -> format round trips. */
static void
test_addr_format(void **state)
{
    static const char *const specs[] = {"127.0.0.1:28017", "[::1]:0",
                                        "10.1.2.3:65535", "[fe80::1]:27017"};
    struct sockaddr_storage ss;
    socklen_t len;
    char txt[64];

    for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
        assert_int_equal(mt_addr_resolve(specs[i], &ss, &len), 0);
        mt_addr_format((const struct sockaddr *)&ss, txt, sizeof(txt));
        assert_string_equal(txt, specs[i]);
    }
    memset(&ss, 0, sizeof(ss));
    ss.ss_family = AF_UNIX;
    mt_addr_format((const struct sockaddr *)&ss, txt, sizeof(txt));
    assert_string_equal(txt, "?");
    assert_int_equal(mt_addr_resolve("127.0.0.1:28017", &ss, &len), 0);
    mt_addr_format((const struct sockaddr *)&ss, txt, 6);
    assert_string_equal(txt, "127.0");
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_addr_split_v4_and_v6),
        cmocka_unit_test(test_addr_split_rejects),
        cmocka_unit_test(test_addr_resolve_numeric),
        cmocka_unit_test(test_addr_resolve_localhost),
        cmocka_unit_test(test_addr_format),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
