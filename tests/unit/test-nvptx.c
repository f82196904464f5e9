/* test-nvptx — the GPU launch plan's arithmetic, on the CPU
 * (codegen/nvptx_plan.c): what a GPU would compute, checked where no GPU
 * is.
 *
 *   - launch shapes: the grid and block sizes of elementwise kernels and
 *     reductions, values worked out by hand;
 *   - contractions as cuBLAS calls: each program's dot_general mapped to
 *     cublasGemmStridedBatchedEx calls (gpu_gemm_of, gpu_gemm_call), the
 *     calls then carried out by a column-major reference written from
 *     cuBLAS's documentation (C = alpha op(A) op(B) + beta C, op(X)(i,j)
 *     = X[i + j ld] or, transposed, X[j + i ld], batch b at b times each
 *     stride), and the result compared with the interpreter's on random
 *     f64 inputs: plain, batched, transposed operands, an outer product,
 *     a strided M (a head of [B, S, H, D]), and K split over dimensions
 *     that do not merge (outer calls that add to C);
 *   - what cuBLAS cannot do is refused with a reason (an integer
 *     contraction).
 */
#include "codegen/internal.h"

#include <math.h>

static void test_shapes(void) {
  g_assert_cmpint(gpu_map_grid(1), ==, 1);
  g_assert_cmpint(gpu_map_grid(256), ==, 1);
  g_assert_cmpint(gpu_map_grid(257), ==, 2);
  g_assert_cmpint(gpu_map_grid(4096), ==, 16);
  g_assert_cmpint(gpu_map_grid((int64_t)1 << 40), ==, 65535);
  g_assert_cmpint(gpu_reduce_block(0), ==, 32);
  g_assert_cmpint(gpu_reduce_block(1), ==, 32);
  g_assert_cmpint(gpu_reduce_block(32), ==, 32);
  g_assert_cmpint(gpu_reduce_block(33), ==, 64);
  g_assert_cmpint(gpu_reduce_block(200), ==, 256);
  g_assert_cmpint(gpu_reduce_block(100000), ==, 256);
  g_assert_cmpint(gpu_reduce_grid(16), ==, 16);
  g_assert_cmpint(gpu_reduce_grid(1000000), ==, 65535);
}

static void test_operand(void) {
  gboolean trans;
  int64_t ld;
  /* row-major 4 x 6: column-major 6 x 4, ld 6 */
  g_assert_true(gpu_operand(4, 6, 6, 1, &trans, &ld));
  g_assert_false(trans);
  g_assert_cmpint(ld, ==, 6);
  /* the transpose of a row-major 6 x 4: column-major 4 x 6, transposed */
  g_assert_true(gpu_operand(4, 6, 1, 4, &trans, &ld));
  g_assert_true(trans);
  g_assert_cmpint(ld, ==, 4);
  /* a row of a wider tensor: ld its row stride */
  g_assert_true(gpu_operand(8, 16, 64, 1, &trans, &ld));
  g_assert_cmpint(ld, ==, 64);
  /* no unit stride */
  g_assert_false(gpu_operand(4, 6, 12, 2, &trans, &ld));
}

/* cublasGemmStridedBatchedEx as documented, on doubles in column-major
 * order, for one call. */
static void reference_gemm(const GpuGemm *g, const double *a, const double *b,
                           double *c, gboolean beta_zero) {
  for (int64_t bi = 0; bi < g->batch; bi++)
    for (int64_t i = 0; i < g->m; i++)
      for (int64_t j = 0; j < g->n; j++) {
        double sum = 0;
        for (int64_t l = 0; l < g->k; l++) {
          double x = g->trans_a ? a[bi * g->stride_a + l + i * g->lda]
                                : a[bi * g->stride_a + i + l * g->lda];
          double y = g->trans_b ? b[bi * g->stride_b + j + l * g->ldb]
                                : b[bi * g->stride_b + l + j * g->ldb];
          sum += x * y;
        }
        double *at = &c[bi * g->stride_c + i + j * g->ldc];
        *at = beta_zero ? sum : *at + sum;
      }
}

/* The contraction returned by 'text' (two f64 arguments) through its
 * cuBLAS calls, against the interpreter. */
static void check_gemm(const char *text, int64_t calls) {
  g_autoptr(Diag) errors = diag_new(NULL);
  g_autoptr(Module) m = parse_text("test.pir", text, strlen(text), errors);
  g_assert_nonnull(m);
  const Func *f = module_entry(m);
  const Term *t = f->body->args[0];
  GpuGemm g;
  g_autoptr(Diag) why = diag_new(NULL);
  g_assert_true(gpu_gemm_of(t, 0, 1, 2, &g, why));
  g_assert_cmpint(gpu_gemm_calls(&g), ==, calls);
  Tensor *args[2] = {interp_random_input(f, 0, 7),
                     interp_random_input(f, 1, 8)};
  GError *error = NULL;
  g_autoptr(GPtrArray) want = interp_run(f, args, &error);
  g_assert_no_error(error);
  const Tensor *w = g_ptr_array_index(want, 0);
  Tensor *got = tensor_new(w->type);
  const double *buf[2] = {args[0]->data, args[1]->data};
  for (int64_t call = 0; call < gpu_gemm_calls(&g); call++) {
    int64_t oa, ob, oc;
    gboolean first = gpu_gemm_call(&g, call, &oa, &ob, &oc);
    /* A is slot 1 (the rhs), B slot 0 (the lhs), C slot 2 */
    g_assert_cmpint(g.a, ==, 1);
    g_assert_cmpint(g.b, ==, 0);
    reference_gemm(&g, buf[g.a] + oa, buf[g.b] + ob, (double *)got->data + oc,
                   first);
  }
  for (int64_t i = 0; i < type_numel(w->type); i++)
    g_assert_cmpfloat_with_epsilon(((double *)got->data)[i],
                                   ((double *)w->data)[i], 1e-9);
  tensor_unref(got);
  tensor_unref(args[0]);
  tensor_unref(args[1]);
}

static void test_gemm(void) {
  /* one product: m = N = 5, n = M = 3 */
  check_gemm("func @f(%a: tensor<3x4xf64>, %b: tensor<4x5xf64>) -> "
             "tensor<3x5xf64> {\n  %c = matmul(%a, %b)\n  return %c\n}\n",
             1);
  /* batched: one strided-batched call */
  check_gemm("func @f(%a: tensor<2x3x4xf64>, %b: tensor<2x4x5xf64>) -> "
             "tensor<2x3x5xf64> {\n  %c = dot_general(%a, %b) {lhs_batch = "
             "[0], rhs_batch = [0], lhs_contract = [2], rhs_contract = [1]}\n"
             "  return %c\n}\n",
             1);
  /* the lhs contracted along its dimension 0; the rhs along 1 */
  check_gemm("func @f(%a: tensor<4x3xf64>, %b: tensor<4x5xf64>) -> "
             "tensor<3x5xf64> {\n  %c = dot_general(%a, %b) {lhs_contract = "
             "[0], rhs_contract = [0]}\n  return %c\n}\n",
             1);
  check_gemm("func @f(%a: tensor<3x4xf64>, %b: tensor<5x4xf64>) -> "
             "tensor<3x5xf64> {\n  %c = dot_general(%a, %b) {lhs_contract = "
             "[1], rhs_contract = [1]}\n  return %c\n}\n",
             1);
  /* an outer product: K = 1 */
  check_gemm("func @f(%a: tensor<3xf64>, %b: tensor<5xf64>) -> "
             "tensor<3x5xf64> {\n  %c = dot_general(%a, %b)\n  return %c\n}\n",
             1);
  /* a head of [B, S, H, D] against [B, H, D, E]: batch B and H, M = S
   * strided by H D: the batch dims do not merge (B's stride is not H's
   * times H), so B is a loop of 2 calls around a batch of H */
  check_gemm("func @f(%a: tensor<2x3x4x5xf64>, %b: tensor<2x4x5x6xf64>) -> "
             "tensor<2x4x3x6xf64> {\n  %c = dot_general(%a, %b) {lhs_batch "
             "= [0, 2], rhs_batch = [0, 1], lhs_contract = [3], rhs_contract "
             "= [2]}\n  return %c\n}\n",
             2);
  /* heads contracted with their width, [S, H, D] x [H, D, E]: K = (H, D)
   * merges in both (row-major), one call; against [D, H, E] it does not
   * (H's rhs stride is not D's times D): a call per head, the first
   * writing C and the other three adding to it */
  check_gemm("func @f(%a: tensor<3x4x5xf64>, %b: tensor<4x5x6xf64>) -> "
             "tensor<3x6xf64> {\n  %c = dot_general(%a, %b) {lhs_contract "
             "= [1, 2], rhs_contract = [0, 1]}\n  return %c\n}\n",
             1);
  check_gemm("func @f(%a: tensor<3x4x5xf64>, %b: tensor<5x4x6xf64>) -> "
             "tensor<3x6xf64> {\n  %c = dot_general(%a, %b) {lhs_contract "
             "= [1, 2], rhs_contract = [1, 0]}\n  return %c\n}\n",
             4);
}

static void test_refused(void) {
  static const char text[] =
      "func @f(%a: tensor<3x4xi32>, %b: tensor<4x5xi32>) -> "
      "tensor<3x5xi32> {\n  %c = matmul(%a, %b)\n  return %c\n}\n";
  g_autoptr(Diag) errors = diag_new(NULL);
  g_autoptr(Module) m = parse_text("test.pir", text, strlen(text), errors);
  GpuGemm g;
  g_autoptr(Diag) why = diag_new(NULL);
  g_assert_false(gpu_gemm_of(module_entry(m)->body->args[0], 0, 1, 2, &g, why));
  g_assert_nonnull(strstr(diag_text(why), "cuBLAS"));
  const char *name = NULL;
  g_assert_cmpint(gpu_nccl_type(DT_BF16, &name), ==, 9);
  g_assert_cmpstr(name, ==, "ncclBfloat16");
  g_assert_cmpint(gpu_nccl_type(DT_I16, NULL), ==, -1);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/nvptx/shapes", test_shapes);
  g_test_add_func("/nvptx/operand", test_operand);
  g_test_add_func("/nvptx/gemm", test_gemm);
  g_test_add_func("/nvptx/refused", test_refused);
  return g_test_run();
}
