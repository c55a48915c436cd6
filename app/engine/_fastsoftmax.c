/*
 * A row-wise float32 softmax for the engine's large score arrays, with AVX2 and FMA.
 *
 * NumPy's float32 exp runs one ufunc pass per step (max, subtract, exp, sum, divide) and costs
 * about 2 ns an element on the benchmark machine; this kernel does the whole softmax of a row in
 * three passes over the row while it sits in the L1 cache, at under 1 ns an element, and
 * releases the GIL so the engine's threads can share the rows. docs/engine.md explains the
 * numbers; tests/test_fastsoftmax.py holds it to the NumPy path.
 *
 * Optional: the package builds without it (no compiler, another CPU architecture) and the engine
 * then uses NumPy for everything. At run time it is used only if the CPU has AVX2 and FMA.
 *
 * softmax_rows(buffer, cols) -> int
 *     buffer: a writable C-contiguous float32 buffer (a NumPy array) of rows * cols numbers.
 *     Overwrites each row x with softmax(x) = exp(x - max x) / sum exp(x - max x), in order,
 *     and returns the number of rows done. It stops before the first row holding a NaN or +inf
 *     and leaves that row as it was, so the caller can apply its own rule to it.
 *     -inf (a masked key) gets weight exactly 0; a row of only -inf becomes all 0.
 *
 * exp is Cephes' expf (S. L. Moshier): x = n ln 2 + r with |r| <= ln(2)/2, ln 2 split in two
 * parts so n ln 2 is exact, exp(r) by a degree-6 polynomial, 2^n put into the exponent bits.
 * Its error is within 2 ulp. Arguments are x - max x <= 0; below -87.3365 (where 2^n would
 * leave the normal range) the result is 0, an absolute error under 1.2e-38.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HAVE_AVX2_KERNEL 1
#include <immintrin.h>

#define KERNEL __attribute__((target("avx2,fma")))

KERNEL static inline __m256 exp_nonpositive(__m256 x)
{
    const __m256 lowest = _mm256_set1_ps(-87.33654475f);  /* ln(2^-126) */
    __m256 underflow = _mm256_cmp_ps(x, lowest, _CMP_LT_OQ);  /* also true for -inf */
    x = _mm256_max_ps(x, lowest);
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_fmadd_ps(_mm256_mul_ps(p, r), r, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    /* 2^n for integer n in [-126, 0]: the biased exponent n + 127 shifted into place. */
    __m256i bits = _mm256_slli_epi32(
        _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_andnot_ps(underflow, _mm256_mul_ps(p, _mm256_castsi256_ps(bits)));
}

/* A load mask for the last `left` (1..7) numbers of a row. */
KERNEL static inline __m256i tail_mask(Py_ssize_t left)
{
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)left), lanes);
}

KERNEL static inline float horizontal_sum(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

KERNEL static inline float horizontal_max(__m256 v)
{
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

/* Softmax of one row in place; returns 0, or 1 (row untouched) if it holds a NaN or +inf. */
KERNEL static int softmax_row(float *row, Py_ssize_t cols)
{
    const Py_ssize_t whole = cols & ~(Py_ssize_t)7;
    const Py_ssize_t left = cols - whole;
    const __m256i mask = tail_mask(left);
    const __m256 minus_inf = _mm256_set1_ps(-INFINITY);

    /* Pass 1: the maximum, and whether any entry is NaN (unordered with itself). */
    __m256 max8 = minus_inf, nan8 = _mm256_setzero_ps();
    for (Py_ssize_t j = 0; j < whole; j += 8) {
        __m256 v = _mm256_loadu_ps(row + j);
        max8 = _mm256_max_ps(max8, v);
        nan8 = _mm256_or_ps(nan8, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    }
    if (left) {
        __m256 v = _mm256_blendv_ps(minus_inf, _mm256_maskload_ps(row + whole, mask),
                                    _mm256_castsi256_ps(mask));
        max8 = _mm256_max_ps(max8, v);
        nan8 = _mm256_or_ps(nan8, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    }
    float max = horizontal_max(max8);
    if (_mm256_movemask_ps(nan8) || max == INFINITY)
        return 1;
    if (max == -INFINITY) {  /* every key masked (or no keys): weights 0, as in the NumPy path */
        memset(row, 0, (size_t)cols * sizeof(float));
        return 0;
    }

    /* Pass 2: e = exp(x - max), stored, and summed in four accumulators of eight lanes. */
    const __m256 shift = _mm256_set1_ps(max);
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    Py_ssize_t j = 0;
    for (; j + 32 <= whole; j += 32) {
        __m256 e0 = exp_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(row + j), shift));
        __m256 e1 = exp_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(row + j + 8), shift));
        __m256 e2 = exp_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(row + j + 16), shift));
        __m256 e3 = exp_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(row + j + 24), shift));
        _mm256_storeu_ps(row + j, e0);
        _mm256_storeu_ps(row + j + 8, e1);
        _mm256_storeu_ps(row + j + 16, e2);
        _mm256_storeu_ps(row + j + 24, e3);
        s0 = _mm256_add_ps(s0, e0);
        s1 = _mm256_add_ps(s1, e1);
        s2 = _mm256_add_ps(s2, e2);
        s3 = _mm256_add_ps(s3, e3);
    }
    for (; j < whole; j += 8) {
        __m256 e = exp_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(row + j), shift));
        _mm256_storeu_ps(row + j, e);
        s0 = _mm256_add_ps(s0, e);
    }
    if (left) {
        /* Lanes past the row's end are -inf, so their exp is 0 and adds nothing. */
        __m256 v = _mm256_blendv_ps(minus_inf, _mm256_maskload_ps(row + whole, mask),
                                    _mm256_castsi256_ps(mask));
        __m256 e = exp_nonpositive(_mm256_sub_ps(v, shift));
        _mm256_maskstore_ps(row + whole, mask, e);
        s1 = _mm256_add_ps(s1, e);
    }
    /* The max entry contributes exp(0) = 1, so the sum is at least 1. */
    float total = horizontal_sum(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));

    /* Pass 3: divide by the sum (a multiplication by its reciprocal). */
    const __m256 scale = _mm256_set1_ps(1.0f / total);
    for (Py_ssize_t k = 0; k < whole; k += 8)
        _mm256_storeu_ps(row + k, _mm256_mul_ps(_mm256_loadu_ps(row + k), scale));
    if (left)
        _mm256_maskstore_ps(row + whole, mask,
                            _mm256_mul_ps(_mm256_maskload_ps(row + whole, mask), scale));
    return 0;
}
#endif /* x86-64 with GCC or clang */

static int kernel_supported(void)
{
#ifdef HAVE_AVX2_KERNEL
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return 0;
#endif
}

static PyObject *supported(PyObject *module, PyObject *unused)
{
    return PyBool_FromLong(kernel_supported());
}

static PyObject *softmax_rows(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "softmax_rows(buffer, cols) takes 2 arguments");
        return NULL;
    }
    Py_ssize_t cols = PyLong_AsSsize_t(args[1]);
    if (cols == -1 && PyErr_Occurred())
        return NULL;
    if (cols < 1) {
        PyErr_SetString(PyExc_ValueError, "cols must be at least 1");
        return NULL;
    }
    if (!kernel_supported()) {
        PyErr_SetString(PyExc_RuntimeError, "this CPU lacks AVX2 and FMA: use the NumPy softmax");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return NULL;
    if (view.itemsize != 4 || view.format == NULL || strcmp(view.format, "f") != 0) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_TypeError, "softmax_rows needs a native float32 buffer");
        return NULL;
    }
    Py_ssize_t count = view.len / 4;
    if (count % cols != 0) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "the buffer's length is not a whole number of rows");
        return NULL;
    }
    Py_ssize_t rows = count / cols, done = 0;
#ifdef HAVE_AVX2_KERNEL
    float *data = (float *)view.buf;
    Py_BEGIN_ALLOW_THREADS
    for (; done < rows; done++) {
        if (softmax_row(data + done * cols, cols))
            break;
    }
    Py_END_ALLOW_THREADS
#endif
    PyBuffer_Release(&view);
    return PyLong_FromSsize_t(done);
}

static PyMethodDef methods[] = {
    {"supported", supported, METH_NOARGS, "Whether this CPU can run the kernel (AVX2 and FMA)."},
    {"softmax_rows", (PyCFunction)(void (*)(void))softmax_rows, METH_FASTCALL,
     "softmax_rows(buffer, cols) -> rows done; see the module's source for the contract."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_fastsoftmax",
    "A row-wise float32 softmax with AVX2 and FMA for the attention engine.", -1, methods,
};

PyMODINIT_FUNC PyInit__fastsoftmax(void)
{
    return PyModule_Create(&module);
}
