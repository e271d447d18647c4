/* libFuzzer harness: arbitrary bytes as a deploy package (.yqp, HDF5).
 *
 * Any input must give YQ_OK or an error with a one-line message, never a crash,
 * undefined behaviour or a leak, and must leave no HDF5 object open: a handle the
 * loader forgets keeps its file and metadata cache alive, which LeakSanitizer cannot
 * see (HDF5's id tables still point at them), so the open objects are counted before
 * and after each load.  A package that loads must be a well-formed int8 graph,
 * and must survive a round trip: written again (the writer loads its own file back)
 * and loaded again, it gives the same graph, weights and metadata.
 *
 * Random bytes stop at the HDF5 signature; the seeds (fuzz/corpus/package) are real
 * packages from make_seeds.  In a current package /checksums stops most changed values
 * before the loader's own checks; the version-1 seeds (no checksums) let them through.
 * libhdf5 is not instrumented: its own faults show up as a SEGV or an ASan report
 * inside it, not as coverage, and fuzz/lsan.supp lists the leaks that are its own.
 */
#include <hdf5.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz/fuzz.h"
#include "runtime/package.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *in_path, *out_path;

/* ---- open HDF5 objects -------------------------------------------------- */

/* Objects open in any file, by kind.  (HDF5 1.10 cannot count transient datatypes and
 * dataspaces from outside: H5Inmembers refuses the library's own id kinds.) */
static const struct { unsigned kind; const char *name; } id_kinds[] = {
    { H5F_OBJ_FILE, "files" }, { H5F_OBJ_GROUP, "groups" }, { H5F_OBJ_DATASET, "datasets" },
    { H5F_OBJ_DATATYPE, "named datatypes" }, { H5F_OBJ_ATTR, "attributes" },
};
#define N_KINDS (sizeof id_kinds / sizeof *id_kinds)

typedef struct h5_ids { ssize_t n[N_KINDS]; } h5_ids;

static h5_ids count_ids(void)
{
    h5_ids c;
    for (size_t k = 0; k < N_KINDS; k++)
        if ((c.n[k] = H5Fget_obj_count(H5F_OBJ_ALL, id_kinds[k].kind)) < 0) abort();
    return c;
}

static void check_ids(const h5_ids *before, const char *what)
{
    h5_ids after = count_ids();
    if (!memcmp(before, &after, sizeof after)) return;
    fprintf(stderr, "fuzz: %s left HDF5 objects open:", what);
    for (size_t k = 0; k < N_KINDS; k++)
        if (after.n[k] != before->n[k]) fprintf(stderr, " %s %zd -> %zd", id_kinds[k].name, before->n[k], after.n[k]);
    fprintf(stderr, "\n");
    abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_dir_init("package");
    in_path = fuzz_path("in.yqp");
    out_path = fuzz_path("out.yqp");
    /* No free lists: HDF5 then mallocs every block afresh, so a leak report shows the
     * stack that really allocated it (not that of the first user of a recycled block),
     * and an input's mallocs and frees balance, which spares most leak checks. */
    if (H5open() < 0 || H5set_free_list_limits(0, 0, 0, 0, 0, 0) < 0) abort();
    return 0;
}

/* ---- what a loaded package must be -------------------------------------- */

static void check_graph(const yq_graph *g, const yq_package_info *info)
{
    if (!g || !g->q || g->n_nodes < 1 || !info) abort();
    if (!info->qconfig_text || !info->accuracy_json || !info->calib_method) abort();
    if (info->n_kernels < 0 || (info->n_kernels > 0) != (info->kernels != NULL)) abort();
    if (g->n_class_names < 0 || (g->n_class_names > 0) != (g->class_names != NULL)) abort();
    for (int i = 0; i < g->n_nodes; i++) {
        const yq_node *n = &g->nodes[i];
        const yq_qnode *q = &g->q[i];
        if ((i == 0) != (n->op == YQ_OP_INPUT) || n->op < 0 || n->op >= YQ_OP_COUNT) abort();
        if (n->out.c < 1 || n->out.h < 1 || n->out.w < 1 || !memchr(n->name, 0, sizeof n->name)) abort();
        for (int k = 0; k < n->n_src; k++)
            if (n->src[k] < 0 || n->src[k] >= i) abort();
        if (q->qmin >= q->qmax || !(q->scale > 0) || !(q->thresh > 0)) abort();
        if (n->op != YQ_OP_CONV) continue;
        if (n->n_w < 1 || n->p.conv.filters < 1) abort();
        if (q->float_op ? !n->w || !n->b : !q->wq || !q->bq || !q->w_scale || !q->rq_pos || !q->rq_neg || !q->deq) abort();
    }
}

static void same(int equal, const char *what)
{
    if (equal) return;
    fprintf(stderr, "fuzz: a package written again from a loaded one differs in %s\n", what);
    abort();
}

static int same_str(const char *a, const char *b) { return a == b || (a && b && !strcmp(a, b)); }

static void compare(const yq_graph *g, const yq_package_info *a, const yq_graph *h, const yq_package_info *b)
{
    same(g->n_nodes == h->n_nodes && g->letter_box == h->letter_box, "node count or letter_box");
    same(!memcmp(g->model_sha256, h->model_sha256, 32) && !strcmp(g->cfg_path, h->cfg_path) &&
         !strcmp(g->weights_path, h->weights_path), "provenance");
    same(g->n_class_names == h->n_class_names, "class count");
    for (int k = 0; k < g->n_class_names; k++) same(!strcmp(g->class_names[k], h->class_names[k]), "class names");
    for (int i = 0; i < g->n_nodes; i++) {
        const yq_node *m = &g->nodes[i], *n = &h->nodes[i];
        const yq_qnode *p = &g->q[i], *q = &h->q[i];
        same(m->op == n->op && m->act == n->act && m->layer == n->layer && m->line == n->line &&
             !strcmp(m->name, n->name) && m->n_src == n->n_src && !memcmp(m->src, n->src, sizeof m->src) &&
             !memcmp(&m->out, &n->out, sizeof m->out) && !memcmp(&m->p, &n->p, sizeof m->p) && m->n_w == n->n_w,
             "a node");
        same(p->dtype == q->dtype && p->float_op == q->float_op && p->scale == q->scale && p->thresh == q->thresh &&
             p->qmin == q->qmin && p->qmax == q->qmax && !memcmp(&p->sa, &q->sa, sizeof p->sa) &&
             !memcmp(&p->sb, &q->sb, sizeof p->sb) && !memcmp(&p->sneg, &q->sneg, sizeof p->sneg), "a node's int8 parameters");
        if (m->op != YQ_OP_CONV) continue;
        size_t F = (size_t)m->p.conv.filters, nw = (size_t)m->n_w;
        if (p->float_op) {
            same(!memcmp(m->w, n->w, nw * sizeof *m->w) && !memcmp(m->b, n->b, F * sizeof *m->b), "float weights");
        } else {
            same(!memcmp(p->wq, q->wq, nw) && !memcmp(p->bq, q->bq, F * sizeof *p->bq) &&
                 !memcmp(p->w_scale, q->w_scale, F * sizeof *p->w_scale) && !memcmp(p->deq, q->deq, F * sizeof *p->deq) &&
                 !memcmp(p->rq_pos, q->rq_pos, F * sizeof *p->rq_pos) && !memcmp(p->rq_neg, q->rq_neg, F * sizeof *p->rq_neg),
                 "int8 weights or requantize tables");
        }
    }
    /* (format_version is the writer's: an older package comes back in the current one) */
    same(!strcmp(a->model_sha256, b->model_sha256) &&
         !strcmp(a->calib_images_sha256, b->calib_images_sha256) && !strcmp(a->cfg_path, b->cfg_path) &&
         !strcmp(a->weights_path, b->weights_path), "root attributes");
    same(same_str(a->qconfig_text, b->qconfig_text) && same_str(a->accuracy_json, b->accuracy_json) &&
         same_str(a->calib_method, b->calib_method) && same_str(a->tuning_json, b->tuning_json) &&
         same_str(a->request_text, b->request_text) && same_str(a->plan_json, b->plan_json), "text");
    same(a->letterbox == b->letterbox && a->calib_images == b->calib_images && a->input_c == b->input_c &&
         a->input_h == b->input_h && a->input_w == b->input_w, "integer attributes");
    same(a->n_kernels == b->n_kernels, "kernel count");
    for (int k = 0; k < a->n_kernels; k++) {
        const yq_tuned_kernel *x = &a->kernels[k], *y = &b->kernels[k];
        same(x->node == y->node && x->batch == y->batch && x->sm == y->sm && !strcmp(x->cfg, y->cfg) &&
             x->us == y->us && x->default_us == y->default_us, "kernel choices");
    }
}

/* Writes g with info as its metadata, loads it back and compares. */
static void round_trip(const yq_graph *g, const yq_package_info *info)
{
    yq_package_meta m;
    yq_package_meta_from_info(info, &m);
    yq_error err = { 0 };
    h5_ids ids = count_ids();
    /* onto the previous input's package: the writer must replace it without reading it */
    yq_status st = yq_package_write(out_path, g, &m, &err);
    if (st != YQ_OK) {
        fprintf(stderr, "fuzz: a loaded package cannot be written again: %s\n", err.msg);
        abort();
    }
    check_ids(&ids, "yq_package_write");
    yq_graph *h = NULL;
    yq_package_info *info2 = NULL;
    st = yq_package_load(out_path, &h, &info2, &err);
    if (st != YQ_OK) {
        fprintf(stderr, "fuzz: a package written from a loaded one does not load: %s\n", err.msg);
        abort();
    }
    check_ids(&ids, "yq_package_load of the written package");
    compare(g, info, h, info2);
    yq_package_info_free(info2);
    yq_graph_free(h);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_write(in_path, data, size);
    yq_graph *g = NULL;
    yq_package_info *info = NULL;
    yq_error err = { 0 };
    h5_ids ids = count_ids();
    yq_status st = yq_package_load(in_path, &g, &info, &err);
    fuzz_check_error(st, &err);
    check_ids(&ids, "yq_package_load");
    if (st != YQ_OK) {
        if (g || info) abort();
        return 0;
    }
    check_graph(g, info);
    round_trip(g, info);
    yq_package_info_free(info);
    yq_graph_free(g);
    return 0;
}
