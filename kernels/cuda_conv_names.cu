/* The names of the conv configurations (yq_conv_cfg_name, yq_conv_cfg_parse: what the
 * tuning logs, packages and --kernel flags say), apart from the kernels and their dispatch
 * (kernels/cuda_conv.cu) so that the names have one home: each family's tiles come from
 * its own table (kernels/cuda_conv.cuh), the K splits from yq_split_opts. */
#include <stdio.h>
#include <string.h>
#include "kernels/cuda_conv.cuh"

const int yq_split_opts[YQ_SPLIT_OPTS] = { 1, 2, 3, 4, 6, 8, 12, 16 };
static const char *const dp4a_names[YQ_DP4A_TILES] = { "64x64", "128x128", "32x32ks", "px", "const" };
static const char *const f32_names[YQ_F32_TILES] = { "f32", "f32_128", "f32_px", "f32_dw" };

extern "C" void yq_conv_cfg_name(yq_conv_cfg g, char *buf, size_t cap)
{
    int n = 0;
    switch ((yq_conv_variant)g.family) {
    case YQ_CONV_AUTO: n = snprintf(buf, cap, "auto"); break;
    case YQ_CONV_F32: n = snprintf(buf, cap, "%s", g.tile < YQ_F32_TILES ? f32_names[g.tile] : "f32_?"); break;
    case YQ_CONV_F16: n = snprintf(buf, cap, "f16"); break;
    case YQ_CONV_DIRECT: n = snprintf(buf, cap, "direct"); break;
    case YQ_CONV_DW:
        n = snprintf(buf, cap, g.tile == 0 ? "dw" : g.tile == 1 ? "dw_dp4a" : g.tile == 2 ? "dw_tile" : g.tile == 3 ? "dw_col" : "dw_?");
        break;
    case YQ_CONV_DP4A: n = snprintf(buf, cap, "dp4a_%s", g.tile < YQ_DP4A_TILES ? dp4a_names[g.tile] : "?"); break;
    case YQ_CONV_CUTLASS:
    case YQ_CONV_WGMMA:
    case YQ_CONV_MMA: {
        bool cut = g.family == YQ_CONV_CUTLASS, wg = g.family == YQ_CONV_WGMMA;
        const int nt = cut ? YQ_CUT_TILES : wg ? YQ_WG_TILES : YQ_MMA_TILES;
        const yq_mma_tile *t = g.tile < nt ? &(cut ? yq_cut_tiles : wg ? yq_wg_tiles : yq_mma_tiles)[g.tile] : NULL;
        const char *fam = cut ? "cutlass" : wg ? "wgmma" : "mma";
        n = t ? snprintf(buf, cap, "%s_%dx%dx%d_s%d", fam, t->bm, t->bn, t->bk, t->stages) : snprintf(buf, cap, "%s_?", fam);
        break;
    }
    case YQ_CONV_WGH: {
        const yq_wgh_tile *t = g.tile < YQ_WGH_TILES ? &yq_wgh_tiles[g.tile] : NULL;
        n = t ? snprintf(buf, cap, t->minb > 1 ? "wgh_%dx128x128_s%d_b%d" : "wgh_%dx128x128_s%d", t->bm, t->stages, t->minb)
              : snprintf(buf, cap, "wgh_?");
        break;
    }
    case YQ_CONV_WG1: {
        const yq_wg1_tile *t = g.tile < YQ_WG1_TILES ? &yq_wg1_tiles[g.tile] : NULL;
        n = t ? snprintf(buf, cap, "wg1_128x%dx%d_s%d", t->bn, t->bk, t->stages) : snprintf(buf, cap, "wg1_?");
        break;
    }
    case YQ_CONV_HALO: {
        const yq_halo_tile *t = g.tile < YQ_HALO_TILES ? &yq_halo_tiles[g.tile] : NULL;
        n = t ? snprintf(buf, cap, "halo_%dx%dx%d", t->th, t->tw, t->bn) : snprintf(buf, cap, "halo_?");
        break;
    }
    case YQ_CONV_IMG: n = snprintf(buf, cap, g.tile == 0 ? "img_mma" : "img_?"); break;
    default: n = snprintf(buf, cap, "?"); break;
    }
    if (g.split_k > 1 && n >= 0 && (size_t)n < cap) snprintf(buf + n, cap - (size_t)n, "_k%d", g.split_k);
}

extern "C" int yq_conv_cfg_parse(const char *name, yq_conv_cfg *out)
{
    /* Every name a build can produce is enumerated and compared: no second grammar. */
    char buf[64];
    for (int fam = YQ_CONV_AUTO; fam <= YQ_CONV_LAST; fam++)
        for (int t = 0; t < (fam == YQ_CONV_MMA ? YQ_MMA_TILES : fam == YQ_CONV_CUTLASS ? YQ_CUT_TILES
                             : fam == YQ_CONV_WGMMA ? YQ_WG_TILES : fam == YQ_CONV_WGH ? YQ_WGH_TILES
                             : fam == YQ_CONV_WG1 ? YQ_WG1_TILES
                             : fam == YQ_CONV_HALO ? YQ_HALO_TILES : fam == YQ_CONV_DP4A ? YQ_DP4A_TILES
                             : fam == YQ_CONV_DW ? YQ_DW_TILES : fam == YQ_CONV_F32 ? YQ_F32_TILES : 1); t++)
            for (unsigned k = 0; k < YQ_SPLIT_OPTS; k++) {
                yq_conv_cfg g = { (uint8_t)fam, (uint8_t)t, (uint8_t)yq_split_opts[k], 0 };
                yq_conv_cfg_name(g, buf, sizeof buf);
                if (!strcmp(buf, name)) { *out = g; return 0; }
            }
    return -1;
}
