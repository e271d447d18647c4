/* Ground truth: COCO instances json (cJSON) and YOLO label folders into one yq_dataset. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "datasets/fileio.h"
#include "datasets/image.h"
#include "datasets/labels.h"
#include "ir/ir.h"

/* darknet's coco.names order -> COCO category id (the 80 used ids of 1..90). */
static const int coco_ids[YQ_COCO_CLASSES] = {
    1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 13, 14, 15, 16, 17, 18, 19, 20, 21,
    22, 23, 24, 25, 27, 28, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44,
    46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65,
    67, 70, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 84, 85, 86, 87, 88, 89, 90};

int yq_coco_category_id(int cls)
{
    return cls >= 0 && cls < YQ_COCO_CLASSES ? coco_ids[cls] : -1;
}

int yq_coco_class(int category_id)
{
    for (int i = 0; i < YQ_COCO_CLASSES; i++)
        if (coco_ids[i] == category_id) return i;
    return -1;
}

void yq_dataset_free(yq_dataset *ds)
{
    if (!ds) return;
    for (int i = 0; i < ds->n_images; i++) free(ds->images[i].file);
    free(ds->images);
    free(ds->boxes);
    for (int c = 0; ds->category_names && c < ds->n_categories; c++) free(ds->category_names[c]);
    free(ds->category_names);
    free(ds->category_ids);
    free(ds->by_id);
    free(ds->image_dir);
    free(ds);
}

static int cmp_idref(const void *a, const void *b)
{
    int64_t x = ((const yq_ds_idref *)a)->id, y = ((const yq_ds_idref *)b)->id;
    return (x > y) - (x < y);
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int yq_dataset_find_image(const yq_dataset *ds, int64_t id)
{
    yq_ds_idref key = {id, -1};
    const yq_ds_idref *r = bsearch(&key, ds->by_id, (size_t)ds->n_images, sizeof key, cmp_idref);
    return r ? r->index : -1;
}

yq_status yq_dataset_image_path(const yq_dataset *ds, int i, char *buf, size_t size, yq_error *err)
{
    if (i < 0 || i >= ds->n_images)
        return yq_fail(err, YQ_ERR_INVALID_ARG, "image index %d out of range 0..%d", i, ds->n_images - 1);
    int n = ds->image_dir ? snprintf(buf, size, "%s/%s", ds->image_dir, ds->images[i].file)
                          : snprintf(buf, size, "%s", ds->images[i].file);
    if (n < 0 || (size_t)n >= size)
        return yq_fail(err, YQ_ERR_INVALID_ARG, "%s: path longer than %zu bytes", ds->images[i].file, size);
    return YQ_OK;
}

/* Sorts the id index and refuses duplicate image ids (annotations could not name one). */
static yq_status build_index(yq_dataset *ds, const char *src, yq_error *err)
{
    ds->by_id = malloc(((size_t)ds->n_images + 1) * sizeof *ds->by_id);
    if (!ds->by_id) return yq_fail(err, YQ_ERR_NOMEM, "%s: out of memory", src);
    for (int i = 0; i < ds->n_images; i++) ds->by_id[i] = (yq_ds_idref){ds->images[i].id, i};
    qsort(ds->by_id, (size_t)ds->n_images, sizeof *ds->by_id, cmp_idref);
    for (int i = 1; i < ds->n_images; i++)
        if (ds->by_id[i].id == ds->by_id[i - 1].id)
            return yq_fail(err, YQ_ERR_FORMAT, "%s: image id %lld appears twice (%s, %s)", src,
                           (long long)ds->by_id[i].id, ds->images[ds->by_id[i - 1].index].file,
                           ds->images[ds->by_id[i].index].file);
    return YQ_OK;
}

/* ---- COCO json ---- */

/* A JSON number that is an integer exactly representable in a double. */
static int json_int(const cJSON *o, const char *key, int64_t *v)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(it)) return 0;
    double d = it->valuedouble;
    if (!(fabs(d) <= 9007199254740992.0) || d != floor(d)) return 0;
    *v = (int64_t)d;
    return 1;
}

static int json_num(const cJSON *o, const char *key, double *v)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble)) return 0;
    *v = it->valuedouble;
    return 1;
}

static const cJSON *json_array(const cJSON *o, const char *key)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsArray(it) ? it : NULL;
}

static yq_status coco_images(yq_dataset *ds, const cJSON *arr, const char *path, yq_error *err)
{
    int n = cJSON_GetArraySize(arr);
    ds->images = calloc((size_t)n + 1, sizeof *ds->images);
    if (!ds->images) return yq_fail(err, YQ_ERR_NOMEM, "%s: out of memory", path);
    const cJSON *it;
    int i = 0;
    cJSON_ArrayForEach(it, arr) {
        yq_ds_image *im = &ds->images[i];
        int64_t w, h;
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(it, "file_name");
        if (!json_int(it, "id", &im->id) || !cJSON_IsString(name))
            return yq_fail(err, YQ_ERR_FORMAT, "%s: images[%d]: needs an integer \"id\" and a \"file_name\"",
                           path, i);
        if (!json_int(it, "width", &w) || !json_int(it, "height", &h) || w < 1 || h < 1 ||
            w > 1 << 20 || h > 1 << 20)
            return yq_fail(err, YQ_ERR_FORMAT, "%s: image %lld (%s): bad width/height", path,
                           (long long)im->id, name->valuestring);
        im->width = (int)w;
        im->height = (int)h;
        if (!(im->file = strdup(name->valuestring))) return yq_fail(err, YQ_ERR_NOMEM, "%s: out of memory", path);
        ds->n_images = ++i;
    }
    return YQ_OK;
}

typedef struct cat_rec { int id; const char *name; } cat_rec;
static int cmp_cat(const void *a, const void *b)
{
    int x = ((const cat_rec *)a)->id, y = ((const cat_rec *)b)->id;
    return (x > y) - (x < y);
}

static yq_status coco_categories(yq_dataset *ds, const cJSON *arr, const char *path, yq_error *err)
{
    int n = cJSON_GetArraySize(arr);
    cat_rec *rec = malloc(((size_t)n + 1) * sizeof *rec);
    ds->category_ids = malloc(((size_t)n + 1) * sizeof *ds->category_ids);
    ds->category_names = calloc((size_t)n + 1, sizeof *ds->category_names);
    if (!rec || !ds->category_ids || !ds->category_names) {
        free(rec);
        return yq_fail(err, YQ_ERR_NOMEM, "%s: out of memory", path);
    }
    const cJSON *it;
    int i = 0;
    cJSON_ArrayForEach(it, arr) {
        int64_t id;
        if (!json_int(it, "id", &id) || id < -2147483647 || id > 2147483647) {
            free(rec);
            return yq_fail(err, YQ_ERR_FORMAT, "%s: categories[%d]: needs an integer \"id\"", path, i);
        }
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(it, "name");
        rec[i++] = (cat_rec){ (int)id, cJSON_IsString(nm) ? nm->valuestring : NULL };
    }
    /* pycocotools evaluates np.unique(ids): sorted, duplicates merged (the first name kept) */
    qsort(rec, (size_t)i, sizeof *rec, cmp_cat);
    int u = 0;
    yq_status st = YQ_OK;
    for (int j = 0; j < i && st == YQ_OK; j++) {
        if (u > 0 && ds->category_ids[u - 1] == rec[j].id) continue;
        ds->category_ids[u] = rec[j].id;
        if (rec[j].name && !(ds->category_names[u] = strdup(rec[j].name))) st = yq_fail(err, YQ_ERR_NOMEM, "%s: out of memory", path);
        u++;
    }
    free(rec);
    ds->n_categories = u;
    return st;
}

/* "potted plant", "Potted_Plant" and "pottedplant" name one class. */
static int same_name(const char *a, const char *b)
{
    for (;;) {
        while (*a == ' ' || *a == '_' || *a == '-') a++;
        while (*b == ' ' || *b == '_' || *b == '-') b++;
        if (!*a || !*b) return !*a && !*b;
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b)) return 0;
        a++, b++;
    }
}

int *yq_dataset_class_map(const yq_dataset *ds, const char *const *names, int n)
{
    int *m = malloc(sizeof *m * (size_t)(n > 0 ? n : 1));
    if (!m) return NULL;
    int coco = ds->n_categories > 0;        /* COCO's own category ids: darknet's table */
    for (int c = 0; c < ds->n_categories && coco; c++) coco = yq_coco_class(ds->category_ids[c]) >= 0;
    int named = !coco && names && ds->category_names;
    for (int k = 0; k < n; k++) {
        if (coco) m[k] = yq_coco_category_id(k);
        else if (named) {
            m[k] = -1;
            for (int c = 0; c < ds->n_categories && m[k] < 0; c++)
                if (names[k] && ds->category_names[c] && same_name(names[k], ds->category_names[c])) m[k] = ds->category_ids[c];
        } else m[k] = k < ds->n_categories ? ds->category_ids[k] : -1;   /* no names: in id order */
    }
    return m;
}

static yq_status coco_annotations(yq_dataset *ds, const cJSON *arr, const char *path, yq_error *err)
{
    int n = cJSON_GetArraySize(arr);
    ds->boxes = calloc((size_t)n + 1, sizeof *ds->boxes);
    if (!ds->boxes) return yq_fail(err, YQ_ERR_NOMEM, "%s: out of memory", path);
    const cJSON *it;
    int i = 0;
    cJSON_ArrayForEach(it, arr) {
        yq_gt_box *b = &ds->boxes[i];
        int64_t img, cat, crowd = 0;
        if (!json_int(it, "id", &b->id))
            return yq_fail(err, YQ_ERR_FORMAT, "%s: annotations[%d]: needs an integer \"id\"", path, i);
        if (!json_int(it, "image_id", &img) || !json_int(it, "category_id", &cat) ||
            cat < -2147483647 || cat > 2147483647)
            return yq_fail(err, YQ_ERR_FORMAT, "%s: annotation %lld: needs integer \"image_id\" and \"category_id\"",
                           path, (long long)b->id);
        b->image = yq_dataset_find_image(ds, img);
        if (b->image < 0)
            return yq_fail(err, YQ_ERR_FORMAT, "%s: annotation %lld names image_id %lld, which is not in \"images\"",
                           path, (long long)b->id, (long long)img);
        b->category_id = (int)cat;
        b->cls = yq_coco_class(b->category_id);
        const cJSON *bb = json_array(it, "bbox");
        int ok = bb && cJSON_GetArraySize(bb) == 4;
        for (int k = 0; ok && k < 4; k++) {
            const cJSON *v = cJSON_GetArrayItem(bb, k);
            ok = cJSON_IsNumber(v) && isfinite(v->valuedouble);
            if (ok) b->bbox[k] = v->valuedouble;
        }
        if (!ok || b->bbox[2] < 0 || b->bbox[3] < 0)
            return yq_fail(err, YQ_ERR_FORMAT, "%s: annotation %lld: \"bbox\" must be [x, y, w, h] with w, h >= 0",
                           path, (long long)b->id);
        /* COCO's area is the segment's, not the box's: the size ranges use it.  Files
         * written by other tools sometimes omit it; the box area is the only stand-in. */
        if (!json_num(it, "area", &b->area)) b->area = b->bbox[2] * b->bbox[3];
        if (!isfinite(b->area))   /* (a missing area from a box of 1e308 x 100 overflows) */
            return yq_fail(err, YQ_ERR_FORMAT, "%s: annotation %lld: the box's area is not finite", path, (long long)b->id);
        if (cJSON_GetObjectItemCaseSensitive(it, "iscrowd") && (!json_int(it, "iscrowd", &crowd) || crowd < 0 || crowd > 1))
            return yq_fail(err, YQ_ERR_FORMAT, "%s: annotation %lld: \"iscrowd\" must be 0 or 1", path,
                           (long long)b->id);
        b->iscrowd = (int)crowd;
        ds->n_boxes = ++i;
    }
    return YQ_OK;
}

/* The images of the annotation file that are in the folder: the others are dropped with their
 * annotations (n_listed keeps the file's count); none there is an error. */
static yq_status keep_present(yq_dataset *ds, const char *json_path, yq_error *err)
{
    const int n = ds->n_images;
    int *map = malloc(sizeof *map * (size_t)(n ? n : 1));
    if (!map) return yq_fail(err, YQ_ERR_NOMEM, "%s: out of memory", json_path);
    int k = 0;
    for (int i = 0; i < n; i++) {
        char *p = yq_ds_path_join(ds->image_dir, ds->images[i].file);
        if (!p) { free(map); return yq_fail(err, YQ_ERR_NOMEM, "%s: out of memory", json_path); }
        struct stat sb;
        int ok = stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
        free(p);
        if (ok) {
            map[i] = k;
            ds->images[k++] = ds->images[i];
        } else {
            map[i] = -1;
            free(ds->images[i].file);
        }
    }
    ds->n_listed = n;
    ds->n_images = k;
    if (k == n) { free(map); return YQ_OK; }
    if (k == 0) {
        free(map);
        return yq_fail(err, YQ_ERR_IO, "%s: none of the %d images it lists is in %s", json_path, n, ds->image_dir);
    }
    int nb = 0;
    for (int b = 0; b < ds->n_boxes; b++)
        if (map[ds->boxes[b].image] >= 0) {
            ds->boxes[nb] = ds->boxes[b];
            ds->boxes[nb++].image = map[ds->boxes[b].image];
        }
    ds->n_boxes = nb;
    free(map);
    free(ds->by_id);
    ds->by_id = NULL;
    return build_index(ds, json_path, err);
}

yq_status yq_dataset_load_coco(const char *json_path, const char *image_dir, yq_dataset **out,
                               yq_error *err)
{
    cJSON *root;
    yq_status st = yq_ds_read_json(json_path, &root, err);
    if (st != YQ_OK) return st;
    yq_dataset *ds = calloc(1, sizeof *ds);
    if (!ds) { cJSON_Delete(root); return yq_fail(err, YQ_ERR_NOMEM, "%s: out of memory", json_path); }
    const cJSON *images = json_array(root, "images"), *cats = json_array(root, "categories");
    const cJSON *anns = cJSON_GetObjectItemCaseSensitive(root, "annotations");
    if (!images || !cats) {
        st = yq_fail(err, YQ_ERR_FORMAT, "%s: needs \"images\" and \"categories\" arrays", json_path);
        goto fail;
    }
    if (anns && !cJSON_IsArray(anns)) {
        st = yq_fail(err, YQ_ERR_FORMAT, "%s: \"annotations\" is not an array", json_path);
        goto fail;
    }
    if ((st = coco_images(ds, images, json_path, err)) != YQ_OK) goto fail;
    if ((st = build_index(ds, json_path, err)) != YQ_OK) goto fail;
    if ((st = coco_categories(ds, cats, json_path, err)) != YQ_OK) goto fail;
    /* a test-dev style file lists images without annotations */
    if (anns && (st = coco_annotations(ds, anns, json_path, err)) != YQ_OK) goto fail;
    if (image_dir) {
        if (!(ds->image_dir = strdup(image_dir))) {
            st = yq_fail(err, YQ_ERR_NOMEM, "%s: out of memory", json_path);
            goto fail;
        }
        if ((st = keep_present(ds, json_path, err)) != YQ_OK) goto fail;
    } else ds->n_listed = ds->n_images;
    cJSON_Delete(root);
    *out = ds;
    return YQ_OK;
fail:
    cJSON_Delete(root);
    yq_dataset_free(ds);
    return st;
}

/* ---- YOLO folders ---- */

/* label_dir for image_dir ".../images" is ".../labels". */
static char *default_label_dir(const char *image_dir)
{
    size_t n = strlen(image_dir);
    while (n > 1 && image_dir[n - 1] == '/') n--;
    if (n < 6 || strncmp(image_dir + n - 6, "images", 6) != 0 || (n > 6 && image_dir[n - 7] != '/'))
        return NULL;
    char *p = malloc(n + 1);
    if (!p) return NULL;
    memcpy(p, image_dir, n - 6);
    memcpy(p + n - 6, "labels", 7);
    return p;
}

/* The classes a YOLO label folder may hold: class k is the model's class k.  Up to 80 the
 * dataset's categories are COCO's ids through darknet's table (so that COCO-trained models
 * and COCO's labels in YOLO form score as COCO does), above that the classes themselves
 * (category k + 1), matched to a model's classes in order (yq_dataset_class_map). */
#define YOLO_MAX_CLASSES 100000

/* Parses one label file into ds->boxes for image index ii (size w x h). */
static yq_status yolo_labels(yq_dataset *ds, int *cap, int ii, const char *path, yq_error *err)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        if (errno == ENOENT) return YQ_OK;   /* an image without objects has no label file */
        return yq_fail(err, YQ_ERR_IO, "%s: %s", path, strerror(errno));
    }
    const double W = ds->images[ii].width, H = ds->images[ii].height;
    char *line = NULL;
    size_t lcap = 0;
    int ln = 0;
    yq_status st = YQ_OK;
    while (getline(&line, &lcap, f) != -1) {
        ln++;
        char *p = line, *e;
        while (isspace((unsigned char)*p)) p++;
        if (!*p) continue;
        errno = 0;
        long cls = strtol(p, &e, 10);
        int ok = e != p && isspace((unsigned char)*e) && errno == 0;
        double v[4];
        for (int k = 0; ok && k < 4; k++) {
            p = e;
            v[k] = strtod(p, &e);
            ok = e != p;
        }
        while (ok && isspace((unsigned char)*e)) e++;
        if (!ok || *e) {
            st = yq_fail(err, YQ_ERR_FORMAT, "%s:%d: expected \"class cx cy w h\"", path, ln);
            break;
        }
        if (cls < 0 || cls >= YOLO_MAX_CLASSES) {
            st = yq_fail(err, YQ_ERR_FORMAT, "%s:%d: class %ld out of range 0..%d", path, ln, cls, YOLO_MAX_CLASSES - 1);
            break;
        }
        for (int k = 0; k < 4 && st == YQ_OK; k++)
            if (!(v[k] >= 0 && v[k] <= 1))
                st = yq_fail(err, YQ_ERR_FORMAT, "%s:%d: coordinate %g outside [0,1]", path, ln, v[k]);
        if (st != YQ_OK) break;
        if (ds->n_boxes == *cap) {
            int nc = *cap ? 2 * *cap : 256;
            yq_gt_box *nb = realloc(ds->boxes, (size_t)nc * sizeof *nb);
            if (!nb) { st = yq_fail(err, YQ_ERR_NOMEM, "%s: out of memory", path); break; }
            ds->boxes = nb;
            *cap = nc;
        }
        yq_gt_box *b = &ds->boxes[ds->n_boxes];
        b->image = ii;
        b->id = ds->n_boxes + 1;
        b->cls = (int)cls;
        b->category_id = -1;             /* (yq_dataset_load_yolo, once every class is known) */
        b->bbox[0] = (v[0] - v[2] / 2) * W;
        b->bbox[1] = (v[1] - v[3] / 2) * H;
        b->bbox[2] = v[2] * W;
        b->bbox[3] = v[3] * H;
        b->area = b->bbox[2] * b->bbox[3];
        b->iscrowd = 0;
        ds->n_boxes++;
    }
    free(line);
    fclose(f);
    return st;
}

yq_status yq_dataset_load_yolo(const char *image_dir, const char *label_dir, yq_dataset **out,
                               yq_error *err)
{
    char *ldir = label_dir ? strdup(label_dir) : default_label_dir(image_dir);
    if (!ldir)
        return label_dir ? yq_fail(err, YQ_ERR_NOMEM, "out of memory")
                         : yq_fail(err, YQ_ERR_INVALID_ARG, "%s: does not end in \"images\"; give the label folder",
                                   image_dir);
    struct stat sb;
    if (stat(ldir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        yq_status st = yq_fail(err, YQ_ERR_IO, "%s: label folder missing", ldir);
        free(ldir);
        return st;
    }
    char **paths = NULL;
    int n = 0, cap = 0;
    yq_status st;
    yq_dataset *ds = calloc(1, sizeof *ds);
    if (!ds) { st = yq_fail(err, YQ_ERR_NOMEM, "out of memory"); goto done; }
    if ((st = yq_list_images(image_dir, &paths, &n, NULL, NULL, NULL, err)) != YQ_OK) goto done;   /* other files: silently */
    ds->images = calloc((size_t)n, sizeof *ds->images);
    ds->category_ids = malloc(sizeof coco_ids);
    ds->image_dir = strdup(image_dir);
    if (!ds->images || !ds->category_ids || !ds->image_dir) { st = yq_fail(err, YQ_ERR_NOMEM, "out of memory"); goto done; }
    memcpy(ds->category_ids, coco_ids, sizeof coco_ids);   /* already ascending */
    ds->n_categories = YQ_COCO_CLASSES;
    for (int i = 0; i < n; i++) {
        yq_ds_image *im = &ds->images[i];
        const char *name = strrchr(paths[i], '/') ? strrchr(paths[i], '/') + 1 : paths[i];
        if (!(im->file = strdup(name))) { st = yq_fail(err, YQ_ERR_NOMEM, "out of memory"); goto done; }
        ds->n_images = i + 1;
        im->id = i + 1;
        if ((st = yq_image_size(paths[i], &im->width, &im->height, err)) != YQ_OK) goto done;
        char stem[1024];
        snprintf(stem, sizeof stem, "%.*s.txt", (int)(strrchr(name, '.') - name), name);
        char *lpath = yq_ds_path_join(ldir, stem);
        if (!lpath) { st = yq_fail(err, YQ_ERR_NOMEM, "out of memory"); goto done; }
        st = yolo_labels(ds, &cap, i, lpath, err);
        free(lpath);
        if (st != YQ_OK) goto done;
    }
    /* COCO's file names are their image ids (000000000139.jpg -> 139): where every stem is a
     * distinct number, the ids are those, so that results can be scored with the official
     * annotations; else 1..n in name order */
    int numeric = n > 0;
    for (int i = 0; i < n && numeric; i++) {
        const char *f = ds->images[i].file, *dot = strrchr(f, '.');
        char *e;
        errno = 0;
        long long v = strtoll(f, &e, 10);
        numeric = e != f && e == dot && isdigit((unsigned char)*f) && !errno && v >= 0 && v <= (1LL << 53);
    }
    if (numeric) {
        for (int i = 0; i < n; i++) ds->images[i].id = strtoll(ds->images[i].file, NULL, 10);
        st = build_index(ds, image_dir, err);
        if (st != YQ_OK) {            /* two files of one number (1.jpg, 01.jpg): name order */
            for (int i = 0; i < n; i++) ds->images[i].id = i + 1;
            free(ds->by_id);
            ds->by_id = NULL;
            st = YQ_OK;
        }
    }
    if (st == YQ_OK && !ds->by_id) st = build_index(ds, image_dir, err);
    if (st == YQ_OK) ds->n_listed = ds->n_images;
    int top = -1;
    for (int i = 0; i < ds->n_boxes; i++) top = ds->boxes[i].cls > top ? ds->boxes[i].cls : top;
    if (st == YQ_OK && top >= YQ_COCO_CLASSES) {      /* over COCO's 80: the classes themselves */
        int *ids = realloc(ds->category_ids, sizeof *ids * (size_t)(top + 1));
        if (!ids) st = yq_fail(err, YQ_ERR_NOMEM, "out of memory");
        else {
            ds->category_ids = ids;
            for (int c = 0; c <= top; c++) ids[c] = c + 1;
            ds->n_categories = top + 1;
        }
    }
    for (int i = 0; st == YQ_OK && i < ds->n_boxes; i++)
        ds->boxes[i].category_id = top >= YQ_COCO_CLASSES ? ds->boxes[i].cls + 1 : coco_ids[ds->boxes[i].cls];
done:
    yq_list_images_free(paths, n);
    free(ldir);
    if (st != YQ_OK) {
        yq_dataset_free(ds);
        return st;
    }
    *out = ds;
    return YQ_OK;
}

yq_status yq_dataset_pick(yq_dataset *const *parts, const yq_ds_pick *pick, int n, yq_dataset **out, yq_error *err)
{
    int max_parts = 0, nb = 0, ncat = 0;
    for (int k = 0; k < n; k++) {
        if (pick[k].part < 0) return yq_fail(err, YQ_ERR_INVALID_ARG, "pick %d: bad part", k);
        if (pick[k].image < 0 || pick[k].image >= parts[pick[k].part]->n_images)
            return yq_fail(err, YQ_ERR_INVALID_ARG, "pick %d: image index out of range", k);
        if (pick[k].part + 1 > max_parts) max_parts = pick[k].part + 1;
    }
    for (int pi = 0; pi < max_parts; pi++) ncat += parts[pi]->n_categories;
    /* Boxes per picked image, found by scanning the part (boxes are in file order, not by image). */
    for (int k = 0; k < n; k++) {
        const yq_dataset *p = parts[pick[k].part];
        for (int b = 0; b < p->n_boxes; b++) nb += p->boxes[b].image == pick[k].image;
    }
    yq_dataset *ds = calloc(1, sizeof *ds);
    yq_status st = YQ_OK;
    if (ds) {
        ds->images = calloc((size_t)n + 1, sizeof *ds->images);
        ds->boxes = calloc((size_t)nb + 1, sizeof *ds->boxes);
        ds->category_ids = malloc(sizeof(int) * ((size_t)ncat + 1));
    }
    if (!ds || !ds->images || !ds->boxes || !ds->category_ids) st = yq_fail(err, YQ_ERR_NOMEM, "out of memory");
    for (int k = 0; k < n && st == YQ_OK; k++) {
        const yq_dataset *p = parts[pick[k].part];
        const yq_ds_image *src = &p->images[pick[k].image];
        char path[4096];
        if ((st = yq_dataset_image_path(p, pick[k].image, path, sizeof path, err)) != YQ_OK) break;
        ds->images[k] = (yq_ds_image){ strdup(path), k + 1, src->width, src->height };
        if (!ds->images[k].file) { st = yq_fail(err, YQ_ERR_NOMEM, "out of memory"); break; }
        ds->n_images = k + 1;
        for (int b = 0; b < p->n_boxes; b++)
            if (p->boxes[b].image == pick[k].image) {
                yq_gt_box gb = p->boxes[b];
                gb.image = k;
                gb.id = ds->n_boxes + 1;
                ds->boxes[ds->n_boxes++] = gb;
            }
    }
    if (st == YQ_OK) {
        int m = 0;
        for (int pi = 0; pi < max_parts; pi++)
            for (int c = 0; c < parts[pi]->n_categories; c++) ds->category_ids[m++] = parts[pi]->category_ids[c];
        qsort(ds->category_ids, (size_t)m, sizeof *ds->category_ids, cmp_int);
        int u = 0;
        for (int j = 0; j < m; j++)
            if (u == 0 || ds->category_ids[u - 1] != ds->category_ids[j]) ds->category_ids[u++] = ds->category_ids[j];
        ds->n_categories = u;
        st = build_index(ds, "picked dataset", err);
    }
    if (st != YQ_OK) { yq_dataset_free(ds); return st; }
    ds->n_listed = ds->n_images;
    *out = ds;
    return YQ_OK;
}
