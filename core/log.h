/*
 * log.h -- one-line diagnostics on stderr: "mtrace: LEVEL: message".
 */
#ifndef MT_LOG_H
#define MT_LOG_H

enum mt_log_level { MT_LOG_DEBUG, MT_LOG_INFO, MT_LOG_WARN, MT_LOG_ERROR };

/* Messages below level are discarded. Default MT_LOG_INFO. */
void mt_log_set_level(enum mt_log_level level);
enum mt_log_level mt_log_get_level(void);

/* Thread-safe: each call writes one whole line with a single write(2). */
void mt_log(enum mt_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define mt_debug(...) mt_log(MT_LOG_DEBUG, __VA_ARGS__)
#define mt_info(...) mt_log(MT_LOG_INFO, __VA_ARGS__)
#define mt_warn(...) mt_log(MT_LOG_WARN, __VA_ARGS__)
#define mt_error(...) mt_log(MT_LOG_ERROR, __VA_ARGS__)

#endif
