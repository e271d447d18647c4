/* Report files: CSV fields, self-contained HTML, temp-then-rename output. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "cli/cli.h"
#include "cli/report.h"

yq_status cli_make_dirs(const char *dir, yq_error *err)
{
    char buf[1024];
    if (!dir || !*dir || strlen(dir) >= sizeof buf) return cli_fail(err, YQ_ERR_INVALID_ARG, "bad output folder name");
    strcpy(buf, dir);
    for (char *s = buf + 1;; s++) {
        if (*s && *s != '/') continue;
        char c = *s;
        *s = 0;
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return cli_fail(err, YQ_ERR_IO, "cannot create %s: %s", buf, strerror(errno));
        *s = c;
        if (!c) break;
    }
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) return cli_fail(err, YQ_ERR_IO, "%s is not a folder", dir);
    return YQ_OK;
}

yq_status cli_out_open(cli_out *o, const char *path, yq_error *err)
{
    return yq_out_begin(o, path, YQ_OUT_STREAM, err);
}

yq_status cli_out_close(cli_out *o, yq_error *err)
{
    if (!o->f) return cli_fail(err, YQ_ERR_IO, "%s: not open", o->path);
    return yq_out_commit(o, err);
}

void cli_out_abort(cli_out *o) { yq_out_abort(o); }

void cli_csv_field(FILE *f, const char *s, char sep)
{
    if (!s) s = "";
    if (strpbrk(s, ",\"\n\r")) {
        fputc('"', f);
        for (; *s; s++) {
            if (*s == '"') fputc('"', f);
            fputc(*s, f);
        }
        fputc('"', f);
    } else {
        fputs(s, f);
    }
    fputc(sep, f);
}

void cli_csv_num(FILE *f, double v, const char *fmt, char sep)
{
    if (isfinite(v)) fprintf(f, fmt, v);
    fputc(sep, f);
}

void cli_html_text(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
    }
}

void cli_html_head(FILE *f, const char *title)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>", f);
    cli_html_text(f, title);
    fputs("</title>\n<style>\n"
          "body { font-family: sans-serif; margin: 16px 24px; color: #222; max-width: 1400px; }\n"
          "h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 28px; }\n"
          "p, li { font-size: 14px; line-height: 1.45; }\n"
          "code { background: #f2f2f2; padding: 0 3px; }\n"
          "img.chart { display: block; max-width: 100%; border: 1px solid #ccc; margin: 8px 0; }\n"
          "table { border-collapse: collapse; font-size: 13px; margin: 8px 0; }\n"
          "th { background: #dde6f5; text-align: left; padding: 4px 8px; border: 1px solid #b8c4d8; }\n"
          "table.sqnr th { background: #e6e6e6; border-color: #c8c8c8; }\n"
          "td { padding: 3px 8px; border: 1px solid #ddd; font-variant-numeric: tabular-nums; }\n"
          "td.n { text-align: right; }\n"
          "tr.front td { background: #fdecec; }\n"
          "tr.chosen td { background: #e3f4e3; font-weight: bold; }\n"
          "td.bar { width: 320px; padding: 2px 4px; }\n"
          "div.bar { height: 12px; }\n"
          ".muted { color: #666; }\n"
          "</style>\n</head>\n<body>\n", f);
}

void cli_html_tail(FILE *f)
{
    fputs("</body>\n</html>\n", f);
}

yq_status cli_html_png(FILE *f, const char *png_path, const char *alt, yq_error *err)
{
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    FILE *in = fopen(png_path, "rb");
    if (!in) return cli_fail(err, YQ_ERR_IO, "%s: %s", png_path, strerror(errno));
    fputs("<img class=\"chart\" alt=\"", f);
    cli_html_text(f, alt);
    fputs("\" src=\"data:image/png;base64,", f);
    unsigned char b[3];
    size_t n;
    while ((n = fread(b, 1, 3, in)) > 0) {
        unsigned v = (unsigned)b[0] << 16 | (n > 1 ? (unsigned)b[1] << 8 : 0) | (n > 2 ? b[2] : 0);
        fputc(b64[v >> 18 & 63], f);
        fputc(b64[v >> 12 & 63], f);
        fputc(n > 1 ? b64[v >> 6 & 63] : '=', f);
        fputc(n > 2 ? b64[v & 63] : '=', f);
        if (n < 3) break;
    }
    int bad = ferror(in);
    fclose(in);
    if (bad) return cli_fail(err, YQ_ERR_IO, "%s: read error", png_path);
    fputs("\">\n", f);
    return YQ_OK;
}
