// An embedding lookup: token ids [4, 8] look up rows of a table of 16
// words of 32 (a gather: the StableHLO form JAX emits for table[ids]),
// then a projection.  megatron.lua splits the table's 16 rows over
// "model": each device looks up the ids of its 8 rows, zero elsewhere,
// and one all_reduce adds the parts (vocabulary parallel); batch.lua
// splits the ids and exchanges nothing.
func @embedding(%ids: tensor<4x8xi32>, %table: tensor<16x32xf32>,
                %w: tensor<32x32xf32>) -> tensor<4x8x32xf32> {
  %x = gather(%table, %ids) {offset_dims = [2], collapsed_slice_dims = [0],
                             start_index_map = [0], index_vector_dim = 2,
                             slice_sizes = [1, 32]}
  %y = dot_general(%x, %w) {lhs_contract = [2], rhs_contract = [0]}
  return %y
}
