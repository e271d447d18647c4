/* Errors: one line with the detail, written into the caller's yq_error. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "ir/ir.h"

/* The message is formatted aside first (an argument may be err->msg itself), then copied
 * with every control character written as an escape (a newline as backslash-n, others as
 * backslash-xNN): text taken from a file (a name with a newline in it) can never make an
 * error more than one line. */
yq_status yq_fail(yq_error *err, yq_status code, const char *fmt, ...)
{
    if (err) {
        char raw[sizeof err->msg];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(raw, sizeof raw, fmt, ap);
        va_end(ap);
        size_t o = 0;
        for (const unsigned char *s = (const unsigned char *)raw; *s && o + 1 < sizeof err->msg; s++) {
            if (*s >= 0x20 && *s != 0x7f) {
                err->msg[o++] = (char)*s;
                continue;
            }
            char e[5];
            int n = *s == '\n' ? snprintf(e, sizeof e, "\\n") : *s == '\r' ? snprintf(e, sizeof e, "\\r")
                  : *s == '\t' ? snprintf(e, sizeof e, "\\t") : snprintf(e, sizeof e, "\\x%02x", *s);
            if (o + (size_t)n + 1 > sizeof err->msg) break;
            memcpy(err->msg + o, e, (size_t)n);
            o += (size_t)n;
        }
        err->msg[o] = 0;
        err->code = code;
    }
    return code;
}

const char *yq_status_str(yq_status st)
{
    switch (st) {
    case YQ_OK: return "ok";
    case YQ_ERR_INVALID_ARG: return "invalid argument";
    case YQ_ERR_IO: return "i/o error";
    case YQ_ERR_FORMAT: return "format error";
    case YQ_ERR_UNSUPPORTED: return "unsupported";
    case YQ_ERR_SHAPE: return "shape error";
    case YQ_ERR_NOMEM: return "out of memory";
    case YQ_ERR_CUDA: return "cuda error";
    }
    return "unknown error";
}

void yq_warn_skipped(yq_warn_fn warn, void *ctx, const char *why)
{
    if (!warn) return;
    char msg[1024];
    snprintf(msg, sizeof msg, "%s (skipped)", why);
    warn(ctx, msg);
}
