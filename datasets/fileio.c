/* Whole-file reads for the dataset loaders: one checked path for every file they open. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "datasets/fileio.h"
#include "ir/ir.h"

yq_status yq_ds_read_file(const char *path, unsigned char **buf, size_t *n, yq_error *err)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return yq_fail(err, YQ_ERR_IO, "%s: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return yq_fail(err, YQ_ERR_IO, "%s: not a regular file", path);
    FILE *f = fopen(path, "rb");
    if (!f) return yq_fail(err, YQ_ERR_IO, "%s: %s", path, strerror(errno));
    size_t size = (size_t)st.st_size;
    unsigned char *b = malloc(size + 1);
    if (!b) {
        fclose(f);
        return yq_fail(err, YQ_ERR_NOMEM, "%s: out of memory for %zu bytes", path, size);
    }
    size_t got = fread(b, 1, size, f);
    int bad = ferror(f);
    fclose(f);
    if (bad || got != size) {
        free(b);
        return yq_fail(err, YQ_ERR_IO, "%s: read %zu of %zu bytes", path, got, size);
    }
    b[size] = 0;
    *buf = b;
    *n = size;
    return YQ_OK;
}

char *yq_ds_path_join(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    int slash = a > 0 && dir[a - 1] != '/';
    char *p = malloc(a + (size_t)slash + b + 1);
    if (!p) return NULL;
    memcpy(p, dir, a);
    if (slash) p[a] = '/';
    memcpy(p + a + (size_t)slash, name, b + 1);
    return p;
}

yq_status yq_ds_read_json(const char *path, cJSON **root, yq_error *err)
{
    unsigned char *buf;
    size_t n;
    yq_status st = yq_ds_read_file(path, &buf, &n, err);
    if (st != YQ_OK) return st;
    const char *end = NULL;
    *root = cJSON_ParseWithLengthOpts((const char *)buf, n, &end, 0);
    if (!*root) {
        size_t at = end ? (size_t)(end - (const char *)buf) : 0;
        int line = 1;
        for (size_t i = 0; i < at && i < n; i++) line += buf[i] == '\n';
        st = yq_fail(err, YQ_ERR_FORMAT, "%s: malformed JSON at line %d (byte %zu)", path, line, at);
    }
    free(buf);
    return st;
}
