/* HDF5 and digest helpers shared by the package and the calibration cache (h5util.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/h5util.h"

static herr_t innermost(unsigned n, const H5E_error2_t *e, void *ctx)
{
    if (n == 0 && e && e->desc) snprintf(ctx, YQ_H5_WHY, "%s", e->desc);
    return 0;
}

const char *yq_h5_why(char why[YQ_H5_WHY])
{
    why[0] = 0;
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, innermost, why);
    if (!why[0]) snprintf(why, YQ_H5_WHY, "HDF5 error");
    return why;
}

hid_t yq_h5_str_type(size_t size)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    if (t < 0) return -1;
    if (H5Tset_size(t, size) < 0 || H5Tset_strpad(t, H5T_STR_NULLTERM) < 0) {
        H5Tclose(t);
        return -1;
    }
    return t;
}

int yq_h5_attr_put(hid_t loc, const char *name, hid_t ftype, hid_t mtype, const void *v, char why[YQ_H5_WHY])
{
    hid_t s = H5Screate(H5S_SCALAR);
    hid_t a = s < 0 ? -1 : H5Acreate2(loc, name, ftype, s, H5P_DEFAULT, H5P_DEFAULT);
    int ok = a >= 0 && H5Awrite(a, mtype, v) >= 0;
    if (!ok) yq_h5_why(why);
    if (a >= 0 && H5Aclose(a) < 0 && ok) {
        ok = 0;
        yq_h5_why(why);
    }
    if (s >= 0) H5Sclose(s);
    return ok ? 0 : -1;
}

int yq_h5_attr_put_int(hid_t loc, const char *name, int v, char why[YQ_H5_WHY])
{
    int32_t x = v;
    return yq_h5_attr_put(loc, name, H5T_STD_I32LE, H5T_NATIVE_INT32, &x, why);
}

int yq_h5_attr_put_str(hid_t loc, const char *name, const char *s, char why[YQ_H5_WHY])
{
    if (!s) s = "";
    hid_t t = yq_h5_str_type(strlen(s) + 1);
    if (t < 0) {
        yq_h5_why(why);
        return -1;
    }
    int r = yq_h5_attr_put(loc, name, t, t, s, why);
    H5Tclose(t);
    return r;
}

int yq_h5_attr_get_int(hid_t loc, const char *name, int *v)
{
    htri_t ex = H5Aexists(loc, name);
    if (ex == 0) return 0;
    if (ex < 0) return -1;
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
    hid_t t = a < 0 ? -1 : H5Aget_type(a);
    hid_t s = a < 0 ? -1 : H5Aget_space(a);
    int32_t x = 0;
    int ok = t >= 0 && s >= 0 && H5Tget_class(t) == H5T_INTEGER && H5Sget_simple_extent_npoints(s) == 1 &&
             H5Aread(a, H5T_NATIVE_INT32, &x) >= 0;
    if (s >= 0) H5Sclose(s);
    if (t >= 0) H5Tclose(t);
    if (a >= 0) H5Aclose(a);
    if (ok) *v = x;
    return ok ? 1 : -1;
}

void yq_hex_encode(const uint8_t *b, int n, char *out)
{
    static const char hx[] = "0123456789abcdef";
    for (int i = 0; i < n; i++) {
        out[2 * i] = hx[b[i] >> 4];
        out[2 * i + 1] = hx[b[i] & 15];
    }
    out[2 * n] = 0;
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

int yq_hex_decode(const char *s, uint8_t *b, int n)
{
    if (strlen(s) != (size_t)(2 * n)) return 0;
    for (int i = 0; i < 2 * n; i++)
        if (hexval(s[i]) < 0) return 0;
    for (int i = 0; i < n; i++) b[i] = (uint8_t)(hexval(s[2 * i]) << 4 | hexval(s[2 * i + 1]));
    return 1;
}

int yq_h5_str_read(hid_t obj, int is_attr, int scalar_only, size_t max, char **out)
{
    hid_t t = is_attr ? H5Aget_type(obj) : H5Dget_type(obj);
    hid_t s = is_attr ? H5Aget_space(obj) : H5Dget_space(obj);
    hid_t m = H5I_INVALID_HID;
    int r = YQ_H5_NOT_STR;
    *out = NULL;
    if (t < 0 || s < 0 || H5Tget_class(t) != H5T_STRING ||
        (scalar_only ? H5Sget_simple_extent_type(s) != H5S_SCALAR : H5Sget_simple_extent_npoints(s) != 1))
        goto done;
    m = H5Tcopy(H5T_C_S1);
    if (H5Tis_variable_str(t) > 0) {
        char *p = NULL;
        if (m < 0 || H5Tset_size(m, H5T_VARIABLE) < 0 ||
            (is_attr ? H5Aread(obj, m, &p) : H5Dread(obj, m, H5S_ALL, H5S_ALL, H5P_DEFAULT, &p)) < 0) {
            r = YQ_H5_UNREAD;
            goto done;
        }
        size_t n = p ? strlen(p) : 0;
        if (n > max) r = YQ_H5_TOO_LONG;
        else r = (*out = strdup(p ? p : "")) ? 1 : YQ_H5_NOMEM;
        if (p) H5free_memory(p);
    } else {
        size_t n = H5Tget_size(t);
        if (n == 0 || n > max) {
            r = YQ_H5_TOO_LONG;
            goto done;
        }
        if (!(*out = calloc(n + 1, 1))) {
            r = YQ_H5_NOMEM;
            goto done;
        }
        if (m < 0 || H5Tset_size(m, n) < 0 || H5Tset_strpad(m, H5T_STR_NULLPAD) < 0 ||
            (is_attr ? H5Aread(obj, m, *out) : H5Dread(obj, m, H5S_ALL, H5S_ALL, H5P_DEFAULT, *out)) < 0) {
            free(*out);
            *out = NULL;
            r = YQ_H5_UNREAD;
            goto done;
        }
        r = 1;
    }
done:
    if (m >= 0) H5Tclose(m);
    if (t >= 0) H5Tclose(t);
    if (s >= 0) H5Sclose(s);
    return r;
}
