/* Errors: one line with the detail, written into the caller's yq_error. */
#include <stdarg.h>
#include <stdio.h>
#include "ir/ir.h"

yq_status yq_fail(yq_error *err, yq_status code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
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
