/* Writes the image fuzzer's seed corpus (fuzz/corpus/image/): small JPEGs and PNGs of the
 * kinds a photo folder holds, made with libjpeg and libpng themselves.
 *     make -f fuzz/Makefile image-seeds
 */
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jpeglib.h>

static unsigned char px(int x, int y, int c) { return (unsigned char)((x * 37 + y * 11 + c * 83) & 255); }

static int jpeg(const char *dir, const char *name, int w, int h, J_COLOR_SPACE cs, int nc, int progressive,
                int restart, int quality)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) return 1;
    struct jpeg_compress_struct ci;
    struct jpeg_error_mgr je;
    ci.err = jpeg_std_error(&je);
    jpeg_create_compress(&ci);
    jpeg_stdio_dest(&ci, f);
    ci.image_width = (JDIMENSION)w;
    ci.image_height = (JDIMENSION)h;
    ci.input_components = nc;
    ci.in_color_space = cs;
    jpeg_set_defaults(&ci);
    jpeg_set_quality(&ci, quality, TRUE);
    if (progressive) jpeg_simple_progression(&ci);
    ci.restart_interval = (unsigned)restart;
    jpeg_start_compress(&ci, TRUE);
    unsigned char *row = malloc((size_t)w * (size_t)nc);
    while (ci.next_scanline < ci.image_height) {
        for (int x = 0; x < w; x++)
            for (int c = 0; c < nc; c++) row[x * nc + c] = px(x, (int)ci.next_scanline, c);
        JSAMPROW r = row;
        jpeg_write_scanlines(&ci, &r, 1);
    }
    jpeg_finish_compress(&ci);
    jpeg_destroy_compress(&ci);
    free(row);
    return fclose(f) != 0;
}

static int png(const char *dir, const char *name, int w, int h, int color, int depth, int interlace)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) return 1;
    png_structp p = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(p);
    if (setjmp(png_jmpbuf(p))) { fclose(f); return 1; }
    png_init_io(p, f);
    png_set_IHDR(p, info, (png_uint_32)w, (png_uint_32)h, depth, color,
                 interlace == 1 ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_color pal[4] = { { 0, 0, 0 }, { 255, 0, 0 }, { 0, 255, 0 }, { 0, 0, 255 } };
    if (color == PNG_COLOR_TYPE_PALETTE) {
        png_set_PLTE(p, info, pal, 4);
        png_byte alpha[2] = { 0, 128 };
        if (interlace == 2) png_set_tRNS(p, info, alpha, 2, NULL);   /* 2: a transparent palette entry */
    }
    png_write_info(p, info);
    int nc = color == PNG_COLOR_TYPE_RGB ? 3 : color == PNG_COLOR_TYPE_RGBA ? 4 : color == PNG_COLOR_TYPE_GRAY_ALPHA ? 2 : 1;
    size_t rb = png_get_rowbytes(p, info);
    unsigned char *row = calloc(rb, 1);
    int passes = png_set_interlace_handling(p);
    for (int pass = 0; pass < passes; pass++)
        for (int y = 0; y < h; y++) {
            for (size_t b = 0; b < rb; b++)
                row[b] = color == PNG_COLOR_TYPE_PALETTE ? (unsigned char)((b + (size_t)y) & 3) : px((int)b / nc, y, (int)b % nc);
            png_write_row(p, row);
        }
    png_write_end(p, info);
    png_destroy_write_struct(&p, &info);
    free(row);
    return fclose(f) != 0;
}

int main(int argc, char **argv)
{
    const char *d = argc > 1 ? argv[1] : "fuzz/corpus/image";
    int bad = 0;
    bad |= jpeg(d, "rgb.jpg", 17, 9, JCS_RGB, 3, 0, 0, 75);
    bad |= jpeg(d, "gray.jpg", 8, 8, JCS_GRAYSCALE, 1, 0, 0, 90);
    bad |= jpeg(d, "progressive.jpg", 24, 16, JCS_RGB, 3, 1, 0, 60);
    bad |= jpeg(d, "restart.jpg", 32, 16, JCS_RGB, 3, 0, 1, 50);
    bad |= jpeg(d, "cmyk.jpg", 8, 8, JCS_CMYK, 4, 0, 0, 80);
    bad |= png(d, "rgb.png", 7, 5, PNG_COLOR_TYPE_RGB, 8, 0);
    bad |= png(d, "gray.png", 9, 3, PNG_COLOR_TYPE_GRAY, 8, 0);
    bad |= png(d, "palette.png", 6, 6, PNG_COLOR_TYPE_PALETTE, 2, 0);
    bad |= png(d, "rgba16.png", 4, 4, PNG_COLOR_TYPE_RGBA, 16, 0);
    bad |= png(d, "interlaced.png", 11, 7, PNG_COLOR_TYPE_RGB, 8, 1);
    bad |= png(d, "gray16.png", 5, 5, PNG_COLOR_TYPE_GRAY, 16, 0);
    bad |= png(d, "gray1.png", 13, 3, PNG_COLOR_TYPE_GRAY, 1, 0);
    bad |= png(d, "grayalpha.png", 6, 4, PNG_COLOR_TYPE_GRAY_ALPHA, 8, 0);
    bad |= png(d, "palette_trns.png", 8, 3, PNG_COLOR_TYPE_PALETTE, 8, 2);
    if (bad) fprintf(stderr, "make_image_seeds: a seed could not be written\n");
    return bad;
}
