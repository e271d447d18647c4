/* For the peers' dump programs (tests/peer/onnx_dump.c, heads_dump.c): n floats into DIR/NAME. */
#ifndef YQ_PEER_DUMP_H
#define YQ_PEER_DUMP_H
#include <stdio.h>

static inline int write_f32(const char *dir, const char *name, const float *v, long n)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    int ok = f && fwrite(v, sizeof *v, (size_t)n, f) == (size_t)n;
    if (f && fclose(f)) ok = 0;
    return ok ? 0 : -1;
}

#endif
