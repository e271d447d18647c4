// The test peer for yquant's image decoders (datasets/image_jpeg.c, image_png.c): OpenCV's
// imdecode behind a C function (opencv_decode.h), as yquant decoded images until libjpeg and
// libpng were called directly.  Only tests/test_harden.c links it.
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <new>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "tests/peer/opencv_decode.h"

static yq_status cv_fail(yq_error *err, yq_status code, const char *name, const char *what)
{
    if (err) {
        std::snprintf(err->msg, sizeof err->msg, "%s: %s", name, what);
        err->code = code;
    }
    return code;
}

extern "C" yq_status peer_opencv_decode(const unsigned char *buf, size_t n, const char *name,
                                        int want_w, int want_h, yq_image *out, yq_error *err)
{
    if (n == 0 || n > (size_t)INT_MAX)
        return cv_fail(err, YQ_ERR_FORMAT, name, "encoded size out of range");
    float *data = nullptr;
    try {
        const cv::Mat raw(1, (int)n, CV_8UC1, const_cast<unsigned char *>(buf));
        // IGNORE_ORIENTATION: COCO boxes and the header size refer to the stored pixels.
        const cv::Mat m = cv::imdecode(raw, cv::IMREAD_COLOR | cv::IMREAD_IGNORE_ORIENTATION);
        if (m.empty())
            return cv_fail(err, YQ_ERR_FORMAT, name, "cannot be decoded (corrupt image data)");
        if (m.type() != CV_8UC3)
            return cv_fail(err, YQ_ERR_FORMAT, name, "decoder returned an unexpected pixel type");
        if (m.cols != want_w || m.rows != want_h) {
            char why[160];
            std::snprintf(why, sizeof why, "decoded size %dx%d differs from header size %dx%d",
                          m.cols, m.rows, want_w, want_h);
            return cv_fail(err, YQ_ERR_FORMAT, name, why);
        }
        const size_t w = (size_t)m.cols, h = (size_t)m.rows, plane = w * h;
        data = (float *)std::malloc(3 * plane * sizeof *data);
        if (!data) return cv_fail(err, YQ_ERR_NOMEM, name, "out of memory for the decoded image");
        for (size_t y = 0; y < h; y++) {
            const unsigned char *p = m.ptr<unsigned char>((int)y);
            for (size_t x = 0; x < w; x++) {
                // BGR -> RGB planes; x/255.f equals darknet's (float)(x/255.) for all 256 values.
                data[0 * plane + y * w + x] = p[3 * x + 2] / 255.f;
                data[1 * plane + y * w + x] = p[3 * x + 1] / 255.f;
                data[2 * plane + y * w + x] = p[3 * x + 0] / 255.f;
            }
        }
        out->w = (int)w;
        out->h = (int)h;
        out->c = 3;
        out->data = data;
        return YQ_OK;
    } catch (const cv::Exception &e) {
        std::free(data);
        return cv_fail(err, YQ_ERR_FORMAT, name, e.err.c_str());
    } catch (const std::bad_alloc &) {
        std::free(data);
        return cv_fail(err, YQ_ERR_NOMEM, name, "out of memory while decoding");
    } catch (...) {
        std::free(data);
        return cv_fail(err, YQ_ERR_FORMAT, name, "decoder failed");
    }
}
