/* HDF5 and digest helpers shared by the package (runtime/package.c) and the calibration
 * cache (calib/cache.c): the message of a call that just failed, string types, scalar
 * attributes written and read, and SHA-256 digests as hex.  One definition each, so the
 * two files write attributes the same way and report HDF5's failures the same way. */
#ifndef YQ_RUNTIME_H5UTIL_H
#define YQ_RUNTIME_H5UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <hdf5.h>

#define YQ_H5_WHY 200                 /* bytes of a captured HDF5 message */

/* The innermost message on HDF5's error stack ("truncated file: eof = ..."), taken right
 * after the failing call (a later call clears the stack), into why; "HDF5 error" when the
 * stack is empty.  Returns why. */
const char *yq_h5_why(char why[YQ_H5_WHY]);

/* A fixed-length, NUL-terminated C string type of size bytes; -1 on failure. */
hid_t yq_h5_str_type(size_t size);

/* A scalar attribute of loc, written and closed (a failing close fails too): 0, or -1
 * with HDF5's message in why.  _int writes a little-endian int32, _str a NUL-terminated
 * string of its length (NULL as ""). */
int yq_h5_attr_put(hid_t loc, const char *name, hid_t ftype, hid_t mtype, const void *v, char why[YQ_H5_WHY]);
int yq_h5_attr_put_int(hid_t loc, const char *name, int v, char why[YQ_H5_WHY]);
int yq_h5_attr_put_str(hid_t loc, const char *name, const char *s, char why[YQ_H5_WHY]);

/* A scalar (one-value) integer attribute of loc into *v: 1 read, 0 absent, -1 present but
 * not one integer or unreadable. */
int yq_h5_attr_get_int(hid_t loc, const char *name, int *v);

/* The string of attribute (is_attr) or dataset obj: one value (a scalar dataspace, or any
 * one-element one where scalar_only is 0), fixed-length or variable-length (as h5py
 * writes them), into *out (malloc'd, NUL-terminated).  Returns 1; or YQ_H5_NOT_STR (not one
 * string), YQ_H5_TOO_LONG (empty fixed-length type, or more than max bytes), YQ_H5_UNREAD
 * (HDF5 cannot read it: damaged), YQ_H5_NOMEM; *out is NULL then. */
enum { YQ_H5_NOT_STR = -1, YQ_H5_TOO_LONG = -2, YQ_H5_UNREAD = -3, YQ_H5_NOMEM = -4 };
int yq_h5_str_read(hid_t obj, int is_attr, int scalar_only, size_t max, char **out);

/* n bytes as 2n lowercase hex digits and a NUL. */
void yq_hex_encode(const uint8_t *b, int n, char *out);
/* 1 when s is exactly 2n hex digits (either case), decoded into b; else 0 (b unchanged). */
int yq_hex_decode(const char *s, uint8_t *b, int n);

#endif
