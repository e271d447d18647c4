/* Internal to datasets/: whole-file reads and path joins shared by the loaders. */
#ifndef YQ_DATASETS_FILEIO_H
#define YQ_DATASETS_FILEIO_H

#include <stddef.h>
#include "include/yq.h"

/* Reads all of path into a malloc'd buffer with a NUL after the last byte (so text parsers
 * may treat it as a string); *n excludes the NUL.  A missing or unreadable file, or a
 * directory, is YQ_ERR_IO naming the path. */
yq_status yq_ds_read_file(const char *path, unsigned char **buf, size_t *n, yq_error *err);

/* Parses the JSON file at path into *root (cJSON_Delete it); malformed JSON is
 * YQ_ERR_FORMAT naming the path and the line. */
struct cJSON;
yq_status yq_ds_read_json(const char *path, struct cJSON **root, yq_error *err);
/* "dir/name" in a malloc'd string (no doubled '/'); NULL when out of memory. */
char *yq_ds_path_join(const char *dir, const char *name);

#endif
