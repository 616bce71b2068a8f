/* c4_log.h -- logging: to NCCL's logger when running inside NCCL, to stderr otherwise. */
#ifndef C4_LOG_H
#define C4_LOG_H

/* NCCL's level numbers; NOTE (NCCL's VERSION) is what a daemon always says, such as where it
 * listens. */
enum { C4_LOG_NONE = 0, C4_LOG_NOTE = 1, C4_LOG_WARN = 2, C4_LOG_INFO = 3, C4_LOG_TRACE = 5 };

/* Same shape as NCCL's ncclDebugLogger_t (level and subsystem flags as plain integers). */
typedef void (*c4_logger_fn)(int level, unsigned long flags, const char *file, int line,
                             const char *fmt, ...);

/* Routes further messages to fn (NULL: back to stderr). Thread-safe (atomic pointer swap). */
void c4_log_set_logger(c4_logger_fn fn);

/* 1 when messages go to NCCL's logger, 0 when to stderr. */
int c4_log_to_nccl(void);

/* Names the program whose stderr lines follow: they then start with the UTC time (RFC 3339;
 * none under systemd's journal, which stamps them) and the name. Call once, before threads. */
void c4_log_set_program(const char *name);

/* Logs one message: to NCCL's logger with the "c4: " prefix when inside NCCL, else one line on
 * stderr without source places, honouring C4_DEBUG=NONE|WARN|INFO|TRACE (default WARN; NOTE
 * lines show unless NONE). Never fails; never blocks on anything but the write itself. */
void c4_log(int level, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* A flag bit of the logger's flags, past NCCL's subsystems: the message was said on stderr too
 * (C4_WARN_SETTING). A logger of c4's own that writes to stderr (c4perf's, c4train's) leaves it
 * out; NCCL's logger sees a NET message. */
#define C4_LOG_ON_STDERR (1ul << 40)

/* A setting refused or not applied (a C4_* or NCCL_* variable): logged as a warning and, inside
 * NCCL, said on stderr too (unless C4_DEBUG=NONE). NCCL's log is often kept quiet, and a job
 * whose C4_LISTEN_PORTS or C4_PLAN was ignored ran otherwise than its operator meant with no word
 * where one looks. */
void c4_log_setting(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define C4_NOTE(...) c4_log(C4_LOG_NOTE, __FILE__, __LINE__, __VA_ARGS__)
#define C4_WARN(...) c4_log(C4_LOG_WARN, __FILE__, __LINE__, __VA_ARGS__)
#define C4_INFO(...) c4_log(C4_LOG_INFO, __FILE__, __LINE__, __VA_ARGS__)
#define C4_TRACE(...) c4_log(C4_LOG_TRACE, __FILE__, __LINE__, __VA_ARGS__)
#define C4_WARN_SETTING(...) c4_log_setting(__FILE__, __LINE__, __VA_ARGS__)

#endif
