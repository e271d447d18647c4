/* The files the sweep and sensitivity commands write: CSV fields, self-contained HTML
 * (the chart embedded as base64 PNG, tables, per-layer SQNR as a bar table), and the
 * write-to-temp-then-rename discipline for each of them.
 *
 *     cli_out o;
 *     if (cli_out_open(&o, "out/report.html", &err) != YQ_OK) ...
 *     cli_html_head(o.f, "yquant sweep");
 *     cli_html_text(o.f, "<b>&</b>");            // escaped
 *     cli_html_png(o.f, "out/pareto.png", "chart", &err);
 *     cli_html_tail(o.f);
 *     cli_out_close(&o, &err);                    // renames its temporary onto out/report.html
 */
#ifndef YQ_CLI_REPORT_H
#define YQ_CLI_REPORT_H

#include <stdio.h>
#include "yq_data.h"

/* yq_data.h's output files: a regular file replaced atomically, symlinks followed, devices in place. */
typedef yq_outfile cli_out;

/* mkdir -p; YQ_ERR_IO naming the folder on failure. */
yq_status cli_make_dirs(const char *dir, yq_error *err);
/* Opens a temporary beside path for writing (yq_out_begin). */
yq_status cli_out_open(cli_out *o, const char *path, yq_error *err);
/* Closes, checks for write errors, renames to path; on failure removes the temp file. */
yq_status cli_out_close(cli_out *o, yq_error *err);
/* Closes and removes the temp file (an error path). */
void cli_out_abort(cli_out *o);

/* One CSV field (RFC 4180: quoted when it holds a comma, quote or newline), then sep
 * (',' or '\n'). */
void cli_csv_field(FILE *f, const char *s, char sep);
void cli_csv_num(FILE *f, double v, const char *fmt, char sep);   /* NaN: empty */

/* HTML: the page head (inline CSS) and tail, escaped text, an embedded PNG. */
void cli_html_head(FILE *f, const char *title);
void cli_html_tail(FILE *f);
void cli_html_text(FILE *f, const char *s);
yq_status cli_html_png(FILE *f, const char *png_path, const char *alt, yq_error *err);

#endif
