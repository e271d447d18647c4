#include "ir/stats.h"

#include <math.h>
#include <stdlib.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

yq_stats yq_stats_of(double *v, int n)
{
    yq_stats s = { 0, NAN, NAN, NAN, NAN, NAN };
    if (!v || n < 1) return s;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    double sum = 0;
    for (int i = 0; i < n; i++) sum += v[i];
    s.n = n;
    s.median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    s.mean = sum / n;
    s.min = v[0];
    s.max = v[n - 1];
    s.p90 = v[(int)floor(0.9 * (n - 1))];
    return s;
}

yq_stats yq_stats_of_f(const float *v, int n)
{
    double *d = v && n > 0 ? malloc(sizeof *d * (size_t)n) : NULL;
    if (!d) return yq_stats_of(NULL, 0);
    for (int i = 0; i < n; i++) d[i] = v[i];
    yq_stats s = yq_stats_of(d, n);
    free(d);
    return s;
}
