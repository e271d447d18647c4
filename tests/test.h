/* Tiny test harness shared by every tests/test_*.c program.
 *
 *   static void t_rounding(void) { CHECK(yq_requant(5, 0.5f, -127, 127) == 2); }
 *   int main(int argc, char **argv) {
 *       TEST(t_rounding);
 *       if (!have_gpu()) SKIP("t_gpu", "no CUDA device");
 *       return test_done();
 *   }
 *
 * Each test prints one line, "PASS name", "FAIL name: why" or "SKIP name: why";
 * tests/run.sh counts those lines over all programs and prints the closing
 * "N passed, N failed, N skipped".  A failed CHECK ends the current test only.
 */
#ifndef YQ_TEST_H
#define YQ_TEST_H

#include <dirent.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static jmp_buf test_jmp_;
static char test_msg_[512];
static int test_failed_, test_passed_, test_skipped_;

#define CHECK(cond) do { if (!(cond)) { \
    snprintf(test_msg_, sizeof test_msg_, "%s:%d: CHECK(%s)", __FILE__, __LINE__, #cond); \
    longjmp(test_jmp_, 1); } } while (0)

/* CHECKF: like CHECK with a printf-style explanation. */
#define CHECKF(cond, ...) do { if (!(cond)) { \
    int n_ = snprintf(test_msg_, sizeof test_msg_, "%s:%d: ", __FILE__, __LINE__); \
    snprintf(test_msg_ + n_, sizeof test_msg_ - (size_t)n_, __VA_ARGS__); \
    longjmp(test_jmp_, 1); } } while (0)

/* A test may decide it cannot run here (missing data, no GPU). */
#define TEST_SKIP(...) do { \
    snprintf(test_msg_, sizeof test_msg_, __VA_ARGS__); longjmp(test_jmp_, 2); } while (0)

static inline void test_run_(const char *name, void (*fn)(void))
{
    const char *only = getenv("YQ_TEST_ONLY");
    if (only && *only && !strstr(name, only)) return;
    test_msg_[0] = 0;
    int r = setjmp(test_jmp_);
    if (r == 0) {
        fn();
        printf("PASS %s\n", name);
        test_passed_++;
    } else if (r == 2) {
        printf("SKIP %s: %s\n", name, test_msg_);
        test_skipped_++;
    } else {
        printf("FAIL %s: %s\n", name, test_msg_);
        test_failed_++;
    }
    fflush(stdout);
}
#define TEST(fn) test_run_(#fn, fn)

static inline int test_done(void) { return test_failed_ ? 1 : 0; }

/* Files whose names end in .tmp in dir: temporaries a write left behind. */
static inline int test_count_tmp(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strlen(e->d_name) > 4 && !strcmp(e->d_name + strlen(e->d_name) - 4, ".tmp")) n++;
    if (d) closedir(d);
    return n;
}

/* A full disk, simulated: a child process whose files may grow to limit bytes only
 * (RLIMIT_FSIZE; writes past it fail, SIGXFSZ ignored).  0 in the child, which ends with
 * exit(0) when all is well; its pid in the parent, which calls TEST_CHILD_OK(pid). */
static inline pid_t test_fork_fsize(long limit)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = { (rlim_t)limit, (rlim_t)limit };
        setrlimit(RLIMIT_FSIZE, &rl);
    }
    return pid;
}
#define TEST_CHILD_OK(pid) do { \
    int ws_ = 0; \
    CHECK((pid) > 0 && waitpid((pid), &ws_, 0) == (pid)); \
    CHECKF(WIFEXITED(ws_) && WEXITSTATUS(ws_) == 0, "child: %s %d", WIFSIGNALED(ws_) ? "killed by signal" : "exit status", \
           WIFSIGNALED(ws_) ? WTERMSIG(ws_) : WEXITSTATUS(ws_)); } while (0)

/* YQ_DATA (default ../shared), where the models and datasets live. */
static inline const char *test_data_dir(void)
{
    const char *d = getenv("YQ_DATA");
    return d && *d ? d : "../shared";
}

#endif
